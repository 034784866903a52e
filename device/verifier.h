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

Status verify_memref(const Target& target, const MemRef& m, bool compute_operand,
                     uint64_t hbm_size);

// Checks one instruction placed on engine `engine` of core `core`.
Status verify_instruction(const Target& target, const Program& program, int core, Engine engine,
                          const Instruction& inst);

// Checks a whole program; the error names core, engine, index and opcode.
Status verify_program(const Target& target, const Program& program);

}  // namespace neuronc::device
