// Core replication for tensor parallelism: the program codegen compiles for one rank (one
// NeuronCore, collectives included) becomes the program of `cores` cores, each running its own
// copy against its own slice of one HBM arena.
//
//   device::Program p = codegen::replicate_cores(part.program, 2, core_stride);
//   // core r's input x lives at r * core_stride + part.inputs[i].offset
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>

#include "device/isa.h"

namespace neuronc::codegen {

// A `cores`-core program in which core r is core 0 of `one_core` with every HBM address (every
// HBM operand of every instruction: DMA sides, an indirect DMA's table, collective sides)
// moved by r * core_stride. hbm_size becomes cores * core_stride; num_semaphores is unchanged
// (semaphores are per core). A signal to an explicit core (SemaphoreSignal::core, not
// kThisCore) is taken relative to the issuing core: core 0 of the one-core program is core r
// in copy r.
// Throws codegen::Error when `one_core` does not have exactly one core, `cores` is 0 or over
// 65535 (a core index is a uint16 and kThisCore is reserved), core_stride is not a multiple of
// 64 (the arena's buffer alignment), an HBM operand reaches past core_stride (or
// one_core.hbm_size exceeds it), an instruction signals a core other than 0, or
// cores * core_stride overflows.
device::Program replicate_cores(const device::Program& one_core, uint32_t cores,
                                uint64_t core_stride);

}  // namespace neuronc::codegen
