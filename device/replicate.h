// Core replication for tensor parallelism: the program codegen compiles for one rank (one
// NeuronCore, collectives included) runs on `cores` cores, each its own copy against its own
// slice of one HBM arena, `core_stride` bytes after the previous core's. An artifact stores core
// 0 and the replication (artifact::DeviceProgram::replicas); its reader makes the copies, and
// codegen times its candidates' copies without making them (Simulator::run_replicated).
//
//   Result<Program> p = device::replicate_cores(one_core, 2, core_stride);
//   // core r's input x lives at r * core_stride + x's offset on core 0
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "device/isa.h"
#include "device/status.h"

namespace neuronc::device {

// Checks the replication itself: 1 to 65535 cores (a core index is a uint16 and kThisCore is
// reserved), a core stride that is a non-zero multiple of 64 bytes (the arena's buffer
// alignment), and cores * core_stride within 64 bits.
Status check_replication(uint32_t cores, uint64_t core_stride);

// Whether `s` goes to the signalling core itself (kThisCore, or core 0 of a one-core program),
// as every signal of a replicated program's core 0 must.
bool signals_its_own_core(const SemaphoreSignal& s);

// Whether `core` is copy r of `base`: every HBM operand of every instruction (DMA sides, an
// indirect DMA's table, collective sides) moved by r * core_stride, and every signal to an
// explicit core (not kThisCore) sent to core r, and nothing else changed.
bool is_core_replica(const CoreProgram& base, const CoreProgram& core, uint32_t r,
                     uint64_t core_stride);

// The `cores`-core program whose core r is copy r of one_core.cores[0] (as is_core_replica
// says); hbm_size becomes cores * core_stride; num_semaphores is unchanged (semaphores are per
// core). No checks: for a program replicate_cores would accept, such as one that passed
// verify_replicated_program (verifier.h).
Program replicate_unchecked(const Program& one_core, uint32_t cores, uint64_t core_stride);

// replicate_unchecked(one_core, cores, core_stride), after its checks: invalid_argument when
// `one_core` does not have exactly one core, check_replication fails, one_core.hbm_size exceeds
// core_stride, an HBM operand reaches past core_stride, or an instruction signals a core other than
// 0. The operands must be well formed (verify_program passes): the bytes an operand reaches are
// computed from its access pattern.
Result<Program> replicate_cores(const Program& one_core, uint32_t cores, uint64_t core_stride);

}  // namespace neuronc::device
