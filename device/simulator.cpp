// Event loop of the device model (simulator.h), following TRAINIUM.md §5.1: each engine is an
// in-order stream; an instruction issues when its semaphore waits hold (plus the semaphore
// latency), its engine is free (previous II elapsed) and, for a read-after-write on the same
// engine, the dependency distance has passed. Its functional effect and semaphore increments
// apply at completion = issue + II + completion latency. DMA triggers hand a transfer to the
// DMA engines after the trigger latency. Each engine serves its 16 queues round-robin (§5.3,
// v2/v3 switch queues at 4 KiB packet boundaries; modelled as a fluid fair share among the
// queues whose head transfer is ready), in order within a queue; a transfer completes when its
// share on every engine is done and every earlier transfer of its queue has completed. DMA
// engines whose states are the same bits are simulated once, as a class (DmaClass), with the
// event order of one state per engine.
//
// The race checker keeps a vector clock per thread (engine stream, DMA queue, collective unit)
// and joins clocks through semaphores; two accesses that conflict (device::DependencyTracker:
// overlapping bytes, one a write, different threads) whose clocks are unordered are a race.
#include "device/simulator.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_for_each.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>

#include "device/dependency_tracker.h"
#include "device/functional.h"
#include "device/replicate.h"
#include "device/verifier.h"
#include "kernels/zeroed_bytes.h"

namespace neuronc::device {

struct Simulator::Memories {
  std::vector<CoreMemory> cores;
};

namespace {

using std::to_string;

constexpr int kDmaQueues = 16;
constexpr int kThreadsPerCore = kNumEngines + kDmaQueues + 1;  // engines, DMA queues, CC unit

using Clock = std::vector<uint32_t>;

void join(Clock& a, const Clock& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::max(a[i], b[i]);
}

using Rect = ByteRect;

Rect rect_of(const MemRef& m, int core) {
  return byte_rect(m, static_cast<uint16_t>(core));
}

std::string describe(const Rect& r) {
  std::string s = std::string(memory_name(r.memory));
  if (r.memory != MemoryKind::hbm)
    s += " partitions [" + to_string(r.p0) + ", " + to_string(r.p1) + ")";
  return s + " bytes [" + to_string(r.b0) + ", " + to_string(r.b1) + ")";
}

}  // namespace

// Per instruction, what on_ready needs of it; per DMA, its split over the DMA engines.
struct ProgramTiming::Tables {
  struct Step {
    InstructionCost cost;
    uint32_t rects = 0;  // its read rects, then its engine-write rects, in `rects`
    uint16_t reads = 0, writes = 0;
    uint32_t dma = UINT32_MAX;        // its DmaStep, for a DMA trigger
    uint32_t waits = 0, signals = 0;  // its semaphore waits and signals, in `waits`, `signals`
    uint32_t wait_count = 0, signal_count = 0;
    bool collective = false;
    bool sbuf_port = false;  // holds the NC-v2 VectorE/GpSimdE SBUF port
    bool psum_port = false;  // holds the NC-v2 VectorE/ScalarE PSUM port
  };
  // One DMA engine's share of a transfer (CostModel::dma_work).
  struct DmaShare {
    uint32_t engine = 0;
    uint32_t descriptors = 0;
    double rate_weighted_bytes = 0;
  };
  struct DmaStep {
    double start_delay_ns = 0;
    double swdge_ns = 0;  // GpSimd's descriptor generation of an indirect DMA (software DGE)
    double rate = 0;      // an engine's rate before HBM sharing (CostModel::dma_engine_rate)
    uint64_t total_bytes = 0, hbm_read_bytes = 0, hbm_write_bytes = 0;
    uint64_t sbuf_read_bytes = 0, sbuf_write_bytes = 0;
    uint32_t shares = 0, share_count = 0;  // in `shares`, by engine
    uint32_t engines = 0;                  // bit i: engine i has descriptors
    uint16_t queue = 0;
  };
  // [table][engine][index]: core c's steps are table table_of_core[c]. A core that is a copy of
  // core 0 (device/replicate.h) shares core 0's table: the costs do not depend on HBM
  // addresses, its rects are only ever compared with its own, and its signals to an explicit
  // core go to itself (`replica`).
  std::vector<std::array<std::vector<Step>, kNumEngines>> steps;
  std::vector<uint32_t> table_of_core;  // per core timed
  std::vector<uint8_t> replica;         // per core: its table is core 0's
  // The program holds core 0 alone and every core timed is its copy (the replicating
  // constructor): a core's instructions are core 0's.
  bool copies_of_core0 = false;
  std::vector<Rect> rects;
  std::vector<SemaphoreWait> waits;
  std::vector<SemaphoreSignal> signals;
  std::vector<DmaStep> dmas;
  std::vector<DmaShare> shares;
};

// The dependency graph of one core's log of deferred effects (log_graph below).
struct LogGraph {
  std::vector<uint32_t> indegree;  // per entry
  std::vector<uint32_t> first;     // successors of entry i: succ[first[i], first[i + 1])
  std::vector<uint32_t> succ;
};

struct ProgramTiming::LogGraphs {
  struct Entry {
    size_t flush = 0;  // which of the run's flushes
    int core = 0;
    std::vector<uint64_t> log;  // each entry's (engine << 32 | index)
    std::shared_ptr<const LogGraph> graph;
  };
  std::mutex mutex;
  std::vector<Entry> entries;
};

ProgramTiming::ProgramTiming(const CostModel& cost, const Program& program)
    : ProgramTiming(cost, program, Copies{0, 0}) {}

ProgramTiming::ProgramTiming(const CostModel& cost, const Program& one_core, uint32_t copies,
                             uint64_t core_stride)
    : ProgramTiming(cost, one_core, Copies{copies, core_stride}) {}

ProgramTiming::ProgramTiming(const CostModel& cost, const Program& program, Copies copies)
    : program_(program),
      target_(cost.target().name),
      copies_(copies),
      log_graphs_(std::make_unique<LogGraphs>()) {
  if (copies.cores > 0 && program.cores.size() != 1)
    throw std::invalid_argument("ProgramTiming: copies of core 0 of a program of " +
                                to_string(program.cores.size()) + " cores, expected 1");
  auto t = std::make_unique<Tables>();
  const Target& target = cost.target();
  const size_t n = copies.cores > 0 ? copies.cores : program.cores.size();
  t->copies_of_core0 = copies.cores > 0;
  t->table_of_core.assign(n, 0);
  t->replica.assign(n, 0);
  // Cores that are copies of core 0 as replicate_cores makes them (a tensor-parallel program):
  // the copies are hbm_size / n bytes apart.
  const uint64_t stride = n > 1 && program.hbm_size % n == 0 ? program.hbm_size / n : 0;
  for (size_t c = 0; c < n; ++c) {
    if (c > 0 &&
        (t->copies_of_core0 || (stride > 0 && is_core_replica(program.cores[0], program.cores[c],
                                                              static_cast<uint32_t>(c), stride)))) {
      t->replica[c] = 1;
      continue;
    }
    t->table_of_core[c] = static_cast<uint32_t>(t->steps.size());
    t->steps.emplace_back();
    for (int ei = 0; ei < kNumEngines; ++ei) {
      const Engine e = static_cast<Engine>(ei);
      const auto& stream = program.cores[c].streams[ei];
      auto& steps = t->steps.back()[ei];
      steps.resize(stream.size());
      for (size_t i = 0; i < stream.size(); ++i) {
        const Operation& op = stream[i].op;
        Tables::Step& st = steps[i];
        st.cost = cost.cost(e, op);
        st.waits = static_cast<uint32_t>(t->waits.size());
        st.wait_count = static_cast<uint32_t>(stream[i].waits.size());
        t->waits.insert(t->waits.end(), stream[i].waits.begin(), stream[i].waits.end());
        st.signals = static_cast<uint32_t>(t->signals.size());
        st.signal_count = static_cast<uint32_t>(stream[i].signals.size());
        t->signals.insert(t->signals.end(), stream[i].signals.begin(), stream[i].signals.end());
        st.collective = std::holds_alternative<Collective>(op);
        const Operands ops = operands(op);
        // The engine itself reads and writes memory (a DMA trigger does not).
        const bool engine_access = !std::holds_alternative<DmaCopy>(op) &&
                                   !std::holds_alternative<Collective>(op) &&
                                   !std::holds_alternative<Nop>(op);
        st.rects = static_cast<uint32_t>(t->rects.size());
        st.reads = static_cast<uint16_t>(ops.reads.size());
        for (const MemRef& r : ops.reads) t->rects.push_back(rect_of(r, int(c)));
        if (engine_access) {
          st.writes = static_cast<uint16_t>(ops.writes.size());
          for (const MemRef& w : ops.writes) t->rects.push_back(rect_of(w, int(c)));
          auto touches = [&](MemoryKind k) {
            for (const MemRef& m : ops.reads)
              if (m.memory == k) return true;
            for (const MemRef& m : ops.writes)
              if (m.memory == k) return true;
            return false;
          };
          // NC-v2 port exclusivity (ARCH2, §3.5).
          st.sbuf_port = target.exclusive_vector_gpsimd_sbuf &&
                         (e == Engine::vector || e == Engine::gpsimd) && touches(MemoryKind::sbuf);
          st.psum_port = target.exclusive_vector_scalar_psum &&
                         (e == Engine::vector || e == Engine::scalar) && touches(MemoryKind::psum);
        }
        if (const auto* dma = std::get_if<DmaCopy>(&op)) {
          const DmaWork w = cost.dma_work(*dma);
          Tables::DmaStep d;
          d.start_delay_ns = cost.dma_start_delay_ns(*dma);
          d.swdge_ns = cost.swdge_ns(*dma, w);
          d.queue = dma->queue;
          d.rate = cost.dma_engine_rate(w);
          d.total_bytes = w.total_bytes;
          d.hbm_read_bytes = w.hbm_read_bytes;
          d.hbm_write_bytes = w.hbm_write_bytes;
          d.sbuf_read_bytes = w.sbuf_read_bytes;
          d.sbuf_write_bytes = w.sbuf_write_bytes;
          d.shares = static_cast<uint32_t>(t->shares.size());
          for (int k = 0; k < target.dma_engines_per_core; ++k) {
            if (w.descriptors[k] == 0) continue;
            t->shares.push_back({uint32_t(k), w.descriptors[k], w.rate_weighted_bytes[k]});
            d.engines |= 1u << k;
          }
          d.share_count = static_cast<uint32_t>(t->shares.size()) - d.shares;
          st.dma = static_cast<uint32_t>(t->dmas.size());
          t->dmas.push_back(d);
        }
      }
    }
  }
  tables_ = std::move(t);
}

ProgramTiming::~ProgramTiming() = default;

namespace {

struct Who {
  uint16_t core;
  Engine engine;
  uint32_t index;
  Opcode opcode;
  std::string str() const {
    return "core " + to_string(core) + " " + std::string(engine_name(engine)) + "[" +
           to_string(index) + "] (" + std::string(opcode_name(opcode)) + ")";
  }
};

// Which instruction an access record belongs to (DependencyTracker's tag).
uint64_t tag_of(const Who& w) {
  return uint64_t{w.core} << 40 | uint64_t(static_cast<uint8_t>(w.engine)) << 32 | w.index;
}

// DMA engine ticks are kept apart (TickHeap), ordered with these by time and sequence number.
enum class EventKind : uint8_t { ready, complete, dma_done, collective_done };

// Event times are finite and never negative, so their bits order as they do (+0.0 for -0.0):
// the queues compare integers, time first and then the sequence number.
inline uint64_t time_key(double t) {
  return std::bit_cast<uint64_t>(t + 0.0);
}

struct Event {
  double t;
  uint64_t seq;
  uint64_t key;  // time_key(t)
  EventKind kind;
  uint16_t core;
  uint8_t engine;
  uint32_t id;  // instruction index (ready) or pending id
  bool operator>(const Event& o) const { return key != o.key ? key > o.key : seq > o.seq; }
};

struct Pending {
  bool live = false;
  uint16_t core = 0;
  Engine engine = Engine::sync;
  uint32_t index = 0;
  uint32_t thread = 0;
  Clock snapshot;
};

struct EngineRun {
  size_t pc = 0;
  double next_issue = 0;
  double last_start = -1;
  double last_ii_cycles = 0;
  double last_finish = 0;
  const Rect* last_writes = nullptr;  // the engine writes of the last instruction issued
  uint16_t last_write_count = 0;
};

struct Semaphore {
  uint32_t value = 0;
  std::vector<std::pair<double, uint32_t>> history;  // (time, value after increment)
  Clock clock;
  std::vector<uint8_t> waiters;  // engines parked on this semaphore
};

// One engine's share of a transfer: `work` ns of engine time left at a full share, ready from
// `t0` (trigger + trigger latency).
struct DmaPart {
  uint32_t transfer;
  double t0;
  double work;
};

// A DMA queue's parts on one engine, first in first out.
class PartQueue {
 public:
  bool empty() const { return head_ == parts_.size(); }
  DmaPart& front() { return parts_[head_]; }
  const DmaPart& front() const { return parts_[head_]; }
  void push_back(const DmaPart& p) { parts_.push_back(p); }
  void pop_front() {
    if (++head_ == parts_.size()) {  // empty: start again at the front of the buffer
      parts_.clear();
      head_ = 0;
    } else if (head_ >= 64 && 2 * head_ >= parts_.size()) {  // mostly popped: drop them
      parts_.erase(parts_.begin(), parts_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<DmaPart> parts_;
  size_t head_ = 0;
};

struct DmaEngineRun {
  std::array<PartQueue, kDmaQueues> queues;
  uint32_t nonempty = 0;  // bit q: queues[q] holds parts
  double last = 0;        // parts are advanced up to this time
  size_t busy_index = SIZE_MAX;
  double busy_end = -1;
  bool idle() const { return nonempty == 0; }
  void push(int q, const DmaPart& part) {
    queues[q].push_back(part);
    nonempty |= 1u << q;
  }
  void pop(int q) {
    queues[q].pop_front();
    if (queues[q].empty()) nonempty &= ~(1u << q);
  }
};

// The DMA engines of a core are identical (§5.3), and most transfers are split evenly over all
// of them, so engines whose states are the same bits are simulated once, as a class: one state,
// one entry in the tick queue (at the slot of its home, its lowest engine), and each member's
// tick sequence number, so that events are ordered exactly as with one state and one tick per
// engine. Members are advanced together, to the same times, by the same arithmetic, so they
// stay the same bits; a transfer that treats them differently splits the class first, and
// engines that are idle when one transfer gives them the same work join one class.
struct DmaClass {
  DmaEngineRun run;
  uint32_t members = 0;  // bit i: engine i; 0: not a class (its engine belongs to another)
  bool ticking = false;  // a tick at tick_t is queued (at the home's slot)
  double tick_t = 0;
  std::array<uint64_t, kMaxDmaEnginesPerCore> seq{};  // per member: its tick's sequence number
  // The parts the class's last advance finished, (transfer, time), in order: each member
  // finishes them (Run::replay_done) where the engine on its own would have.
  std::vector<std::pair<uint32_t, double>> done;
  bool single() const { return (members & (members - 1)) == 0; }
};

// The DMA engines' next ticks (a part finishing or becoming ready), at most one per engine: a
// new one replaces the engine's last. Ordered as events are, by time and then sequence number.
class TickHeap {
 public:
  struct Tick {
    double t;
    uint64_t key;  // time_key(t)
    uint64_t seq;
    uint32_t slot;  // core * kMaxDmaEnginesPerCore + engine
  };
  void reset(size_t slots) {
    heap_.clear();
    pos_.assign(slots, kAbsent);
  }
  bool empty() const { return heap_.empty(); }
  const Tick& top() const { return heap_.front(); }
  // The tick after the top (null: none).
  const Tick* second() const {
    if (heap_.size() < 2) return nullptr;
    if (heap_.size() == 2) return &heap_[1];
    return before(heap_[2], heap_[1].key, heap_[1].seq) ? &heap_[2] : &heap_[1];
  }
  void set(uint32_t slot, double t, uint64_t seq) {
    const Tick k{t, time_key(t), seq, slot};
    if (pos_[slot] == kAbsent) {
      heap_.push_back(k);
      up(static_cast<uint32_t>(heap_.size() - 1), k);
    } else {
      sift(pos_[slot], k);
    }
  }
  void erase(uint32_t slot) {
    const uint32_t i = pos_[slot];
    if (i == kAbsent) return;
    pos_[slot] = kAbsent;
    const Tick last = heap_.back();
    heap_.pop_back();
    if (i < heap_.size()) sift(i, last);
  }
  static bool before(const Tick& a, uint64_t key, uint64_t seq) {
    return a.key != key ? a.key < key : a.seq < seq;
  }

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  // The sifts take the tick they place as a value and never read its old place back (a store
  // read back at once stalls).
  void place(uint32_t i, const Tick& k) {
    heap_[i] = k;
    pos_[k.slot] = i;
  }
  void sift(uint32_t i, const Tick& k) {
    if (i > 0 && before(k, heap_[(i - 1) / 2].key, heap_[(i - 1) / 2].seq))
      up(i, k);
    else
      down(i, k);
  }
  void up(uint32_t i, const Tick& k) {
    while (i > 0) {
      const uint32_t parent = (i - 1) / 2;
      if (!before(k, heap_[parent].key, heap_[parent].seq)) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, k);
  }
  void down(uint32_t i, const Tick& k) {
    const uint32_t n = static_cast<uint32_t>(heap_.size());
    for (;;) {
      uint32_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap_[child + 1], heap_[child].key, heap_[child].seq)) ++child;
      if (!before(heap_[child], k.key, k.seq)) break;
      place(i, heap_[child]);
      i = child;
    }
    place(i, k);
  }
  std::vector<Tick> heap_;
  std::vector<uint32_t> pos_;  // per slot: its index in heap_, or kAbsent
};

struct DmaTransfer {
  uint32_t pid = 0;
  uint16_t queue = 0;
  Engine issuer = Engine::sync;
  uint32_t index = 0, debug_id = kNoDebugId;
  int parts_left = 0;
  double first = 0, last_part = 0;
  bool started = false;
  uint64_t bytes = 0;
};

struct CoreRun {
  std::array<EngineRun, kNumEngines> engines;
  std::vector<Semaphore> sems;
  std::array<DmaClass, kMaxDmaEnginesPerCore> dma;        // indexed by home engine
  std::array<uint8_t, kMaxDmaEnginesPerCore> class_of{};  // per engine: its class's home
  std::vector<DmaTransfer> transfers;
  std::vector<uint32_t> free_transfers;
  std::array<std::deque<uint32_t>, kDmaQueues> queue_order;  // transfers not yet complete
  std::array<double, kDmaQueues> queue_done{};
  std::vector<std::pair<double, double>> dma_busy;
  CoreStats stats;
  uint32_t collectives_issued = 0;
  double sbuf_port_free = 0;  // NC-v2 VectorE/GpSimdE SBUF port
  double psum_port_free = 0;  // NC-v2 VectorE/ScalarE PSUM port
};

struct CollectiveGroup {
  std::vector<int> arrived;  // per core: -1 or pending id
  double last_arrival = 0;
  int count = 0;
};

// First time the semaphore reached `value` (history is increasing).
double reach_time(const Semaphore& s, uint32_t value) {
  // A wait is usually for one of the last few increments: looked for from the back first.
  const auto& h = s.history;
  size_t i = h.size();
  for (int k = 0; k < 4 && i > 0 && h[i - 1].second >= value; ++k) --i;
  if (i == 0 || h[i - 1].second < value) return i == h.size() ? 0.0 : h[i].first;
  auto it = std::lower_bound(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(i), value,
                             [](const auto& x, uint32_t v) { return x.second < v; });
  return it->first;
}

// Engine E of core `cr` moves data over [t, t_next): extends its last busy interval when this
// one follows it, else starts another.
void mark_busy(CoreRun& cr, DmaEngineRun& E, double t, double t_next) {
  if (E.busy_index != SIZE_MAX && E.busy_end == t) {
    cr.dma_busy[E.busy_index].second = t_next;
  } else {
    E.busy_index = cr.dma_busy.size();
    cr.dma_busy.emplace_back(t, t_next);
  }
  E.busy_end = t_next;
}

double merged_length(std::vector<std::pair<double, double>>& iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cur_s = 0, cur_e = -1;
  for (const auto& [s, e] : iv) {
    if (s > cur_e) {
      if (cur_e > cur_s) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (cur_e > cur_s) total += cur_e - cur_s;
  return total;
}

class Run {
 public:
  Run(const Target& t, const SimulatorOptions& o, const CostModel& cm, const ProgramTiming& pt,
      std::span<std::byte> hbm, std::vector<CoreMemory>& mem)
      : t_(t),
        opt_(o),
        cost_(cm),
        prog_(pt.program()),
        timing_(pt),
        tm_(pt.tables()),
        hbm_(hbm),
        mem_(mem) {
    for (int e = 0; e < kNumEngines; ++e)
      semaphore_latency_ns_[e] = cost_.semaphore_latency_ns(static_cast<Engine>(e));
  }

  Result<RunReport> go();

 private:
  // The cores run: the program's, or the copies of its core 0 the timing stands for.
  size_t ncores() const { return tm_.table_of_core.size(); }
  const CoreProgram& core_program(int core) const {
    return prog_.cores[tm_.copies_of_core0 ? 0 : core];
  }
  const Instruction& inst(int core, Engine e, uint32_t i) const {
    return core_program(core).streams[static_cast<int>(e)][i];
  }
  void push(double t, EventKind k, int core, int engine, uint32_t id) {
    events_.push(
        {t, seq_++, time_key(t), k, static_cast<uint16_t>(core), static_cast<uint8_t>(engine), id});
  }
  uint32_t thread_of(int core, int local) const { return core * kThreadsPerCore + local; }
  uint32_t new_pending(int core, Engine e, uint32_t index, uint32_t thread, const Clock& snap);

  // Engine `e` of `core` is ready at `now`: issues its instructions while it can and the next
  // one's ready event would be the next event out anyway, then queues that event or parks.
  Status on_ready(double now, int core, Engine e);
  // Issues the engine's next instruction at `now` if it can; `next`: when to try again (< 0:
  // parked on a semaphore, or the stream is done).
  Status issue(double now, int core, Engine e, double& next);
  // Whether an event at `t` queued now (with the newest sequence number) would be the next one
  // out of the event and tick queues.
  bool next_out(double t) const {
    const uint64_t k = time_key(t);
    return (events_.empty() || k < events_.top().key) && (ticks_.empty() || k < ticks_.top().key);
  }
  Status on_complete(double now, uint32_t pid, bool dma);
  // The DMA engines of class `h` (its home) of `core`: runs their queues' head parts up to
  // `until`. A class of one finishes the parts it ends at once (dma_part_done); a larger class
  // records them in `done`, and each member then finishes them (replay_done) where that engine
  // on its own would have.
  void dma_advance(int core, int h, double until);
  void replay_done(int core, int h);
  // The class's next tick (a part finishing or becoming ready) at or after `now`; infinity:
  // none.
  static double next_tick(const DmaEngineRun& E, double now);
  // Queues class `h`'s tick, ordered by its members' first sequence number, or drops it.
  void requeue(int core, int h);
  // Handles tick `k`, the first of the event and tick queues.
  void on_tick(const TickHeap::Tick& k);
  // Moves engines `mask` (some members of one class) into a class of their own, whose state is
  // a copy.
  void split(int core, uint32_t mask);
  // Before transfer `w`'s parts are pushed: classes split so that each one that holds an
  // engine of the transfer lies within its engines and takes one amount of work, and idle
  // classes given the same work join.
  void regroup(int core, const ProgramTiming::Tables::DmaStep& w);
  void dma_part_done(int core, uint32_t transfer, double t);
  Status on_collective(double now, uint32_t group);
  Status check_races(const Pending& p, const Operands& ops, const Clock& snap, uint32_t clock);
  Who who_of(uint64_t tag) const {
    const auto core = static_cast<uint16_t>(tag >> 40);
    const auto engine = static_cast<Engine>((tag >> 32) & 0xff);
    const auto index = static_cast<uint32_t>(tag);
    return {core, engine, index, inst(core, engine, index).opcode()};
  }
  // Delivers `sigs`. A signal to another core is where two cores meet outside a collective: a
  // deferred run applies (and, split over processes, swaps) every logged effect there first.
  Status signal(double now, int core, std::span<const SemaphoreSignal> sigs, const Clock& snap);
  void prune();
  // The context of the next instruction to execute, in completion order (`sequence` seeds
  // stochastic rounding, so it is taken in that order whether the effect is applied now or
  // deferred).
  ExecContext context(int core) { return context_at(core, exec_seq_++); }
  ExecContext context_at(int core, uint64_t sequence) {
    ExecContext c;
    c.target = &t_;
    c.hbm = hbm_.data();
    c.hbm_size = hbm_.size();
    c.core = &mem_[core];
    c.rounding = opt_.rounding;
    c.seed = opt_.stochastic_seed;
    c.sequence = sequence;
    c.parallel = opt_.parallel;
    return c;
  }
  // Applies every deferred functional effect: each core's in completion order (run_log), the
  // cores in parallel. The first error in completion order wins.
  Status flush_deferred();
  struct Deferred;
  // Applies core `c`'s log; on an error, the failing entry's index in the log, else the log's
  // size. `written` (with processes): the HBM ranges the entries before that wrote.
  std::pair<Status, size_t> run_log(int c, std::span<const Deferred> log,
                                    std::vector<ByteRange>* written);
  // The dependency graph of core `c`'s log in this flush: the program's, when an earlier run
  // made it for the same log, else made now and kept.
  const LogGraph& graph_of(int c, std::span<const Deferred> log);
  size_t flushes_ = 0;  // flush_deferred calls so far
  // With processes: swaps this process's HBM `written` ranges (and its first failure, at
  // completion sequence `failed_at`) with the other processes'.
  Status swap_writes(std::vector<ByteRange> written, const Status& failure, uint64_t failed_at);

  const Target& t_;
  const SimulatorOptions& opt_;
  const CostModel& cost_;
  const Program& prog_;
  const ProgramTiming& timing_;
  const ProgramTiming::Tables& tm_;
  std::array<double, kNumEngines> semaphore_latency_ns_{};  // per waiting engine (CostModel's)
  std::span<std::byte> hbm_;
  std::vector<CoreMemory>& mem_;

  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  TickHeap ticks_;
  uint64_t seq_ = 0;
  uint64_t exec_seq_ = 0;
  // Functional runs with `parallel` (or split over processes) defer each instruction's effect
  // to a per-core log, applied at the next collective, the next signal one core sends another,
  // and the end. Cores meet only there (anything else that crosses cores is a race the race
  // checker reports), so applying each log in order, the cores side by side, computes exactly
  // what applying every effect at its completion does. (The timing does not depend on the data,
  // so nothing waits for the effects.) Within a core, run_log applies a long log as a
  // dependency graph: the effects that touch no common byte run side by side.
  struct Deferred {
    uint64_t sequence;
    Engine engine;
    uint32_t index;
  };
  bool defer_ = false;
  std::vector<std::vector<Deferred>> deferred_;  // per core
  ProcessGroup* group_ = nullptr;                // opt_.processes
  std::vector<char> owned_;                      // per core: this process computes it
  std::vector<CoreRun> cores_;
  std::vector<Clock> clocks_;  // per thread
  std::vector<Pending> pending_;
  std::vector<uint32_t> free_pending_;
  std::vector<CollectiveGroup> groups_;
  DependencyTracker records_;  // seq = the access's thread clock, tag = tag_of(who)
  size_t prune_at_ = 4096;
  double end_time_ = 0;
  RunReport report_;
};

uint32_t Run::new_pending(int core, Engine e, uint32_t index, uint32_t thread, const Clock& snap) {
  uint32_t id;
  if (!free_pending_.empty()) {
    id = free_pending_.back();
    free_pending_.pop_back();
  } else {
    id = static_cast<uint32_t>(pending_.size());
    pending_.emplace_back();
  }
  Pending& p = pending_[id];
  p.live = true;
  p.core = static_cast<uint16_t>(core);
  p.engine = e;
  p.index = index;
  p.thread = thread;
  if (opt_.check_races) p.snapshot = snap;
  return id;
}

Status Run::on_ready(double now, int core, Engine e) {
  for (;;) {
    double next = -1;
    NEURONC_DEVICE_RETURN_IF_ERROR(issue(now, core, e, next));
    if (next < 0) return Status::ok();  // parked, or the stream is done
    if (!next_out(next)) {
      push(next, EventKind::ready, core, static_cast<int>(e), 0);
      return Status::ok();
    }
    // The engine's next ready event would be the next event out of both queues: handled now,
    // with the sequence number it would have had.
    ++seq_;
    now = next;
  }
}

Status Run::issue(double now, int core, Engine e, double& next) {
  CoreRun& cr = cores_[core];
  EngineRun& er = cr.engines[static_cast<int>(e)];
  const auto& stream = core_program(core).streams[static_cast<int>(e)];
  if (er.pc >= stream.size()) return Status::ok();
  const ProgramTiming::Tables::Step& step =
      tm_.steps[tm_.table_of_core[core]][static_cast<int>(e)][er.pc];
  const std::span<const SemaphoreWait> waits(tm_.waits.data() + step.waits, step.wait_count);
  double t = std::max(now, er.next_issue);
  for (const SemaphoreWait& w : waits) {
    Semaphore& s = cr.sems[w.semaphore];
    if (s.value < w.value) {
      if (std::find(s.waiters.begin(), s.waiters.end(), static_cast<uint8_t>(e)) == s.waiters.end())
        s.waiters.push_back(static_cast<uint8_t>(e));
      return Status::ok();  // parked until a signal wakes us
    }
    t = std::max(t, reach_time(s, w.value) + semaphore_latency_ns_[static_cast<int>(e)]);
  }
  const Rect* reads = tm_.rects.data() + step.rects;
  if (er.last_start >= 0 && er.last_write_count > 0) {
    bool dep = false;
    for (const Rect* r = reads; r != reads + step.reads; ++r)
      for (const Rect* w = er.last_writes; w != er.last_writes + er.last_write_count; ++w)
        dep = dep || overlaps(*r, *w);
    if (dep) t = std::max(t, er.last_start + cost_.dependent_issue_ns(e, er.last_ii_cycles));
  }
  // NC-v2 port exclusivity (ARCH2, §3.5): VectorE and GpSimdE cannot access SBUF at the same
  // time, VectorE and ScalarE cannot access PSUM at the same time; the model serialises them.
  if (step.sbuf_port) t = std::max(t, cr.sbuf_port_free);
  if (step.psum_port) t = std::max(t, cr.psum_port_free);
  if (t > now) {
    next = t;
    return Status::ok();
  }

  // Issue at `now`.
  const uint32_t index = static_cast<uint32_t>(er.pc);
  const InstructionCost& c = step.cost;
  const uint32_t thread = thread_of(core, static_cast<int>(e));
  Clock snap;
  if (opt_.check_races) {
    Clock& clk = clocks_[thread];
    for (const SemaphoreWait& w : waits) join(clk, cr.sems[w.semaphore].clock);
    ++clk[thread];
    snap = clk;
  }
  EngineStats& es = cr.stats.engines[static_cast<int>(e)];
  es.busy_ns += c.ii_ns;
  es.instructions += 1;
  cr.stats.tensor_flops += c.tensor_flops;
  er.next_issue = now + c.ii_ns;
  er.last_start = now;
  er.last_ii_cycles = c.ii_cycles;
  er.last_writes = reads + step.reads;  // a DMA trigger's are none: it writes through no engine
  er.last_write_count = step.writes;
  if (step.sbuf_port) cr.sbuf_port_free = now + c.ii_ns;
  if (step.psum_port) cr.psum_port_free = now + c.ii_ns;
  ++report_.instructions;
  // The instruction itself is only read for what a trace or a collective needs.
  const Instruction& in = stream[index];
  if (opt_.trace)
    report_.trace.push_back({static_cast<uint16_t>(core), std::string(engine_name(e)), now,
                             now + c.ii_ns, in.opcode(), e, index, in.debug_id, 0});

  if (step.dma != UINT32_MAX) {
    const ProgramTiming::Tables::DmaStep& w = tm_.dmas[step.dma];
    const uint32_t qthread = thread_of(core, kNumEngines + w.queue);
    Clock qsnap;
    if (opt_.check_races) {
      Clock& q = clocks_[qthread];
      join(q, snap);
      ++q[qthread];
      qsnap = q;
    }
    double t0 = now + c.ii_ns + w.start_delay_ns;
    if (w.swdge_ns > 0) {
      // Software DGE (DGE): GpSimd writes the descriptors once it is free, and holds its own
      // next instruction until they are written; the transfer starts after them.
      EngineRun& g = cr.engines[static_cast<int>(Engine::gpsimd)];
      const double g0 = std::max(now + c.ii_ns, g.next_issue);
      g.next_issue = g0 + w.swdge_ns;
      cr.stats.engines[static_cast<int>(Engine::gpsimd)].busy_ns += w.swdge_ns;
      t0 = g.next_issue + w.start_delay_ns;
    }
    double rate = w.rate;
    const bool uses_hbm = w.hbm_read_bytes + w.hbm_write_bytes > 0;
    if (uses_hbm) {
      // One HBM pool per chip (§1): this core's share divided among its active engines.
      int active = 0;
      for (int i = 0; i < t_.dma_engines_per_core; ++i) {
        const int h = cr.class_of[i];
        if (i == h) dma_advance(core, h, now);
        replay_done(core, h);
        active += (!cr.dma[h].run.idle() || (w.engines >> i & 1u));
      }
      const double pool = t_.hbm_gbps_per_chip /
                          std::max<double>(1.0, std::min<double>(ncores(), t_.cores_per_chip));
      rate = std::min(rate, pool / std::max(1, active));
    }
    uint32_t x;
    if (!cr.free_transfers.empty()) {
      x = cr.free_transfers.back();
      cr.free_transfers.pop_back();
    } else {
      x = static_cast<uint32_t>(cr.transfers.size());
      cr.transfers.emplace_back();
    }
    {
      DmaTransfer& tr = cr.transfers[x];
      tr = DmaTransfer{};
      tr.pid = new_pending(core, e, index, qthread, qsnap);
      tr.queue = w.queue;
      tr.issuer = e;
      tr.index = index;
      if (opt_.trace) tr.debug_id = in.debug_id;
      tr.first = tr.last_part = t0;
      tr.bytes = w.total_bytes;
    }
    cr.queue_order[w.queue].push_back(x);
    regroup(core, w);
    // Each engine in turn: advanced to now, given its part and its next tick. A class is
    // advanced and given the part at its home (its first engine here), and each member finishes
    // what the advance finished and takes its tick's sequence number in its turn.
    for (uint32_t k = w.shares; k < w.shares + w.share_count; ++k) {
      const ProgramTiming::Tables::DmaShare& sh = tm_.shares[k];
      const int i = static_cast<int>(sh.engine);
      const int h = cr.class_of[i];
      DmaClass& C = cr.dma[h];
      if (i == h) {
        dma_advance(core, h, now);
        replay_done(core, h);
        C.run.push(w.queue,
                   {x, t0, cost_.dma_engine_ns(sh.rate_weighted_bytes, sh.descriptors, rate)});
        C.tick_t = next_tick(C.run, now);
      } else {
        replay_done(core, h);
      }
      ++cr.transfers[x].parts_left;
      if (C.tick_t != std::numeric_limits<double>::infinity()) C.seq[i] = seq_++;
      if (i == static_cast<int>(std::bit_width(C.members)) - 1) {  // its last member
        C.ticking = C.tick_t != std::numeric_limits<double>::infinity();
        requeue(core, h);
      }
    }
    cr.stats.dma_transfers += 1;
    cr.stats.dma_bytes += w.total_bytes;
    report_.hbm_read_bytes += w.hbm_read_bytes;
    report_.hbm_write_bytes += w.hbm_write_bytes;
    report_.sb_read_bytes += w.sbuf_read_bytes;
    report_.sb_write_bytes += w.sbuf_write_bytes;
    if (cr.transfers[x].parts_left == 0) {  // nothing to move: done after the trigger
      cr.transfers[x].parts_left = 1;
      dma_part_done(core, x, t0);
    }
  } else if (step.collective) {
    const uint32_t cthread = thread_of(core, kNumEngines + kDmaQueues);
    Clock csnap;
    if (opt_.check_races) {
      Clock& q = clocks_[cthread];
      join(q, snap);
      csnap = q;
    }
    const uint32_t g = cr.collectives_issued++;
    if (groups_.size() <= g) {
      groups_.resize(g + 1);
      groups_[g].arrived.assign(ncores(), -1);
    }
    CollectiveGroup& grp = groups_[g];
    grp.arrived[core] = static_cast<int>(new_pending(core, e, index, cthread, csnap));
    grp.last_arrival = std::max(grp.last_arrival, now + c.ii_ns);
    if (++grp.count == static_cast<int>(ncores())) {
      const double done = grp.last_arrival + cost_.collective_ns(std::get<Collective>(in.op),
                                                                 static_cast<int>(ncores()));
      if (opt_.trace)
        report_.trace.push_back({static_cast<uint16_t>(core), "collective", grp.last_arrival, done,
                                 Opcode::collective, e, index, in.debug_id, 0});
      push(done, EventKind::collective_done, core, 0, g);
    }
  } else {
    const double finish = std::max(now + c.ii_ns + c.latency_ns, er.last_finish);
    er.last_finish = finish;
    if (!opt_.functional && !opt_.check_races && step.signal_count == 0) {
      // Its completion would change nothing but the end time (a maximum, whatever the order):
      // no event.
      end_time_ = std::max(end_time_, finish);
    } else {
      const uint32_t pid = new_pending(core, e, index, thread, snap);
      push(finish, EventKind::complete, core, static_cast<int>(e), pid);
    }
  }
  ++er.pc;
  next = er.next_issue;
  return Status::ok();
}

void Run::dma_advance(int core, int h, double until) {
  CoreRun& cr = cores_[core];
  DmaClass& C = cr.dma[h];
  DmaEngineRun& E = C.run;
  C.done.clear();
  if (E.nonempty == 0 || until <= E.last) {  // nothing to run
    E.last = std::max(E.last, until);
    return;
  }
  const bool single = C.single();
  auto finished = [&](uint32_t x, double t) {
    if (single)
      dma_part_done(core, x, t);
    else
      C.done.emplace_back(x, t);
  };
  double t = E.last;
  while (t < until && E.nonempty) {
    if ((E.nonempty & (E.nonempty - 1)) == 0) {
      // One queue: the general step below with n = 1 and nothing else to become ready, its
      // arithmetic unchanged (x * 1 and x / 1 are x).
      const int q = std::countr_zero(E.nonempty);
      DmaPart& h = E.queues[q].front();
      if (h.t0 > t) {
        if (h.t0 > until) break;
        t = h.t0;
        continue;
      }
      DmaTransfer& tr = cr.transfers[h.transfer];
      if (!tr.started) tr.first = t;
      tr.started = true;
      const double t_finish = t + h.work;
      const double t_next = std::min(t_finish, until);
      mark_busy(cr, E, t, t_next);
      const double share = t_next - t;
      const bool done = t_next == t_finish || h.work - share <= 1e-9;
      h.work = std::max(0.0, h.work - share);
      if (done) {
        const uint32_t x = h.transfer;
        E.pop(q);
        finished(x, t_next);
      }
      t = t_next;
      continue;
    }
    // The queues whose head part is ready share the engine equally.
    int n = 0;
    double min_work = std::numeric_limits<double>::infinity();
    double next_ready = std::numeric_limits<double>::infinity();
    for (uint32_t m = E.nonempty; m; m &= m - 1) {
      const DmaPart& h = E.queues[std::countr_zero(m)].front();
      if (h.t0 <= t) {
        ++n;
        min_work = std::min(min_work, h.work);
        DmaTransfer& tr = cr.transfers[h.transfer];
        if (!tr.started) tr.first = t;
        tr.started = true;
      } else {
        next_ready = std::min(next_ready, h.t0);
      }
    }
    if (n == 0) {
      if (next_ready > until) break;
      t = next_ready;
      continue;
    }
    const double t_finish = t + min_work * n;
    const double t_next = std::min({t_finish, next_ready, until});
    // x / 1 is x exactly: the division (its latency) only where the engine is shared.
    const double share = n == 1 ? t_next - t : (t_next - t) / n;
    mark_busy(cr, E, t, t_next);
    const bool finishing = t_next == t_finish;
    for (uint32_t m = E.nonempty; m; m &= m - 1) {
      const int q = std::countr_zero(m);
      DmaPart& h = E.queues[q].front();
      if (h.t0 > t) continue;
      const bool done = (finishing && h.work <= min_work) || h.work - share <= 1e-9;
      h.work = std::max(0.0, h.work - share);
      if (!done) continue;
      const uint32_t x = h.transfer;
      E.pop(q);
      finished(x, t_next);
    }
    t = t_next;
  }
  E.last = std::max(E.last, until);
}

void Run::replay_done(int core, int h) {
  for (const auto& [x, t] : cores_[core].dma[h].done) dma_part_done(core, x, t);
}

double Run::next_tick(const DmaEngineRun& E, double now) {
  if (E.nonempty != 0 && (E.nonempty & (E.nonempty - 1)) == 0) {  // one queue (as below, n = 1)
    const DmaPart& h = E.queues[std::countr_zero(E.nonempty)].front();
    return h.t0 <= now ? now + h.work : h.t0;
  }
  int n = 0;
  double min_work = std::numeric_limits<double>::infinity();
  double next = std::numeric_limits<double>::infinity();
  for (uint32_t m = E.nonempty; m; m &= m - 1) {
    const DmaPart& h = E.queues[std::countr_zero(m)].front();
    if (h.t0 <= now) {
      ++n;
      min_work = std::min(min_work, h.work);
    } else {
      next = std::min(next, h.t0);
    }
  }
  if (n > 0) next = std::min(next, now + min_work * n);
  return next;
}

void Run::requeue(int core, int h) {
  const DmaClass& C = cores_[core].dma[h];
  const auto slot = static_cast<uint32_t>(core * kMaxDmaEnginesPerCore + h);
  if (!C.ticking) {
    ticks_.erase(slot);
    return;
  }
  uint64_t first = std::numeric_limits<uint64_t>::max();
  for (uint32_t m = C.members; m; m &= m - 1) first = std::min(first, C.seq[std::countr_zero(m)]);
  ticks_.set(slot, C.tick_t, first);
}

void Run::on_tick(const TickHeap::Tick& k) {
  const int core = static_cast<int>(k.slot / kMaxDmaEnginesPerCore);
  const int h = static_cast<int>(k.slot % kMaxDmaEnginesPerCore);
  DmaClass& C = cores_[core].dma[h];
  // The members in the order of their ticks (usually their engine order).
  std::array<uint8_t, kMaxDmaEnginesPerCore> order{};
  int n = 0;
  bool sorted = true;
  for (uint32_t m = C.members; m; m &= m - 1) {
    order[n] = static_cast<uint8_t>(std::countr_zero(m));
    sorted = sorted && (n == 0 || C.seq[order[n - 1]] < C.seq[order[n]]);
    ++n;
  }
  if (!sorted)
    std::sort(order.begin(), order.begin() + n,
              [&](uint8_t a, uint8_t b) { return C.seq[a] < C.seq[b]; });
  const uint64_t last = C.seq[order[n - 1]];
  if (last - C.seq[order[0]] + 1 != static_cast<uint64_t>(n)) {
    // Another event or tick that comes between two members' ticks is handled between them: the
    // class splits into its engines, each with its own tick.
    const bool between =
        (!events_.empty() && events_.top().key == k.key && events_.top().seq < last) ||
        (ticks_.second() && ticks_.second()->key == k.key && ticks_.second()->seq < last);
    if (between) {
      for (uint32_t m = C.members & ~(1u << h); m; m &= m - 1) split(core, m & -m);
      return;  // go() takes the first tick again
    }
  }
  dma_advance(core, h, k.t);
  C.tick_t = next_tick(C.run, k.t);
  C.ticking = C.tick_t != std::numeric_limits<double>::infinity();
  for (int j = 0; j < n; ++j) {
    replay_done(core, h);
    if (C.ticking) C.seq[order[j]] = seq_++;
  }
  requeue(core, h);
}

void Run::split(int core, uint32_t mask) {
  CoreRun& cr = cores_[core];
  const int from = cr.class_of[std::countr_zero(mask)];
  DmaClass& C = cr.dma[from];
  // The engines that leave: `mask`, or the rest when `mask` holds the home.
  const uint32_t leaving = (mask >> from & 1u) ? C.members & ~mask : mask;
  const int to = std::countr_zero(leaving);
  DmaClass& D = cr.dma[to];
  D.run = C.run;
  // Its own busy intervals from here (the dma_active union is the same however marks are kept).
  D.run.busy_index = SIZE_MAX;
  D.run.busy_end = -1;
  D.members = leaving;
  D.ticking = C.ticking;
  D.tick_t = C.tick_t;
  D.seq = C.seq;
  D.done.clear();
  for (uint32_t m = leaving; m; m &= m - 1)
    cr.class_of[std::countr_zero(m)] = static_cast<uint8_t>(to);
  C.members &= ~leaving;
  requeue(core, from);
  requeue(core, to);
}

void Run::regroup(int core, const ProgramTiming::Tables::DmaStep& w) {
  CoreRun& cr = cores_[core];
  const int engines = t_.dma_engines_per_core;
  std::array<const ProgramTiming::Tables::DmaShare*, kMaxDmaEnginesPerCore> share{};
  for (uint32_t k = w.shares; k < w.shares + w.share_count; ++k)
    share[tm_.shares[k].engine] = &tm_.shares[k];
  auto same_work = [&](int a, int b) {
    const auto *x = share[a], *y = share[b];
    if (!x || !y) return x == y;
    return x->descriptors == y->descriptors && x->rate_weighted_bytes == y->rate_weighted_bytes;
  };
  // Split: a class keeps the members whose work is its home's (a split-off class has a higher
  // home, visited later).
  for (int h = 0; h < engines; ++h) {
    if (cr.class_of[h] != h || cr.dma[h].single()) continue;
    uint32_t others = 0;
    for (uint32_t m = cr.dma[h].members & (cr.dma[h].members - 1); m; m &= m - 1)
      if (!same_work(h, std::countr_zero(m))) others |= m & -m;
    if (others) split(core, others);
  }
  if (!opt_.dma_engine_classes) return;
  // Join: the idle classes given the same work (each advance to now would only set `last`, and
  // a part's arithmetic starts at its ready time, after now).
  std::array<int, kMaxDmaEnginesPerCore> idle;  // homes of idle classes, one per work
  int idles = 0;
  for (int i = 0; i < engines; ++i) {
    if (!share[i] || cr.class_of[i] != i || !cr.dma[i].run.idle()) continue;
    int into = -1;
    for (int j = 0; j < idles && into < 0; ++j)
      if (same_work(idle[j], i)) into = idle[j];
    if (into < 0) {
      idle[idles++] = i;
      continue;
    }
    DmaClass& A = cr.dma[into];
    DmaClass& B = cr.dma[i];
    A.run.last = std::max(A.run.last, B.run.last);
    for (uint32_t m = B.members; m; m &= m - 1)
      cr.class_of[std::countr_zero(m)] = static_cast<uint8_t>(into);
    A.members |= B.members;
    // Every member takes a new tick in the loop that follows (an idle class's queued tick would
    // change nothing but `last`).
    B.members = 0;
    B.ticking = false;
    requeue(core, i);
  }
}

void Run::dma_part_done(int core, uint32_t x, double t) {
  CoreRun& cr = cores_[core];
  DmaTransfer& tr = cr.transfers[x];
  tr.last_part = std::max(tr.last_part, t);
  if (--tr.parts_left > 0) return;
  // In order within a queue: complete this transfer and any later ones it held back.
  auto& order = cr.queue_order[tr.queue];
  while (!order.empty() && cr.transfers[order.front()].parts_left == 0) {
    const uint32_t y = order.front();
    order.pop_front();
    const DmaTransfer& d = cr.transfers[y];
    const double finish = std::max(d.last_part, cr.queue_done[d.queue]);
    cr.queue_done[d.queue] = finish;
    if (opt_.trace)
      report_.trace.push_back({static_cast<uint16_t>(core), "dma.q" + to_string(d.queue), d.first,
                               finish, Opcode::dma_copy, d.issuer, d.index, d.debug_id, d.bytes});
    push(finish, EventKind::dma_done, core, static_cast<int>(d.issuer), d.pid);
    cr.free_transfers.push_back(y);
  }
}

Status Run::check_races(const Pending& p, const Operands& ops, const Clock& snap, uint32_t clock) {
  const Who who{p.core, p.engine, p.index, inst(p.core, p.engine, p.index).opcode()};
  auto one = [&](const MemRef& m, bool write) -> Status {
    const Rect r = rect_of(m, p.core);
    // Unordered: the access did not happen before this one.
    const MemoryAccess* a = records_.find_conflict(
        r, write, p.thread, [&](const MemoryAccess& x) { return snap[x.thread] < x.seq; });
    if (a) {
      return failed_precondition("race: " + who.str() + (write ? " writes " : " reads ") +
                                 describe(r) + " while " + who_of(a->tag).str() +
                                 (a->write ? " writes " : " reads ") + describe(a->rect) +
                                 "; no semaphore orders them");
    }
    records_.add({r, write, p.thread, clock, tag_of(who)});
    return Status::ok();
  };
  for (const MemRef& m : ops.reads) NEURONC_DEVICE_RETURN_IF_ERROR(one(m, false));
  for (const MemRef& m : ops.writes) NEURONC_DEVICE_RETURN_IF_ERROR(one(m, true));
  if (records_.size() > prune_at_) prune();
  return Status::ok();
}

// Drops records every future access is already ordered after.
void Run::prune() {
  const size_t n = clocks_.size();
  Clock low(n, UINT32_MAX);
  for (size_t c = 0; c < ncores(); ++c)
    for (int e = 0; e < kNumEngines; ++e) {
      if (cores_[c].engines[e].pc >= core_program(int(c)).streams[e].size()) continue;
      const Clock& k = clocks_[thread_of(static_cast<int>(c), e)];
      for (size_t i = 0; i < n; ++i) low[i] = std::min(low[i], k[i]);
    }
  for (const Pending& p : pending_)
    if (p.live)
      for (size_t i = 0; i < n; ++i) low[i] = std::min(low[i], p.snapshot[i]);
  records_.erase_if([&](const MemoryAccess& a) { return a.seq <= low[a.thread]; });
  prune_at_ = std::max<size_t>(4096, 2 * records_.size());
}

Status Run::signal(double now, int core, std::span<const SemaphoreSignal> sigs, const Clock& snap) {
  for (const SemaphoreSignal& s : sigs) {
    // A copy of core 0 signals itself where core 0 signals core 0 (replicate.h).
    const int target = s.core == kThisCore || tm_.replica[core] ? core : s.core;
    if (defer_ && target != core) NEURONC_DEVICE_RETURN_IF_ERROR(flush_deferred());
    Semaphore& sem = cores_[target].sems[s.semaphore];
    sem.value += s.increment;
    sem.history.emplace_back(now, sem.value);
    if (opt_.check_races) join(sem.clock, snap);
    for (uint8_t e : sem.waiters) push(now, EventKind::ready, target, e, 0);
    sem.waiters.clear();
  }
  return Status::ok();
}

Status Run::on_complete(double now, uint32_t pid, bool dma) {
  Pending p = pending_[pid];
  pending_[pid].live = false;
  free_pending_.push_back(pid);
  const Instruction& in = inst(p.core, p.engine, p.index);
  if (opt_.functional && defer_) {
    deferred_[p.core].push_back({exec_seq_++, p.engine, p.index});
  } else if (opt_.functional) {
    Status st = execute(context(p.core), p.engine, in.op);
    if (!st.is_ok()) return st.with_context(Who{p.core, p.engine, p.index, in.opcode()}.str());
  }
  if (opt_.check_races) {
    NEURONC_DEVICE_RETURN_IF_ERROR(
        check_races(p, operands(in.op), p.snapshot, p.snapshot[p.thread]));
  }
  (void)dma;
  const ProgramTiming::Tables::Step& step =
      tm_.steps[tm_.table_of_core[p.core]][static_cast<int>(p.engine)][p.index];
  NEURONC_DEVICE_RETURN_IF_ERROR(
      signal(now, p.core, {tm_.signals.data() + step.signals, step.signal_count}, p.snapshot));
  end_time_ = std::max(end_time_, now);
  return Status::ok();
}

Status Run::on_collective(double now, uint32_t g) {
  CollectiveGroup& grp = groups_[g];
  std::vector<Collective> ops;
  Clock joined;
  if (opt_.check_races) {
    joined.assign(clocks_.size(), 0);
    for (int pid : grp.arrived) join(joined, pending_[pid].snapshot);
  }
  for (size_t c = 0; c < grp.arrived.size(); ++c) {
    const Pending& p = pending_[grp.arrived[c]];
    ops.push_back(std::get<Collective>(inst(p.core, p.engine, p.index).op));
  }
  if (opt_.functional) {
    NEURONC_DEVICE_RETURN_IF_ERROR(flush_deferred());
    const Collective& a = ops[0];
    for (const Collective& b : ops)
      if (b.kind != a.kind || b.op != a.op)
        return failed_precondition("collective " + to_string(g) + " differs between cores: " +
                                   std::string(collective_name(a.kind)) + " vs " +
                                   std::string(collective_name(b.kind)));
    Status st = execute_collective(context(0), ops);
    if (!st.is_ok()) return st.with_context("collective " + to_string(g));
  }
  for (size_t c = 0; c < grp.arrived.size(); ++c) {
    const uint32_t pid = static_cast<uint32_t>(grp.arrived[c]);
    Pending p = pending_[pid];
    pending_[pid].live = false;
    free_pending_.push_back(pid);
    Clock snap;
    if (opt_.check_races) {
      Clock& q = clocks_[p.thread];
      join(q, joined);
      ++q[p.thread];
      snap = q;
      p.snapshot = snap;
      NEURONC_DEVICE_RETURN_IF_ERROR(
          check_races(p, operands(inst(p.core, p.engine, p.index).op), snap, snap[p.thread]));
    }
    NEURONC_DEVICE_RETURN_IF_ERROR(
        signal(now, p.core, inst(p.core, p.engine, p.index).signals, snap));
  }
  end_time_ = std::max(end_time_, now);
  return Status::ok();
}

Status Run::flush_deferred() {
  const size_t ncores = deferred_.size();
  std::vector<Status> failed(ncores, Status::ok());
  std::vector<uint64_t> failed_at(ncores, std::numeric_limits<uint64_t>::max());
  std::vector<std::vector<ByteRange>> written(group_ ? ncores : 0);
  auto flush = [&](size_t c) {
    if (!owned_[c]) return;
    auto [st, at] = run_log(int(c), deferred_[c], group_ ? &written[c] : nullptr);
    if (st.is_ok()) return;
    failed[c] = std::move(st);
    failed_at[c] = deferred_[c][at].sequence;
  };
  if (ncores == 1)
    flush(0);
  else
    tbb::parallel_for(size_t{0}, ncores, flush);
  for (auto& log : deferred_) log.clear();
  ++flushes_;
  const size_t first =
      size_t(std::min_element(failed_at.begin(), failed_at.end()) - failed_at.begin());
  const Status mine = ncores ? failed[first] : Status::ok();
  if (!group_) return mine;
  std::vector<ByteRange> all;
  for (auto& w : written) all.insert(all.end(), w.begin(), w.end());
  return swap_writes(std::move(all), mine, ncores ? failed_at[first] : failed_at.size());
}

// The dependency graph of one core's log: entry j follows entry i < j when their effects touch a
// common byte and one of them writes it (DependencyTracker's conflict, recorded in log order
// and retiring what a later access covers). Rects are the operands' (an indirect DMA's whole
// table), PSUM ones widened to whole 4-byte words: an effect that writes PSUM also sets each
// word's accumulation flag (CoreMemory::psum_from_matmul), so two writes into one word are
// ordered even when their bytes are not shared. Entries with no path between them touch no
// common byte, so applying them in any order, or at once, computes what the log does in order.
template <typename Log>
LogGraph log_graph(const Program& prog, int core, const Log& log) {
  const size_t n = log.size();
  DependencyTracker tracker;
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // (before, after)
  std::vector<uint32_t> deps;
  std::vector<MemoryAccess> accesses;
  for (size_t i = 0; i < n; ++i) {
    const Instruction& in = prog.cores[core].streams[static_cast<int>(log[i].engine)][log[i].index];
    const Operands ops = operands(in.op);
    const auto self = static_cast<uint32_t>(i);
    accesses.clear();
    auto add = [&](const MemRef& m, bool write) {
      Rect r = rect_of(m, core);
      if (r.memory == MemoryKind::psum) {
        r.b0 &= ~int64_t{3};
        r.b1 = (r.b1 + 3) & ~int64_t{3};
      }
      accesses.push_back({r, write, self, self, self});
    };
    for (const MemRef& m : ops.reads) add(m, false);
    for (const MemRef& m : ops.writes) add(m, true);
    deps.clear();
    tracker.add_retiring_after_conflicts(
        accesses, [&](const MemoryAccess& a) { deps.push_back(static_cast<uint32_t>(a.tag)); });
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (uint32_t d : deps) edges.emplace_back(d, self);
  }
  LogGraph g;
  g.indegree.assign(n, 0);
  g.first.assign(n + 1, 0);
  for (const auto& [a, b] : edges) {
    ++g.first[a + 1];
    ++g.indegree[b];
  }
  for (size_t i = 0; i < n; ++i) g.first[i + 1] += g.first[i];
  g.succ.resize(edges.size());
  std::vector<uint32_t> fill(g.first.begin(), g.first.end() - 1);
  for (const auto& [a, b] : edges) g.succ[fill[a]++] = b;
  return g;
}

const LogGraph& Run::graph_of(int c, std::span<const Deferred> log) {
  std::vector<uint64_t> key(log.size());
  for (size_t i = 0; i < log.size(); ++i)
    key[i] = uint64_t(static_cast<uint8_t>(log[i].engine)) << 32 | log[i].index;
  ProgramTiming::LogGraphs& kept = timing_.log_graphs();
  {
    std::lock_guard<std::mutex> lock(kept.mutex);
    for (const auto& e : kept.entries)
      if (e.flush == flushes_ && e.core == c && e.log == key) return *e.graph;
  }
  // Kept for the program's life (entries are only added), so the reference stays valid.
  auto made = std::make_shared<const LogGraph>(log_graph(prog_, c, log));
  const LogGraph& graph = *made;
  std::lock_guard<std::mutex> lock(kept.mutex);
  kept.entries.push_back({flushes_, c, std::move(key), std::move(made)});
  return graph;
}

std::pair<Status, size_t> Run::run_log(int c, std::span<const Deferred> log,
                                       std::vector<ByteRange>* written) {
  auto apply = [&](size_t i) -> Status {
    const Deferred& d = log[i];
    const Instruction& in = inst(c, d.engine, d.index);
    Status st = execute(context_at(c, d.sequence), d.engine, in.op);
    if (!st.is_ok()) return st.with_context(Who{uint16_t(c), d.engine, d.index, in.opcode()}.str());
    return st;
  };
  // The HBM writes of entries [0, end), in log order.
  auto record_writes = [&](size_t end) {
    if (!written) return;
    for (size_t i = 0; i < end; ++i)
      for (const MemRef& w : operands(inst(c, log[i].engine, log[i].index).op).writes)
        if (w.memory == MemoryKind::hbm) written->push_back(footprint(w));
  };
  // A short log is not worth a graph (assumption: a graph costs about what a few dozen small
  // effects do).
  constexpr size_t kGraphMin = 32;
  if (!opt_.parallel || log.size() < kGraphMin) {
    for (size_t i = 0; i < log.size(); ++i) {
      Status st = apply(i);
      if (!st.is_ok()) {
        record_writes(i);
        return {std::move(st), i};
      }
    }
    record_writes(log.size());
    return {Status::ok(), log.size()};
  }
  const LogGraph& g = graph_of(c, log);
  const size_t n = log.size();
  std::vector<std::atomic<uint32_t>> pending(n);
  std::vector<uint32_t> roots;
  for (size_t i = 0; i < n; ++i) {
    pending[i].store(g.indegree[i], std::memory_order_relaxed);
    if (g.indegree[i] == 0) roots.push_back(static_cast<uint32_t>(i));
  }
  // The first failing entry in log order wins, as in a serial run: once an entry fails, the
  // entries after it are not applied (those before it all are: they come first or are
  // independent).
  std::atomic<size_t> failed_at{n};
  std::mutex failures_mutex;
  std::vector<std::pair<size_t, Status>> failures;  // (entry, its error), any order
#if defined(__SANITIZE_THREAD__)
  // The join below is made inside libtbb, which ThreadSanitizer cannot see (tests/sanitizers/
  // tsan.supp): each task releases here and the caller acquires after the join, so TSan sees the
  // order the join gives (a task's last `pending` update before the vector is freed). Only
  // -fsanitize=thread builds have it.
  std::atomic<size_t> tasks_done{0};
#endif
  tbb::parallel_for_each(roots.begin(), roots.end(), [&](uint32_t i, tbb::feeder<uint32_t>& feed) {
    if (i < failed_at.load(std::memory_order_relaxed)) {
      Status st = apply(i);
      if (!st.is_ok()) {
        {
          std::lock_guard<std::mutex> lock(failures_mutex);
          failures.emplace_back(i, std::move(st));
        }
        size_t cur = failed_at.load(std::memory_order_relaxed);
        while (i < cur && !failed_at.compare_exchange_weak(cur, i)) {
        }
      }
    }
    for (uint32_t k = g.first[i]; k < g.first[i + 1]; ++k)
      if (pending[g.succ[k]].fetch_sub(1, std::memory_order_acq_rel) == 1) feed.add(g.succ[k]);
#if defined(__SANITIZE_THREAD__)
    tasks_done.fetch_add(1, std::memory_order_release);
#endif
  });
#if defined(__SANITIZE_THREAD__)
  (void)tasks_done.load(std::memory_order_acquire);
#endif
  const size_t at = failed_at.load();
  record_writes(at);
  for (auto& [i, st] : failures)
    if (i == at) return {std::move(st), at};
  return {Status::ok(), n};
}

// The message processes swap at a collective: the first failure of this process's cores (its
// completion sequence, code and message), then the HBM ranges its cores wrote and their bytes.
class Wire {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_bytes(std::span<const std::byte> b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::span<const std::byte> b) : b_(b) {}
  template <typename T>
  bool get(T& v) {
    if (b_.size() - at_ < sizeof(T)) return false;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  std::span<const std::byte> take(uint64_t n) {
    if (b_.size() - at_ < n) return {};
    const auto s = b_.subspan(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == b_.size(); }

 private:
  std::span<const std::byte> b_;
  size_t at_ = 0;
};

Status Run::swap_writes(std::vector<ByteRange> written, const Status& failure, uint64_t failed_at) {
  // This process's writes, merged.
  std::sort(written.begin(), written.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> merged;
  for (const ByteRange& r : written) {
    if (r.end <= r.begin) continue;
    if (!merged.empty() && r.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, r.end);
    else
      merged.push_back(r);
  }
  Wire w;
  w.put(failure.is_ok() ? std::numeric_limits<uint64_t>::max() : failed_at);
  w.put(static_cast<uint32_t>(failure.code()));
  w.put(static_cast<uint64_t>(failure.message().size()));
  w.put_bytes(std::as_bytes(std::span(failure.message())));
  w.put(static_cast<uint64_t>(merged.size()));
  for (const ByteRange& r : merged) {
    w.put(r.begin);
    w.put(r.end);
  }
  for (const ByteRange& r : merged) w.put_bytes(hbm_.subspan(r.begin, r.end - r.begin));
  auto gathered = group_->all_gather(w.bytes());
  if (!gathered) return gathered.status().with_context("swapping hbm writes between processes");
  const std::vector<std::vector<std::byte>>& all = *gathered;
  if (all.size() != static_cast<size_t>(group_->size()))
    return failed_precondition("swapping hbm writes: expected " + to_string(group_->size()) +
                               " processes' messages, received " + to_string(all.size()));
  // Decode every message; the first failure in completion order, over all processes, wins.
  struct Sent {
    int process;
    ByteRange range;
    std::span<const std::byte> bytes;
  };
  std::vector<Sent> sent;
  uint64_t first_at = std::numeric_limits<uint64_t>::max();
  Status first = Status::ok();
  for (size_t k = 0; k < all.size(); ++k) {
    WireReader rd(all[k]);
    const std::string bad = "swapping hbm writes: process " + to_string(k) + "'s message is ";
    uint64_t at = 0, len = 0, n = 0;
    uint32_t code = 0;
    if (!rd.get(at) || !rd.get(code) || !rd.get(len)) return failed_precondition(bad + "truncated");
    const auto msg = rd.take(len);
    if (msg.size() != len || !rd.get(n) || n > all[k].size() / 16)
      return failed_precondition(bad + "truncated");
    if (at < first_at) {
      first_at = at;
      if (code == 0 || code > static_cast<uint32_t>(StatusCode::unimplemented))
        return failed_precondition(bad + "a failure with unknown code " + to_string(code));
      first = Status(static_cast<StatusCode>(code),
                     std::string(reinterpret_cast<const char*>(msg.data()), msg.size()));
    }
    std::vector<ByteRange> ranges(n);
    for (ByteRange& r : ranges)
      if (!rd.get(r.begin) || !rd.get(r.end)) return failed_precondition(bad + "truncated");
    for (const ByteRange& r : ranges) {
      if (r.begin < 0 || r.end <= r.begin || static_cast<uint64_t>(r.end) > hbm_.size())
        return failed_precondition(bad + "hbm bytes [" + to_string(r.begin) + ", " +
                                   to_string(r.end) + ") outside the " + to_string(hbm_.size()) +
                                   "-byte arena");
      const auto len = static_cast<uint64_t>(r.end - r.begin);
      const auto b = rd.take(len);
      if (b.size() != len) return failed_precondition(bad + "truncated");
      sent.push_back({int(k), r, b});
    }
    if (!rd.done()) return failed_precondition(bad + "longer than its contents");
  }
  if (!first.is_ok()) return first;
  // A process's own ranges are disjoint, so any overlap is between two processes' cores.
  std::sort(sent.begin(), sent.end(),
            [](const Sent& a, const Sent& b) { return a.range.begin < b.range.begin; });
  // Sorted by start, a range that starts before the furthest end so far overlaps the range
  // that reaches it.
  for (size_t i = 1, reach = 0; i < sent.size(); ++i) {
    if (sent[i].range.begin < sent[reach].range.end)
      return failed_precondition(
          "the cores of processes " + to_string(sent[reach].process) + " and " +
          to_string(sent[i].process) + " wrote overlapping hbm bytes [" +
          to_string(sent[i].range.begin) + ", " +
          to_string(std::min(sent[i].range.end, sent[reach].range.end)) +
          ") before the same collective, so the run cannot be split over processes");
    if (sent[i].range.end > sent[reach].range.end) reach = i;
  }
  for (const Sent& s : sent)
    if (s.process != group_->rank())
      std::memcpy(hbm_.data() + s.range.begin, s.bytes.data(), s.bytes.size());
  return Status::ok();
}

Result<RunReport> Run::go() {
  const size_t ncores = this->ncores();
  cores_.resize(ncores);
  // Split over processes, every run defers: the effects are applied, and the writes swapped,
  // at the collectives and at the end.
  group_ = opt_.functional ? opt_.processes : nullptr;
  defer_ = opt_.functional && (opt_.parallel || group_);
  if (defer_) deferred_.assign(ncores, {});
  owned_.assign(ncores, 1);
  if (group_)
    for (size_t c = 0; c < ncores; ++c)
      owned_[c] = owner_process(int(c), int(ncores), group_->size()) == group_->rank();
  const int dma_engines = t_.dma_engines_per_core;
  for (auto& c : cores_) {
    // Idle, every engine's state is the same: one class (or, without classes, one per engine).
    for (int i = 0; i < dma_engines; ++i) {
      const int h = opt_.dma_engine_classes ? 0 : i;
      c.class_of[i] = static_cast<uint8_t>(h);
      c.dma[h].members |= 1u << i;
    }
    c.sems.resize(prog_.num_semaphores);
    if (opt_.check_races)
      for (auto& s : c.sems) s.clock.assign(ncores * kThreadsPerCore, 0);
  }
  if (opt_.check_races)
    clocks_.assign(ncores * kThreadsPerCore, Clock(ncores * kThreadsPerCore, 0));
  for (size_t c = 0; c < ncores; ++c)
    for (int e = 0; e < kNumEngines; ++e)
      if (!core_program(int(c)).streams[e].empty()) push(0.0, EventKind::ready, int(c), e, 0);

  ticks_.reset(ncores * kMaxDmaEnginesPerCore);
  for (;;) {
    if (!ticks_.empty() &&
        (events_.empty() || TickHeap::before(ticks_.top(), events_.top().key, events_.top().seq))) {
      // The tick stays at the top while it is handled: requeue replaces it (one sift, not a pop
      // and a push) or erases it.
      const TickHeap::Tick k = ticks_.top();
      on_tick(k);
      continue;
    }
    if (events_.empty()) break;
    const Event ev = events_.top();
    events_.pop();
    Status st;
    switch (ev.kind) {
      case EventKind::ready:
        st = on_ready(ev.t, ev.core, static_cast<Engine>(ev.engine));
        break;
      case EventKind::complete:
        st = on_complete(ev.t, ev.id, false);
        break;
      case EventKind::dma_done:
        st = on_complete(ev.t, ev.id, true);
        break;
      case EventKind::collective_done:
        st = on_collective(ev.t, ev.id);
        break;
    }
    if (!st.is_ok()) return st;
  }
  if (defer_) NEURONC_DEVICE_RETURN_IF_ERROR(flush_deferred());

  // Anything left is blocked forever.
  for (size_t c = 0; c < ncores; ++c)
    for (int e = 0; e < kNumEngines; ++e) {
      const auto& stream = core_program(int(c)).streams[e];
      const size_t pc = cores_[c].engines[e].pc;
      if (pc >= stream.size()) continue;
      std::string why;
      for (const SemaphoreWait& w : stream[pc].waits)
        if (cores_[c].sems[w.semaphore].value < w.value)
          why = "waits for semaphore " + to_string(w.semaphore) + " >= " + to_string(w.value) +
                " but it stays at " + to_string(cores_[c].sems[w.semaphore].value);
      if (why.empty()) why = "waits for a collective that not every core reaches";
      return failed_precondition(
          "deadlock: " + Who{uint16_t(c), Engine(e), uint32_t(pc), stream[pc].opcode()}.str() +
          " " + why);
    }

  RunReport& r = report_;
  r.target = t_.name;
  r.total_time_ns = end_time_;
  const double total = std::max(end_time_, 1e-9);
  double flops = 0;
  uint64_t transfers = 0, dma_bytes = 0;
  for (auto& c : cores_) {
    for (auto& e : c.stats.engines) e.active_percent = 100.0 * e.busy_ns / total;
    c.stats.dma_active_ns = merged_length(c.dma_busy);
    c.stats.dma_active_percent = 100.0 * c.stats.dma_active_ns / total;
    flops += c.stats.tensor_flops;
    transfers += c.stats.dma_transfers;
    dma_bytes += c.stats.dma_bytes;
    r.cores.push_back(c.stats);
  }
  const double peak = t_.tensor_peak_flops_per_ns() * total * ncores;
  r.hfu_percent = 100.0 * flops / peak;
  r.mfu_percent = opt_.model_flops > 0 ? 100.0 * opt_.model_flops / peak : 0.0;
  const double hbm = static_cast<double>(r.hbm_read_bytes + r.hbm_write_bytes);
  r.mbu_percent = 100.0 * hbm / (t_.hbm_gbps_per_core * ncores * total);
  r.mm_arithmetic_intensity = hbm > 0 ? flops / hbm : 0.0;
  r.average_dma_bytes = transfers ? static_cast<double>(dma_bytes) / transfers : 0.0;
  r.assumptions = cost_.assumptions();
  if (opt_.trace)
    std::stable_sort(r.trace.begin(), r.trace.end(), [](const TraceEvent& a, const TraceEvent& b) {
      return a.start_ns < b.start_ns;
    });
  return std::move(r);
}

}  // namespace

int owner_process(int core, int cores, int processes) {
  return static_cast<int>(static_cast<int64_t>(core) * processes / std::max(cores, 1));
}

Simulator::Simulator(const Target& target, SimulatorOptions options)
    : target_(target), options_(options), cost_(target_), memories_(std::make_unique<Memories>()) {}

Simulator::~Simulator() = default;

void Simulator::reset(int cores) {
  memories_->cores.assign(cores, {});
  // A timing-only run touches no memory: none is made (a tensor-parallel candidate is timed on
  // 32 cores of 24 MiB SBUF each). run() makes it if the simulator turns functional.
  if (!options_.functional) return;
  const std::byte fill = options_.poison ? std::byte{0xff} : std::byte{0};
  auto block = [&](std::shared_ptr<std::byte>& owner, std::span<std::byte>& bytes, uint64_t& pitch,
                   uint64_t partition_bytes) {
    pitch = partition_bytes + CoreMemory::kPartitionPad;
    const size_t n = size_t(target_.partitions) * pitch;
    owner = kernels::zeroed_bytes(n);
    bytes = {owner.get(), n};
    if (fill != std::byte{0}) std::fill(bytes.begin(), bytes.end(), fill);
  };
  for (auto& m : memories_->cores) {
    block(m.sbuf_block, m.sbuf, m.sbuf_pitch, target_.sbuf_partition_bytes);
    block(m.psum_block, m.psum, m.psum_pitch, target_.psum_partition_bytes);
    m.psum_from_matmul.assign(size_t(target_.partitions) * target_.psum_partition_bytes / 4, 0);
  }
}

namespace {

// Partition `partition` of one on-chip memory laid out `pitch` bytes per partition.
std::span<std::byte> partition_of(std::span<std::byte> memory, uint64_t pitch, uint64_t bytes,
                                  int partition, int partitions, const char* what) {
  if (memory.empty())
    throw std::logic_error(std::string(what) +
                           " holds no data: the simulator is timing-only (SimulatorOptions::"
                           "functional) and has not run functionally since");
  if (partition < 0 || partition >= partitions)
    throw std::out_of_range(std::string(what) + " partition " + to_string(partition) + " of " +
                            to_string(partitions));
  return memory.subspan(size_t(partition) * pitch, bytes);
}

}  // namespace

std::span<std::byte> Simulator::sbuf(int core, int partition) {
  const CoreMemory& m = memories_->cores.at(core);
  return partition_of(m.sbuf, m.sbuf_pitch, target_.sbuf_partition_bytes, partition,
                      target_.partitions, "sbuf");
}
std::span<std::byte> Simulator::psum(int core, int partition) {
  const CoreMemory& m = memories_->cores.at(core);
  return partition_of(m.psum, m.psum_pitch, target_.psum_partition_bytes, partition,
                      target_.partitions, "psum");
}

Result<RunReport> Simulator::run(const Program& program, std::span<std::byte> hbm,
                                 ProgramCheck check, const ProgramTiming* timing) {
  if (timing && (&timing->program() != &program || timing->target() != target_.name))
    return invalid_argument("the program's timing tables were made for another " +
                            std::string(&timing->program() != &program ? "program" : "target") +
                            " (" + std::string(timing->target()) + ")");
  if (timing && timing->copies() > 0) return run_replicated(*timing, check);
  if (check == ProgramCheck::verify)
    NEURONC_DEVICE_RETURN_IF_ERROR(verify_program(target_, program));
  if (options_.functional && hbm.size() < program.hbm_size)
    return invalid_argument("hbm arena holds " + to_string(hbm.size()) +
                            " bytes but the program needs " + to_string(program.hbm_size));
  if (options_.functional && (memories_->cores.size() != program.cores.size() ||
                              (!memories_->cores.empty() && memories_->cores[0].sbuf.empty())))
    reset(static_cast<int>(program.cores.size()));
  std::optional<ProgramTiming> own;
  if (!timing) timing = &own.emplace(cost_, program);
  Run run(target_, options_, cost_, *timing, hbm, memories_->cores);
  return run.go();
}

Result<RunReport> Simulator::run_replicated(const Program& one_core, uint32_t copies,
                                            uint64_t core_stride, ProgramCheck check) {
  if (one_core.cores.size() != 1)
    return invalid_argument("a replicated run takes core 0 alone, but the program has " +
                            to_string(one_core.cores.size()) + " cores");
  // Checked before the tables are made: they are made from a program the verifier accepts.
  NEURONC_DEVICE_RETURN_IF_ERROR(replicated_run_allowed());
  if (check == ProgramCheck::verify)
    NEURONC_DEVICE_RETURN_IF_ERROR(
        verify_replicated_program(target_, one_core, copies, core_stride));
  const ProgramTiming timing(cost_, one_core, copies, core_stride);
  return run_replicated(timing, ProgramCheck::verified);
}

Status Simulator::replicated_run_allowed() const {
  if (options_.functional || options_.check_races)
    return invalid_argument(
        "copies of core 0 are timed without being made only in a timing-only run without race "
        "checks; make them with replicate_cores for a functional or race-checked run");
  return Status::ok();
}

Result<RunReport> Simulator::run_replicated(const ProgramTiming& timing, ProgramCheck check) {
  NEURONC_DEVICE_RETURN_IF_ERROR(replicated_run_allowed());
  if (check == ProgramCheck::verify)
    NEURONC_DEVICE_RETURN_IF_ERROR(verify_replicated_program(
        target_, timing.program(), timing.copies(), timing.copy_stride()));
  Run run(target_, options_, cost_, timing, {}, memories_->cores);
  return run.go();
}

}  // namespace neuronc::device
