// Static checks of a device program against a target: every rule of TRAINIUM.md §3 that does
// not depend on run-time order (partition alignment, access-pattern limits, PSUM bank limits,
// which engine may touch which memory and run which opcode, bounds, semaphore indices, operand
// shapes). Run by the simulator before executing and by the artifact verifier on load, so the
// code behind it can trust its input. Pure function; thread-safe.
#pragma once

#include "device/isa.h"
#include "device/status.h"
#include "device/target.h"

namespace neuronc::device {

// Byte footprint of a MemRef: [min, max) byte offsets relative to the start of a partition
// (SBUF/PSUM) or of the HBM arena, over all partitions and access-pattern elements.
struct ByteRange {
  int64_t begin = 0;
  int64_t end = 0;
};
ByteRange footprint(const MemRef& m);

// The bytes a MemRef touches on one core: partitions [p0, p1) times the byte range [b0, b1)
// within a partition; HBM, shared by every core, is one row [0, 1) of core 0. Two accesses
// conflict when their rects overlap. The one footprint geometry of the race checker, codegen's
// emitter and scheduler, and store-to-load forwarding.
struct ByteRect {
  MemoryKind memory = MemoryKind::sbuf;
  uint16_t core = 0;
  uint16_t p0 = 0, p1 = 1;
  int64_t b0 = 0, b1 = 0;
};
ByteRect byte_rect(const MemRef& m, uint16_t core = 0);
inline bool overlaps(const ByteRect& a, const ByteRect& b) {
  return a.memory == b.memory && a.core == b.core && a.p0 < b.p1 && b.p0 < a.p1 && a.b0 < b.b1 &&
         b.b0 < a.b1;
}
inline bool covers(const ByteRect& outer, const ByteRect& inner) {
  return outer.memory == inner.memory && outer.core == inner.core && outer.p0 <= inner.p0 &&
         inner.p1 <= outer.p1 && outer.b0 <= inner.b0 && inner.b1 <= outer.b1;
}

Status verify_memref(const Target& target, const MemRef& m, bool compute_operand,
                     uint64_t hbm_size);

// Whether a compute engine may address `count` partitions from `start` (ARCH2 §3.2: 65-128
// partitions start at 0, 33-64 at 0 or 64, 1-32 at a multiple of 32). DMAs may address any.
bool engine_partitions_allowed(int start, int count);

// Checks one instruction placed on engine `engine` of core `core`.
Status verify_instruction(const Target& target, const Program& program, int core, Engine engine,
                          const Instruction& inst);

// Checks a whole program; the error names core, engine, index and opcode.
Status verify_program(const Target& target, const Program& program);

// Checks core 0 of `program` as core 0 of the `cores`-core program replicate_cores (replicate.h)
// makes with `core_stride`, which every copy passes exactly when it does: the replication passes
// check_replication, each instruction passes verify_instruction in a program of `cores` cores
// and `core_stride` bytes of HBM (so its HBM operands stay in [0, core_stride)), and signals no
// core but its own. program.hbm_size and any further cores are not looked at.
Status verify_replicated_program(const Target& target, const Program& program, uint32_t cores,
                                 uint64_t core_stride);

}  // namespace neuronc::device
