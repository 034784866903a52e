// Kernel placement and semaphore wiring (emitter.h).
#include "codegen/emitter.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <limits>
#include <mutex>
#include <string>

#include "codegen/codegen.h"
#include "codegen/hbm_plan.h"
#include "codegen/scheduler.h"
#include "device/cost_model.h"
#include "device/simulator.h"

namespace neuronc::codegen {

using device::Engine;
using device::MemoryKind;
using device::MemRef;

ProgramEmitter::ProgramEmitter(const device::Target& t) : t_(t) {
  if (t.dma_queues_per_engine < kQueues)
    throw Error("internal: target " + std::string(t.name) + " has " +
                std::to_string(t.dma_queues_per_engine) +
                " DMA queues per engine; the emitter needs " + std::to_string(kQueues));
}

class ProgramEmitter::Placer {
 public:
  explicit Placer(const device::Target& t) : t_(t) {
    program_.cores.resize(1);
    Clock none;
    none.fill(-1);
    known_.assign(kThreads, none);
    snapshots_.resize(kThreads);
    placed_.resize(kThreads);
    needed_.resize(kThreads);
  }
  device::Program build(std::vector<PendingInstruction> insts, uint64_t hbm_size);
  uint64_t waits() const { return waits_; }

 private:
  struct Placed {
    uint8_t stream;
    uint32_t index;
  };
  struct WaitRef {
    uint8_t stream;
    uint32_t index;
    uint32_t wait_slot;
    uint8_t thread;
    uint32_t seq;
  };
  // Held in place, as everything place() makes per instruction: it runs for every instruction
  // of every candidate program (18 whole-program placements for BERT-large at -O2).
  using Clock = std::array<int32_t, kThreads>;
  // The engine stream `in` goes to (a DMA: its trigger engine's).
  static int stream_of(const PendingInstruction& in);
  void place(PendingInstruction inst);

  const device::Target& t_;
  device::Program program_;
  std::vector<Clock> known_;                   // per thread: latest seq of each thread it follows
  std::vector<std::vector<Clock>> snapshots_;  // per thread, per seq: knowledge at issue
  std::vector<std::vector<Placed>> placed_;    // per thread, per seq
  std::vector<std::vector<uint8_t>> needed_;   // per thread, per seq: someone waits on it
  std::vector<WaitRef> wait_refs_;
  device::DependencyTracker accesses_;  // thread: engine stream or DMA queue
  uint64_t waits_ = 0;
};

// A kernel's region goes where it overlaps only the oldest of the recent kernels, leaving room
// for the next kernel beside it. The candidates are the partition's ends, the cursor after the
// previous region and the edges of the recent regions; each is scored, most important first,
// by: overlapping the previous kernel, leaving the next kernel (`next_bytes`) no place that
// avoids this one, then overlapping each older recent kernel, newest first. The first best
// candidate wins. A plain ring wraps a large region onto the kernel before it, whose compute
// it must then wait for (BERT's FFN down projection after the up projection).
// RegionPolicy::ring: each region goes right after the previous one, wrapping to 0 when it
// does not fit, so a region is reused as late as possible (a batch-16 BERT's kernels each run
// long enough that the oldest region is always free; BERT-base at batch 1 prefers the above).
uint32_t ProgramEmitter::place_region(Relocation& rel, uint32_t bytes, uint32_t next_bytes) const {
  const uint32_t cap = t_.sbuf_partition_bytes;
  if (bytes == 0) return 0;
  const uint32_t last = cap - bytes;
  if (rel.policy == RegionPolicy::ring) {
    const uint32_t base = rel.sbuf_cursor <= last ? rel.sbuf_cursor : 0u;
    rel.sbuf_cursor = base + bytes;
    return base;
  }
  std::vector<Region>& recent = rel.recent;
  std::vector<uint32_t> candidates{rel.sbuf_cursor <= last ? rel.sbuf_cursor : 0u, 0u, last};
  for (const Region& r : recent) {
    if (r.end <= last) candidates.push_back(r.end);
    if (r.begin >= bytes) candidates.push_back((r.begin - bytes) / 64 * 64);
  }
  auto score = [&](uint32_t base) {
    uint32_t s = 0;
    for (size_t i = 0; i < recent.size(); ++i) {
      const Region& r = recent[recent.size() - 1 - i];
      if (!(base < r.end && r.begin < base + bytes)) continue;
      s |= i == 0 ? 1u << (kRecentRegions + 1) : 1u << (kRecentRegions - 1 - i);
    }
    if (next_bytes > 0 && base < next_bytes && cap - (base + bytes) < next_bytes)
      s |= 1u << kRecentRegions;
    return s;
  };
  uint32_t best = candidates.front(), best_score = score(best);
  for (uint32_t c : candidates) {
    const uint32_t sc = score(c);
    if (sc < best_score) best = c, best_score = sc;
  }
  recent.push_back({best, best + bytes});
  if (recent.size() > kRecentRegions) recent.erase(recent.begin());
  rel.sbuf_cursor = best + bytes;
  return best;
}

void ProgramEmitter::append(KernelCode k, uint32_t next_sbuf_bytes) {
  if (k.sbuf_bytes > t_.sbuf_partition_bytes)
    throw Error("internal: kernel SBUF region exceeds the partition");
  sbuf_peak_ = std::max(sbuf_peak_, k.sbuf_bytes);
  psum_peak_ = std::max(psum_peak_, k.psum_banks * t_.psum_bank_bytes);
  kernels_in_.push_back({std::move(k), next_sbuf_bytes});
}

std::vector<PendingInstruction> ProgramEmitter::relocate(RegionPolicy policy) const {
  Relocation rel;
  rel.policy = policy;
  std::vector<PendingInstruction> out;
  size_t total = 0;
  for (const QueuedKernel& k : kernels_in_) total += k.code.instructions.size();
  out.reserve(total);
  for (size_t i = 0; i < kernels_in_.size(); ++i)
    relocate_one(rel, kernels_in_[i].code, kernels_in_[i].next_sbuf_bytes, static_cast<uint32_t>(i),
                 out);
  return out;
}

void ProgramEmitter::relocate_one(Relocation& rel, const KernelCode& k, uint32_t next_sbuf_bytes,
                                  uint32_t group, std::vector<PendingInstruction>& out) const {
  const uint32_t sbuf_base = place_region(rel, k.sbuf_bytes, next_sbuf_bytes);
  const uint32_t banks = static_cast<uint32_t>(t_.psum_banks);
  const uint32_t bank_base = rel.psum_cursor;
  rel.psum_cursor = (rel.psum_cursor + k.psum_banks) % banks;
  for (PendingInstruction in : k.instructions) {
    for_each_memref(in.op, [&](MemRef& m) {
      if (m.memory == MemoryKind::sbuf) {
        m.offset += sbuf_base;
      } else if (m.memory == MemoryKind::psum) {
        const uint64_t bank = m.offset / t_.psum_bank_bytes;
        const uint64_t within = m.offset % t_.psum_bank_bytes;
        m.offset = ((bank + bank_base) % banks) * t_.psum_bank_bytes + within;
      }
    });
    in.group = group;
    out.push_back(std::move(in));
  }
}

int ProgramEmitter::Placer::stream_of(const PendingInstruction& in) {
  return std::holds_alternative<device::DmaCopy>(in.op)
             ? static_cast<int>(dma_trigger_engine(in.role))
             : static_cast<int>(in.engine);
}

void ProgramEmitter::Placer::place(PendingInstruction in) {
  const int stream = stream_of(in);
  int thread = stream;
  const bool collective = std::holds_alternative<device::Collective>(in.op);
  if (auto* d = std::get_if<device::DmaCopy>(&in.op)) {
    d->queue = in.role == DmaRole::store ? kStoreQueue : kLoadQueue;
    thread = device::kNumEngines + d->queue;
  } else if (collective) {
    thread = kCollectiveThread;
  }
  const uint32_t seq = static_cast<uint32_t>(placed_[thread].size());

  // Dependencies on other threads, from the bytes touched; the accesses are recorded at once (a
  // write retires the accesses it covers, a read this thread's reads it covers: they are
  // ordered before it).
  const device::Operands ops = device::operands(in.op);
  std::array<device::MemoryAccess, 2 * device::kMaxMemoryOperands> mine;
  size_t num_accesses = 0;
  for (const device::MemRef& m : ops.reads)
    mine[num_accesses++] = {byte_rect(m), false, static_cast<uint32_t>(thread), seq};
  for (const device::MemRef& m : ops.writes)
    mine[num_accesses++] = {byte_rect(m), true, static_cast<uint32_t>(thread), seq};
  std::array<int64_t, kThreads> need;
  need.fill(-1);
  accesses_.add_retiring_after_conflicts(
      std::span<const device::MemoryAccess>(mine.data(), num_accesses),
      [&](const device::MemoryAccess& a) {
        need[a.thread] = std::max<int64_t>(need[a.thread], a.seq);
      });
  // Collectives complete in any order on the device: chain each to the previous one.
  if (collective && seq > 0) need[thread] = std::max<int64_t>(need[thread], seq - 1);

  // What the issuing stream already knows to be complete (a DMA queue also completes in order;
  // the collective unit only through the chain above).
  Clock know = known_[stream];
  if (thread != stream && !collective)
    for (int u = 0; u < kThreads; ++u) know[u] = std::max(know[u], known_[thread][u]);
  std::vector<device::SemaphoreWait> waits;
  for (int u = 0; u < kThreads; ++u) {
    if (need[u] < 0 || need[u] <= know[u]) continue;
    const Clock& snap = snapshots_[u][static_cast<size_t>(need[u])];
    for (int v = 0; v < kThreads; ++v) know[v] = std::max(know[v], snap[v]);
    know[u] = std::max<int32_t>(know[u], static_cast<int32_t>(need[u]));
    needed_[u][static_cast<size_t>(need[u])] = 1;
    auto& target_stream = program_.cores[0].streams[stream];
    wait_refs_.push_back({static_cast<uint8_t>(stream), static_cast<uint32_t>(target_stream.size()),
                          static_cast<uint32_t>(waits.size()), static_cast<uint8_t>(u),
                          static_cast<uint32_t>(need[u])});
    waits.push_back({static_cast<uint16_t>(u), 0});
    ++waits_;
  }
  // The stream now knows everything it waited for (not the DMA it triggers).
  Clock stream_know = know;
  if (thread != stream) stream_know[thread] = known_[stream][thread];
  known_[stream] = stream_know;
  Clock self = know;
  self[thread] = static_cast<int32_t>(seq);
  known_[thread] = self;
  snapshots_[thread].push_back(self);
  needed_[thread].push_back(0);

  device::Instruction inst;
  inst.op = std::move(in.op);
  inst.waits = std::move(waits);
  inst.debug_id = in.debug_id;
  auto& s = program_.cores[0].streams[stream];
  placed_[thread].push_back({static_cast<uint8_t>(stream), static_cast<uint32_t>(s.size())});
  s.push_back(std::move(inst));
}

device::Program ProgramEmitter::Placer::build(std::vector<PendingInstruction> insts,
                                              uint64_t hbm_size) {
  std::array<size_t, device::kNumEngines> per_stream{};
  for (const PendingInstruction& in : insts) ++per_stream[static_cast<size_t>(stream_of(in))];
  for (int e = 0; e < device::kNumEngines; ++e)
    program_.cores[0].streams[e].reserve(per_stream[static_cast<size_t>(e)]);
  for (PendingInstruction& in : insts) place(std::move(in));
  std::vector<std::vector<uint32_t>> rank(kThreads);
  for (int u = 0; u < kThreads; ++u) {
    const bool dma_queue = u >= device::kNumEngines && u < kCollectiveThread;
    const uint32_t inc = dma_queue ? static_cast<uint32_t>(t_.dma_semaphore_increment) : 1u;
    rank[u].assign(needed_[u].size(), 0);
    uint32_t r = 0;
    for (size_t s = 0; s < needed_[u].size(); ++s) {
      if (!needed_[u][s]) continue;
      rank[u][s] = ++r * inc;
      const Placed& p = placed_[u][s];
      program_.cores[0].streams[p.stream][p.index].signals.push_back(
          {static_cast<uint16_t>(u), inc, device::kThisCore});
    }
  }
  for (const WaitRef& w : wait_refs_)
    program_.cores[0].streams[w.stream][w.index].waits[w.wait_slot].value = rank[w.thread][w.seq];
  // The collective unit's semaphore (the last) only when there is a collective, so programs
  // without one keep their semaphore count.
  program_.num_semaphores = placed_[kCollectiveThread].empty() ? kThreads - 1 : kThreads;
  program_.hbm_size = hbm_size;
  return std::move(program_);
}

device::Program ProgramEmitter::finish(uint64_t hbm_size, bool forward, uint64_t scratch_begin,
                                       const std::vector<size_t>& schedule_windows,
                                       const std::vector<RegionPolicy>& policies) {
  if (policies.empty()) throw Error("internal: no SBUF region policy to emit with");
  if (schedule_windows.empty()) {
    std::vector<PendingInstruction> insts = relocate(policies.front());
    if (forward) forwarding_ = forward_stores(insts, scratch_begin);
    Placer placer(t_);
    device::Program p = placer.build(std::move(insts), hbm_size);
    waits_ = placer.waits();
    return p;
  }
  // For each SBUF placement: the program order and the scheduler's candidates, each placed and
  // timed by the device model (timing only); the fastest is kept, the earlier candidate (by
  // placement, then order) on ties or when a candidate does not run. Placements, and the
  // candidates of each, are made and timed in parallel, each with its own placer and simulator;
  // a candidate is kept only while it is the best so far by that order, so the choice is the
  // same for any thread count and at most one program per thread is alive beside the best.
  device::SimulatorOptions so;
  so.functional = false;
  const auto time_of = [&](const device::Program& p) {
    device::Simulator sim(t_, so);
    // A tensor-parallel candidate runs on every core, each a copy of it: timed so without
    // making the copies.
    const auto r = cores_ <= 1 ? sim.run(p, {})
                               : sim.run_replicated(
                                     p, cores_, (hbm_size + kHbmAlign - 1) / kHbmAlign * kHbmAlign);
    return r ? r.value().total_time_ns : std::numeric_limits<double>::infinity();
  };
  struct Candidate {
    device::Program program;
    double ns = std::numeric_limits<double>::infinity();
    uint64_t waits = 0;
    bool scheduled = false;
    size_t policy = SIZE_MAX, order = SIZE_MAX;  // which: none yet
    // Whether this candidate is kept over `o`: faster, or as fast and earlier.
    bool beats(const Candidate& o) const {
      if (o.policy == SIZE_MAX) return true;
      if (ns != o.ns) return ns < o.ns;
      return policy != o.policy ? policy < o.policy : order < o.order;
    }
  };
  Candidate best;
  std::mutex best_mu;
  std::vector<ForwardingStats> forwardings(policies.size());
  const device::CostModel cost(t_);
  auto place_policy = [&](size_t pi) {
    std::vector<PendingInstruction> insts = relocate(policies[pi]);
    if (forward) forwardings[pi] = forward_stores(insts, scratch_begin);
    std::vector<std::vector<uint32_t>> orders = {{}};  // {} = program order
    for (size_t window : schedule_windows)
      for (std::vector<uint32_t>& o : schedule_candidates(insts, cost, window))
        if (std::find(orders.begin(), orders.end(), o) == orders.end())
          orders.push_back(std::move(o));
    tbb::parallel_for(size_t{0}, orders.size(), [&](size_t oi) {
      const std::vector<uint32_t>& order = orders[oi];
      std::vector<PendingInstruction> permuted;
      if (order.empty()) {
        permuted = insts;
      } else {
        permuted.reserve(order.size());
        for (uint32_t i : order) permuted.push_back(insts[i]);
      }
      Placer placer(t_);
      Candidate c;
      c.program = placer.build(std::move(permuted), hbm_size);
      c.ns = time_of(c.program);
      c.waits = placer.waits();
      c.scheduled = !order.empty();
      c.policy = pi;
      c.order = oi;
      const std::lock_guard<std::mutex> lock(best_mu);
      if (c.beats(best)) best = std::move(c);
    });
  };
  tbb::task_arena arena(threads_ > 0 ? threads_ : tbb::task_arena::automatic);
  arena.execute([&] { tbb::parallel_for(size_t{0}, policies.size(), place_policy); });

  waits_ = best.waits;
  forwarding_ = forwardings[best.policy];
  scheduled_ = best.scheduled;
  return std::move(best.program);
}

}  // namespace neuronc::codegen
