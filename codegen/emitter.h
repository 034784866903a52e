// The ProgramEmitter places kernels into one NeuronCore program, in program order:
//  - relocation: a kernel's SBUF region goes where it overlaps only the oldest recent kernels
//    (so consecutive kernels overlap in time), or with the ring policy right after the previous
//    one; with scheduling on (-O2+) both are tried and timed; its PSUM banks rotate;
//  - placement: compute instructions go to their engine's stream; loads trigger from SyncE on
//    DMA queue 0, stores from GpSimdE on queue 1 (one queue per trigger engine, as Neuron's
//    runtime ties them, DMA doc); the DMA engines serve the queues round-robin (TRAINIUM.md
//    §5.3), so a store never waits behind the loads queued before it;
//  - synchronisation: every instruction's byte footprint is checked against earlier accesses
//    (RAW, WAR, WAW) by other threads (engine streams and DMA queues; the conflicts come from
//    device::DependencyTracker, the race checker's tracker); a wait is added only when
//    the dependency is not already implied by the thread's order or by an earlier wait (vector
//    clocks of known completions). One semaphore per thread counts completions; only waited-on
//    instructions signal, so a wait value is the rank of its target among the signallers
//    (times 16 for DMA queues, one write per DMA engine). Completions are in order per thread,
//    which makes "semaphore >= rank" mean "that instruction is done".
//  - collectives: triggered by the stream that holds them, they complete on the collective
//    unit, a thread of its own (its semaphore follows the DMA queues' and exists only when the
//    program has a collective). The device model completes collectives when every core has
//    reached them, in no fixed order among themselves, so each collective waits for the
//    previous one: completions stay in order.
// Emission order is a topological order of all dependencies, so the program cannot deadlock.
// Not thread-safe; deterministic (finish() places and times its candidates on several threads,
// each with its own state).
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/kernel.h"
#include "codegen/store_forwarding.h"
#include "device/dependency_tracker.h"
#include "device/isa.h"
#include "device/target.h"

namespace neuronc::codegen {

class ProgramEmitter {
 public:
  explicit ProgramEmitter(const device::Target& t);

  // Queues the kernel in program order. `next_sbuf_bytes`: the SBUF region of the next kernel
  // that has one (0 = none or unknown), so this one leaves room for it.
  void append(KernelCode kernel, uint32_t next_sbuf_bytes = 0);
  // Relocates every kernel (RegionPolicy::recent), forwards stores to loads when `forward`
  // (store_forwarding.h; stores at or after `scratch_begin` may be dropped), places every
  // instruction, patches wait values and signals; returns the program for one core.
  // With `schedule_windows`, each of `policies` is tried, and for each the program order and
  // the scheduler's orders of the whole program for each window (scheduler.h; an instruction
  // moves ahead of at most that many others); the one the device model times fastest is kept.
  device::Program finish(uint64_t hbm_size, bool forward, uint64_t scratch_begin,
                         const std::vector<size_t>& schedule_windows = {},
                         const std::vector<RegionPolicy>& policies = {RegionPolicy::recent,
                                                                      RegionPolicy::ring});

  // The cores the program runs on once replicated (device/replicate.h): the rank count of its
  // collectives. Candidates are timed on that many cores (a one-core program with an all_gather
  // over two ranks is not a valid program by itself). Default 1.
  void set_cores(uint32_t cores) { cores_ = cores; }
  // Candidates are placed and timed by this many threads (0: oneTBB's default); the program
  // kept is the same for any count.
  void set_threads(int threads) { threads_ = threads; }

  uint64_t waits() const { return waits_; }
  const ForwardingStats& forwarding() const { return forwarding_; }
  uint32_t sbuf_peak() const { return sbuf_peak_; }
  uint32_t psum_peak() const { return psum_peak_; }
  bool scheduled() const { return scheduled_; }  // the program schedule was kept

 private:
  // The DMA queues the emitter uses, by role (a compiler convention; the target has at least
  // this many queues per engine, checked at construction).
  static constexpr uint16_t kLoadQueue = 0, kStoreQueue = 1;
  static constexpr int kQueues = 2;
  static constexpr int kCollectiveThread = device::kNumEngines + kQueues;
  static constexpr int kThreads = kCollectiveThread + 1;

  struct Region {
    uint32_t begin, end;
  };
  static constexpr size_t kRecentRegions = 8;
  // Where relocation is: each candidate placement has its own.
  struct Relocation {
    RegionPolicy policy = RegionPolicy::recent;
    std::vector<Region> recent;  // SBUF regions of the last kernels that had one, oldest first
    uint32_t sbuf_cursor = 0;
    uint32_t psum_cursor = 0;
  };
  uint32_t place_region(Relocation& r, uint32_t bytes, uint32_t next_bytes) const;
  // Every queued kernel relocated under `policy`, in program order.
  std::vector<PendingInstruction> relocate(RegionPolicy policy) const;
  void relocate_one(Relocation& r, const KernelCode& k, uint32_t next_sbuf_bytes, uint32_t group,
                    std::vector<PendingInstruction>& out) const;
  // Places instructions in order into a fresh program: streams, waits and signals (emitter.cpp).
  // One per candidate program, so candidates are placed in parallel.
  class Placer;

  const device::Target& t_;
  struct QueuedKernel {
    KernelCode code;
    uint32_t next_sbuf_bytes;
  };
  std::vector<QueuedKernel> kernels_in_;
  ForwardingStats forwarding_;
  uint64_t waits_ = 0;
  bool scheduled_ = false;
  uint32_t cores_ = 1;
  int threads_ = 0;
  uint32_t sbuf_peak_ = 0;
  uint32_t psum_peak_ = 0;
};

}  // namespace neuronc::codegen
