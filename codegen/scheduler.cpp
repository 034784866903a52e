// List scheduling of one kernel's instructions (scheduler.h).
#include "codegen/scheduler.h"

#include <algorithm>
#include <array>
#include <limits>
#include <queue>

#include "device/dependency_tracker.h"

namespace neuronc::codegen {

using device::Engine;

namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
// DMA engines a transfer's work is split over (device::DmaWork's per-engine arrays).
constexpr size_t kDmaEngines = std::tuple_size_v<decltype(device::DmaWork::bytes)>;

struct Node {
  int engine = 0;                 // issuing stream
  int queue = -1;                 // DMA: 0 loads, 1 stores (by role); -1 compute
  double ii_ns = 0;               // issuing engine busy time
  double dependent_issue_ns = 0;  // start-to-start distance to a dependent on the same engine
  double done_after_ns = 0;       // compute: ii + latency; DMA: start delay (then the queue)
  double dma_ns = 0;              // DMA: the slowest engine's share
  std::array<float, kDmaEngines> engine_ns{};  // DMA: each DMA engine's share
  uint32_t queue_pred = kNone;  // the previous transfer on the same queue (order only)
};

// The kernel's dependency graph: preds[i] are the earlier instructions whose bytes conflict
// with i's (a write covering an earlier access retires it: later conflicts order behind the
// write, which is ordered behind it).
// A read of HBM bytes that nothing writes (weights) conflicts with nothing: with
// `skip_constant_reads` such reads are not tracked, which keeps the HBM list of a whole
// program short.
std::vector<std::vector<uint32_t>> dependencies(const std::vector<PendingInstruction>& insts,
                                                bool skip_constant_reads) {
  // Merged HBM byte ranges some instruction writes.
  std::vector<std::pair<int64_t, int64_t>> written;
  if (skip_constant_reads) {
    for (const PendingInstruction& in : insts)
      for (const device::MemRef& m : device::operands(in.op).writes)
        if (m.memory == device::MemoryKind::hbm) {
          const ByteRect r = byte_rect(m);
          written.emplace_back(r.b0, r.b1);
        }
    std::sort(written.begin(), written.end());
    size_t k = 0;
    for (const auto& w : written) {
      if (k > 0 && w.first <= written[k - 1].second)
        written[k - 1].second = std::max(written[k - 1].second, w.second);
      else
        written[k++] = w;
    }
    written.resize(k);
  }
  const auto constant = [&](const ByteRect& r) {
    if (!skip_constant_reads || r.memory != device::MemoryKind::hbm) return false;
    auto it = std::upper_bound(written.begin(), written.end(), std::make_pair(r.b0, INT64_MAX));
    if (it != written.begin() && std::prev(it)->second > r.b0) return false;
    return it == written.end() || it->first >= r.b1;
  };
  // Every instruction is its own thread: only its dependencies order it.
  device::DependencyTracker live;
  std::vector<std::vector<uint32_t>> preds(insts.size());
  std::vector<device::MemoryAccess> mine;
  for (uint32_t i = 0; i < insts.size(); ++i) {
    const device::Operands ops = device::operands(insts[i].op);
    mine.clear();
    for (const device::MemRef& m : ops.reads)
      if (const ByteRect r = byte_rect(m); !constant(r)) mine.push_back({r, false, i, i});
    for (const device::MemRef& m : ops.writes) mine.push_back({byte_rect(m), true, i, i});
    std::vector<uint32_t>& p = preds[i];
    live.add_retiring_after_conflicts(mine,
                                      [&](const device::MemoryAccess& a) { p.push_back(a.seq); });
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  return preds;
}

// The timing model both orders are judged by (scheduler.h).
class Timeline {
 public:
  // `per_dma_engine`: each DMA engine serves its share of every transfer in arrival order;
  // otherwise each queue is one in-order channel at the slowest engine's rate (the two
  // approximate the simulator's round-robin from either side).
  Timeline(const std::vector<Node>& nodes, const std::vector<std::vector<uint32_t>>& preds,
           const std::array<double, device::kNumEngines>& semaphore_ns, bool per_dma_engine = true)
      : nodes_(nodes),
        preds_(preds),
        sem_(semaphore_ns),
        per_dma_engine_(per_dma_engine),
        start_(nodes.size(), 0),
        done_(nodes.size(), 0) {}

  // When i's inputs allow it to start (its predecessors are placed).
  double data_ready(uint32_t i) const {
    const Node& n = nodes_[i];
    double t = 0;
    for (uint32_t p : preds_[i]) {
      const Node& q = nodes_[p];
      t = std::max(t, q.queue < 0 && q.engine == n.engine ? start_[p] + q.dependent_issue_ns
                                                          : done_[p] + sem_[n.engine]);
    }
    return t;
  }
  double engine_free(int e) const { return engine_free_[e]; }
  double earliest_start(uint32_t i, double ready) const {
    return std::max(ready, engine_free_[nodes_[i].engine]);
  }
  void place(uint32_t i, double start) {
    const Node& n = nodes_[i];
    start_[i] = start;
    engine_free_[n.engine] = start + n.ii_ns;
    if (n.queue >= 0) {
      const double t0 = start + n.ii_ns + n.done_after_ns;
      if (!per_dma_engine_) {
        done_[i] = std::max(queue_free_[n.queue], t0) + n.dma_ns;
        queue_free_[n.queue] = done_[i];
        end_ = std::max(end_, done_[i]);
        return;
      }
      double done = t0;
      for (size_t k = 0; k < n.engine_ns.size(); ++k) {
        if (n.engine_ns[k] <= 0) continue;
        dma_free_[k] = std::max(dma_free_[k], t0) + n.engine_ns[k];
        done = std::max(done, dma_free_[k]);
      }
      done_[i] = done;
    } else {
      done_[i] = start + n.done_after_ns;
    }
    end_ = std::max(end_, done_[i]);
  }
  double end() const { return end_; }

 private:
  const std::vector<Node>& nodes_;
  const std::vector<std::vector<uint32_t>>& preds_;
  std::array<double, device::kNumEngines> sem_;
  bool per_dma_engine_;
  std::vector<double> start_, done_;
  std::array<double, device::kNumEngines> engine_free_{};
  std::array<double, kDmaEngines> dma_free_{};
  std::array<double, 2> queue_free_{};
  double end_ = 0;
};

// Costs of every instruction; each transfer's queue predecessor is the previous transfer on
// the same queue of its group (kernel) or, without `per_group`, of the whole sequence.
std::vector<Node> build_nodes(const std::vector<PendingInstruction>& insts,
                              const device::CostModel& cost, bool per_group = true) {
  const size_t n = insts.size();
  std::vector<Node> nodes(n);
  // Per group and queue: the group's last transfer on it.
  std::vector<std::array<uint32_t, 2>> last_on_queue;
  for (size_t i = 0; i < n; ++i) {
    const PendingInstruction& in = insts[i];
    Node& nd = nodes[i];
    const auto* dma = std::get_if<device::DmaCopy>(&in.op);
    const Engine e = dma ? dma_trigger_engine(in.role) : in.engine;
    nd.engine = static_cast<int>(e);
    const device::InstructionCost c = cost.cost(e, in.op);
    nd.ii_ns = c.ii_ns;
    nd.dependent_issue_ns = cost.dependent_issue_ns(e, c.ii_cycles);
    if (dma) {
      nd.queue = in.role == DmaRole::store ? 1 : 0;
      nd.done_after_ns = cost.dma_start_delay_ns(*dma);
      const device::DmaWork w = cost.dma_work(*dma);
      const double rate = cost.dma_engine_rate(w);
      for (size_t k = 0; k < w.descriptors.size(); ++k) {
        const double ns = cost.dma_engine_ns(w.rate_weighted_bytes[k], w.descriptors[k], rate);
        nd.engine_ns[k] = static_cast<float>(ns);
        nd.dma_ns = std::max(nd.dma_ns, ns);
      }
      const uint32_t g = per_group ? in.group : 0;
      if (g >= last_on_queue.size()) last_on_queue.resize(g + 1, {kNone, kNone});
      nd.queue_pred = last_on_queue[g][nd.queue];
      last_on_queue[g][nd.queue] = static_cast<uint32_t>(i);
    } else {
      nd.done_after_ns = c.ii_ns + c.latency_ns;
    }
  }
  return nodes;
}

// Successors of every instruction (dependencies and queue order) and how many
// predecessors each has.
std::pair<std::vector<std::vector<uint32_t>>, std::vector<uint32_t>> successors(
    const std::vector<Node>& nodes, const std::vector<std::vector<uint32_t>>& preds) {
  const size_t n = nodes.size();
  std::vector<std::vector<uint32_t>> succs(n);
  std::vector<uint32_t> pending(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p : preds[i]) succs[p].push_back(i);
    if (nodes[i].queue_pred != kNone) succs[nodes[i].queue_pred].push_back(i);
    pending[i] = static_cast<uint32_t>(preds[i].size()) + (nodes[i].queue_pred != kNone);
  }
  return {std::move(succs), std::move(pending)};
}

// The longest path from each instruction to the end (its own time included).
std::vector<double> tails(const std::vector<Node>& nodes,
                          const std::vector<std::vector<uint32_t>>& succs) {
  std::vector<double> tail(nodes.size(), 0);
  for (size_t i = nodes.size(); i-- > 0;) {
    const Node& nd = nodes[i];
    double after = 0;
    for (uint32_t s : succs[i]) after = std::max(after, tail[s]);
    tail[i] = (nd.queue >= 0 ? nd.ii_ns + nd.done_after_ns + nd.dma_ns : nd.done_after_ns) + after;
  }
  return tail;
}

// List schedule over a window (schedule_program); returns the order and its estimate.
std::pair<std::vector<uint32_t>, double> list_schedule_window(
    const std::vector<Node>& nodes, const std::vector<std::vector<uint32_t>>& preds,
    const std::array<double, device::kNumEngines>& sem, size_t window, bool per_dma_engine,
    bool critical_first) {
  const size_t n = nodes.size();
  auto [succs, pending] = successors(nodes, preds);
  // Priority among instructions that can start at the same time: program order, or
  // (`critical_first`) the longer path to the program's end. A transfer trigger may also wait
  // for a higher-priority transfer that becomes ready before the one that is ready now would
  // leave its queue (the queue runs in order, so what goes first delays the rest).
  std::vector<double> key(n);
  if (critical_first) {
    const std::vector<double> tail = tails(nodes, succs);
    for (size_t i = 0; i < n; ++i) key[i] = -tail[i];
  } else {
    for (size_t i = 0; i < n; ++i) key[i] = static_cast<double>(i);
  }
  const auto before = [&](uint32_t a, uint32_t b) {
    return key[a] < key[b] || (key[a] == key[b] && a < b);
  };

  // Per engine: ready instructions whose inputs are not yet there (by data-ready time) and
  // those that could start now (by program order); instructions further than `window` past
  // the first unplaced one wait in `beyond`.
  using Timed = std::pair<double, uint32_t>;
  using MinTimed = std::priority_queue<Timed, std::vector<Timed>, std::greater<>>;
  using MinIndex = std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>>;
  const auto later = [&](uint32_t a, uint32_t b) { return before(b, a); };
  using ByKey = std::priority_queue<uint32_t, std::vector<uint32_t>, decltype(later)>;
  std::array<MinTimed, device::kNumEngines> waiting;
  std::array<ByKey, device::kNumEngines> startable{ByKey(later), ByKey(later), ByKey(later),
                                                   ByKey(later), ByKey(later)};
  MinIndex beyond;
  std::vector<double> ready_at(n, 0);
  std::vector<uint8_t> placed(n, 0);
  size_t head = 0;
  Timeline tl(nodes, preds, sem, per_dma_engine);
  const auto admit = [&](uint32_t i) {
    if (i >= head + window) {
      beyond.push(i);
      return;
    }
    ready_at[i] = tl.data_ready(i);
    waiting[nodes[i].engine].push({ready_at[i], i});
  };
  for (uint32_t i = 0; i < n; ++i)
    if (pending[i] == 0) admit(i);
  std::vector<uint32_t> order;
  order.reserve(n);
  while (order.size() < n) {
    int best_e = -1;
    double best_start = std::numeric_limits<double>::infinity();
    uint32_t best_i = kNone;
    for (int e = 0; e < device::kNumEngines; ++e) {
      const double free = tl.engine_free(e);
      while (!waiting[e].empty() && waiting[e].top().first <= free) {
        startable[e].push(waiting[e].top().second);
        waiting[e].pop();
      }
      double s;
      uint32_t i;
      if (!startable[e].empty()) {
        s = free;
        i = startable[e].top();
        if (nodes[i].queue >= 0 && !waiting[e].empty()) {
          const auto [at, w] = waiting[e].top();
          if (before(w, i) && at < free + nodes[i].dma_ns) s = at, i = w;
        }
      } else if (!waiting[e].empty()) {
        s = waiting[e].top().first;
        i = waiting[e].top().second;
      } else {
        continue;
      }
      if (s < best_start || (s == best_start && (best_i == kNone || before(i, best_i)))) {
        best_e = e;
        best_start = s;
        best_i = i;
      }
    }
    if (best_e < 0) return {};  // cannot happen: the first unplaced one is always ready
    if (!startable[best_e].empty() && startable[best_e].top() == best_i)
      startable[best_e].pop();
    else
      waiting[best_e].pop();  // the earliest waiting one (best_i)
    tl.place(best_i, best_start);
    placed[best_i] = 1;
    order.push_back(best_i);
    for (uint32_t s : succs[best_i])
      if (--pending[s] == 0) admit(s);
    while (head < n && placed[head]) ++head;
    while (!beyond.empty() && beyond.top() < head + window) {
      const uint32_t i = beyond.top();
      beyond.pop();
      admit(i);
    }
  }
  return {std::move(order), tl.end()};
}

}  // namespace

ScheduleResult schedule_kernel(std::vector<PendingInstruction>& insts,
                               const device::CostModel& cost) {
  ScheduleResult result;
  const size_t n = insts.size();
  if (n < 3) return result;
  for (const PendingInstruction& in : insts)
    if (std::holds_alternative<device::Collective>(in.op)) return result;  // ordered with peers

  const std::vector<Node> nodes = build_nodes(insts, cost);
  const std::vector<std::vector<uint32_t>> preds = dependencies(insts, false);
  std::array<double, device::kNumEngines> sem{};
  for (int e = 0; e < device::kNumEngines; ++e)
    sem[e] = cost.semaphore_latency_ns(static_cast<Engine>(e));

  // The lowering's order.
  {
    Timeline tl(nodes, preds, sem);
    for (uint32_t i = 0; i < n; ++i) tl.place(i, tl.earliest_start(i, tl.data_ready(i)));
    result.program_order_ns = result.scheduled_ns = tl.end();
  }

  // Successors and the critical path from each instruction to the kernel's end.
  auto [succs, pending] = successors(nodes, preds);
  const std::vector<double> tail = tails(nodes, succs);

  // List schedule: the ready instruction that can start first; ties to the longer tail, then
  // to program order.
  Timeline tl(nodes, preds, sem);
  std::vector<std::pair<uint32_t, double>> ready;  // (instruction, data-ready time)
  for (uint32_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.emplace_back(i, 0.0);
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t best = 0;
    double best_start = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < ready.size(); ++r) {
      const auto [i, at] = ready[r];
      const double s = tl.earliest_start(i, at);
      const uint32_t b = ready[best].first;
      if (s < best_start ||
          (s == best_start && (tail[i] > tail[b] || (tail[i] == tail[b] && i < b)))) {
        best = r;
        best_start = s;
      }
    }
    const uint32_t i = ready[best].first;
    ready[best] = ready.back();
    ready.pop_back();
    tl.place(i, best_start);
    order.push_back(i);
    for (uint32_t s : succs[i])
      if (--pending[s] == 0) ready.emplace_back(s, tl.data_ready(s));
  }
  if (order.size() != n) return result;  // cannot happen: program order is topological
  if (!(tl.end() < result.program_order_ns)) return result;

  std::vector<PendingInstruction> reordered;
  reordered.reserve(n);
  for (uint32_t i : order) reordered.push_back(std::move(insts[i]));
  insts = std::move(reordered);
  result.scheduled_ns = tl.end();
  result.reordered = true;
  return result;
}

std::vector<std::vector<uint32_t>> schedule_candidates(const std::vector<PendingInstruction>& insts,
                                                       const device::CostModel& cost,
                                                       size_t window) {
  std::vector<std::vector<uint32_t>> orders;
  const size_t n = insts.size();
  if (n < 3 || window == 0) return orders;
  for (const PendingInstruction& in : insts)
    if (std::holds_alternative<device::Collective>(in.op)) return orders;
  const std::vector<std::vector<uint32_t>> preds = dependencies(insts, true);
  std::array<double, device::kNumEngines> sem{};
  for (int e = 0; e < device::kNumEngines; ++e)
    sem[e] = cost.semaphore_latency_ns(static_cast<Engine>(e));
  for (bool per_kernel : {true, false}) {
    const std::vector<Node> nodes = build_nodes(insts, cost, per_kernel);
    for (bool per_dma_engine : {true, false})
      for (bool critical_first : {false, true}) {
        std::vector<uint32_t> order =
            list_schedule_window(nodes, preds, sem, window, per_dma_engine, critical_first).first;
        if (order.size() == n) orders.push_back(std::move(order));
      }
  }
  return orders;
}

}  // namespace neuronc::codegen
