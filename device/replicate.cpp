// Core replication (replicate.h). Every HBM operand is found through the ISA's operand schema
// (device::for_each_operand, a std::visit over device::Operation whose every alternative must
// have a schema() overload), so an instruction kind added later cannot be copied with an
// unmoved HBM address: it does not compile until its operands are described.
#include "device/replicate.h"

#include <limits>
#include <string>

#include "device/verifier.h"

namespace neuronc::device {
namespace {

using std::to_string;

// The instruction at `index` of `engine`'s stream, for messages.
std::string describe(int engine, size_t index, const Instruction& in) {
  return std::string(engine_name(static_cast<Engine>(engine))) + "[" + to_string(index) + "] (" +
         std::string(opcode_name(in.opcode())) + ")";
}

// Checks that every HBM byte `in` may touch lies in [0, core_stride) and that it signals no
// core but its own.
Status check_replicable(int engine, size_t index, const Instruction& in, uint64_t core_stride) {
  const Operands o = operands(in.op);  // an indirect DMA: its whole table
  for (const auto* side : {&o.reads, &o.writes})
    for (const MemRef& m : *side) {
      if (m.memory != MemoryKind::hbm) continue;
      const ByteRange r = footprint(m);
      if (r.begin < 0 || static_cast<uint64_t>(r.end) > core_stride)
        return invalid_argument("replicate_cores: " + describe(engine, index, in) +
                                " touches hbm bytes [" + to_string(r.begin) + ", " +
                                to_string(r.end) + ") outside the core stride of " +
                                to_string(core_stride) + " bytes");
    }
  for (const SemaphoreSignal& s : in.signals)
    if (!signals_its_own_core(s))
      return invalid_argument("replicate_cores: " + describe(engine, index, in) + " signals core " +
                              to_string(s.core) + " of a one-core program");
  return Status::ok();
}

// Copy r of `in`'s operation and of one of its signals.
void move_hbm(Operation& op, uint64_t shift) {
  for_each_operand(op, [&](MemRef& m, Access) {
    if (m.memory == MemoryKind::hbm) m.offset += shift;
  });
}
SemaphoreSignal moved(SemaphoreSignal s, uint32_t r) {
  if (s.core != kThisCore) s.core = static_cast<uint16_t>(r);
  return s;
}

CoreProgram core_replica(const CoreProgram& base, uint32_t r, uint64_t core_stride) {
  CoreProgram core = base;
  for (auto& stream : core.streams)
    for (Instruction& in : stream) {
      move_hbm(in.op, core_stride * r);
      for (SemaphoreSignal& s : in.signals) s = moved(s, r);
    }
  return core;
}

}  // namespace

Status check_replication(uint32_t cores, uint64_t core_stride) {
  if (cores == 0 || cores > kThisCore)
    return invalid_argument("replication over " + to_string(cores) + " cores: expected 1 to " +
                            to_string(kThisCore));
  if (core_stride == 0 || core_stride % 64 != 0)
    return invalid_argument("core stride " + to_string(core_stride) +
                            " bytes: expected a non-zero multiple of 64");
  if (core_stride > std::numeric_limits<uint64_t>::max() / cores)
    return invalid_argument(to_string(cores) + " cores of " + to_string(core_stride) +
                            " bytes overflow the arena size");
  return Status::ok();
}

bool signals_its_own_core(const SemaphoreSignal& s) {
  return s.core == kThisCore || s.core == 0;
}

bool is_core_replica(const CoreProgram& base, const CoreProgram& core, uint32_t r,
                     uint64_t core_stride) {
  const uint64_t shift = core_stride * r;
  for (int e = 0; e < kNumEngines; ++e) {
    const auto& want = base.streams[e];
    const auto& got = core.streams[e];
    if (want.size() != got.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      const Instruction& a = want[i];
      const Instruction& b = got[i];
      if (a.waits != b.waits || a.debug_id != b.debug_id || a.signals.size() != b.signals.size())
        return false;
      for (size_t s = 0; s < a.signals.size(); ++s)
        if (!(moved(a.signals[s], r) == b.signals[s])) return false;
      Operation op = a.op;
      move_hbm(op, shift);
      if (!(op == b.op)) return false;
    }
  }
  return true;
}

Result<Program> replicate_cores(const Program& one_core, uint32_t cores, uint64_t core_stride) {
  if (one_core.cores.size() != 1)
    return invalid_argument("replicate_cores: expected a one-core program, found " +
                            to_string(one_core.cores.size()) + " cores");
  NEURONC_DEVICE_RETURN_IF_ERROR(
      check_replication(cores, core_stride).with_context("replicate_cores"));
  if (one_core.hbm_size > core_stride)
    return invalid_argument("replicate_cores: the program's arena of " +
                            to_string(one_core.hbm_size) +
                            " bytes is larger than the core stride of " + to_string(core_stride));
  const CoreProgram& base = one_core.cores[0];
  for (int e = 0; e < kNumEngines; ++e) {
    const auto& stream = base.streams[static_cast<size_t>(e)];
    for (size_t i = 0; i < stream.size(); ++i)
      NEURONC_DEVICE_RETURN_IF_ERROR(check_replicable(e, i, stream[i], core_stride));
  }
  return replicate_unchecked(one_core, cores, core_stride);
}

Program replicate_unchecked(const Program& one_core, uint32_t cores, uint64_t core_stride) {
  Program out;
  out.num_semaphores = one_core.num_semaphores;
  out.hbm_size = core_stride * cores;
  out.cores.reserve(cores);
  for (uint32_t r = 0; r < cores; ++r)
    out.cores.push_back(core_replica(one_core.cores[0], r, core_stride));
  return out;
}

}  // namespace neuronc::device
