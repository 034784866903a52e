// Core replication (replicate.h). Every HBM operand is found through the ISA's operand schema
// (device::for_each_operand, a std::visit over device::Operation whose every alternative must
// have a schema() overload), so an instruction kind added later cannot be copied with an
// unmoved HBM address: it does not compile until its operands are described.
#include "codegen/replicate.h"

#include <limits>
#include <string>

#include "codegen/codegen.h"
#include "device/verifier.h"

namespace neuronc::codegen {
namespace {

using std::to_string;

// The instruction at `index` of `engine`'s stream, for messages.
std::string describe(int engine, size_t index, const device::Instruction& in) {
  return std::string(device::engine_name(static_cast<device::Engine>(engine))) + "[" +
         to_string(index) + "] (" + std::string(device::opcode_name(in.opcode())) + ")";
}

// Checks that every HBM byte `in` may touch lies in [0, core_stride) and that it signals no
// core but its own.
void check_replicable(int engine, size_t index, const device::Instruction& in,
                      uint64_t core_stride) {
  const device::Operands o = device::operands(in.op);  // an indirect DMA: its whole table
  for (const auto* side : {&o.reads, &o.writes})
    for (const device::MemRef& m : *side) {
      if (m.memory != device::MemoryKind::hbm) continue;
      const device::ByteRange r = device::footprint(m);
      if (r.begin < 0 || static_cast<uint64_t>(r.end) > core_stride)
        throw Error("replicate_cores: " + describe(engine, index, in) + " touches hbm bytes [" +
                    to_string(r.begin) + ", " + to_string(r.end) + ") outside the core stride of " +
                    to_string(core_stride) + " bytes");
    }
  for (const device::SemaphoreSignal& s : in.signals)
    if (s.core != device::kThisCore && s.core != 0)
      throw Error("replicate_cores: " + describe(engine, index, in) + " signals core " +
                  to_string(s.core) + " of a one-core program");
}

}  // namespace

device::Program replicate_cores(const device::Program& one_core, uint32_t cores,
                                uint64_t core_stride) {
  if (one_core.cores.size() != 1)
    throw Error("replicate_cores: expected a one-core program, found " +
                to_string(one_core.cores.size()) + " cores");
  if (cores == 0 || cores > device::kThisCore)
    throw Error("replicate_cores: expected 1 to " + to_string(device::kThisCore) +
                " cores, found " + to_string(cores));
  if (core_stride % 64 != 0)
    throw Error("replicate_cores: core stride " + to_string(core_stride) +
                " is not a multiple of 64 bytes");
  if (one_core.hbm_size > core_stride)
    throw Error("replicate_cores: the program's arena of " + to_string(one_core.hbm_size) +
                " bytes is larger than the core stride of " + to_string(core_stride));
  if (core_stride > std::numeric_limits<uint64_t>::max() / cores)
    throw Error("replicate_cores: " + to_string(cores) + " cores of " + to_string(core_stride) +
                " bytes overflow the arena size");

  const device::CoreProgram& base = one_core.cores[0];
  for (int e = 0; e < device::kNumEngines; ++e) {
    const auto& stream = base.streams[static_cast<size_t>(e)];
    for (size_t i = 0; i < stream.size(); ++i) check_replicable(e, i, stream[i], core_stride);
  }

  device::Program out;
  out.num_semaphores = one_core.num_semaphores;
  out.hbm_size = core_stride * cores;
  out.cores.resize(cores);
  for (uint32_t r = 0; r < cores; ++r) {
    const uint64_t shift = core_stride * r;
    device::CoreProgram& core = out.cores[r];
    core = base;
    for (auto& stream : core.streams)
      for (device::Instruction& in : stream) {
        device::for_each_operand(in.op, [&](device::MemRef& m, device::Access) {
          if (m.memory == device::MemoryKind::hbm) m.offset += shift;
        });
        // Core 0 of the one-core program is this copy's own core.
        for (device::SemaphoreSignal& s : in.signals)
          if (s.core != device::kThisCore) s.core = static_cast<uint16_t>(r);
      }
  }
  return out;
}

}  // namespace neuronc::codegen
