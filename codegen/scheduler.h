// Instruction scheduling within one kernel (-O2 and up).
//
// A lowering emits its instructions in an order that is easy to write (per tile, per head),
// and each engine runs its share in that order: an engine stalls whenever the next
// instruction in its stream waits on another engine, even when later, independent work is
// ready. The scheduler reorders the kernel into another topological order of its byte
// dependencies (RAW, WAR and WAW between SBUF, PSUM and HBM footprints, as the emitter
// checks them): a list schedule over device::CostModel that, at each step, starts the ready
// instruction that can start earliest (ties: the longer remaining critical path, then
// program order). Loads keep their program order among themselves, as do stores: the DMA
// queues run in order, and the lowerings already order their transfers by need.
//
// The estimate is the cost model's instruction times with in-order engines and queues,
// same-engine dependent issue and the semaphore latency between engines; it ignores DMA
// engine sharing between queues. The new order is kept only when its estimate beats the
// program order's. Every conflicting pair keeps its order, so the kernel computes exactly what
// it did; the result depends only on the instructions (deterministic).
#pragma once

#include <vector>

#include "codegen/kernel.h"
#include "device/cost_model.h"

namespace neuronc::codegen {

struct ScheduleResult {
  double program_order_ns = 0;  // estimated kernel time in the lowering's order
  double scheduled_ns = 0;      // estimated time of the order kept
  bool reordered = false;
};

ScheduleResult schedule_kernel(std::vector<PendingInstruction>& instructions,
                               const device::CostModel& cost);

// Orders of a whole program's relocated kernels (software pipelining across kernels): the
// same list schedule with these differences. An instruction may move ahead of at most
// `window` instructions that precede it. Ready instructions that can start at the same time
// go in program order or, in half the candidates, critical path first. A transfer trigger may
// wait for a higher-priority transfer that becomes ready before the ready one would leave its
// in-order queue. Transfers keep their order within each kernel (PendingInstruction::group),
// letting a kernel's loads go ahead of an earlier kernel's that wait for their SBUF, or within
// the whole program, so an earlier kernel's weight stream never queues behind a later one's.
// DMA time is estimated per DMA engine or per queue. That makes eight candidates; HBM reads of
// bytes nothing writes are not tracked (they conflict with nothing). The caller times them
// with the device model (emitter.h).
std::vector<std::vector<uint32_t>> schedule_candidates(
    const std::vector<PendingInstruction>& instructions, const device::CostModel& cost,
    size_t window);

}  // namespace neuronc::codegen
