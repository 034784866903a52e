// List scheduling of one kernel's instructions (scheduler.h).
#include "codegen/scheduler.h"

#include <algorithm>
#include <array>
#include <limits>

namespace neuronc::codegen {

using device::Engine;

namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

struct Node {
  int engine = 0;                 // issuing stream
  int queue = -1;                 // DMA: 0 loads, 1 stores (by role); -1 compute
  double ii_ns = 0;               // issuing engine busy time
  double dependent_issue_ns = 0;  // start-to-start distance to a dependent on the same engine
  double done_after_ns = 0;       // compute: ii + latency; DMA: start delay (then the queue)
  double dma_ns = 0;              // DMA: the slowest engine's share
  uint32_t queue_pred = kNone;    // the previous transfer on the same queue (order only)
};

// The kernel's dependency graph: preds[i] are the earlier instructions whose bytes conflict
// with i's (a write covering an earlier access retires it: later conflicts order behind the
// write, which is ordered behind it).
std::vector<std::vector<uint32_t>> dependencies(const std::vector<PendingInstruction>& insts) {
  struct Access {
    ByteRect rect;
    bool write;
    uint32_t node;
  };
  std::array<std::vector<Access>, 3> live;
  std::vector<std::vector<uint32_t>> preds(insts.size());
  std::vector<ByteRect> reads, writes;
  for (uint32_t i = 0; i < insts.size(); ++i) {
    const device::Operands ops = device::operands(insts[i].op);
    reads.clear();
    writes.clear();
    for (const device::MemRef& m : ops.reads) reads.push_back(byte_rect(m));
    for (const device::MemRef& m : ops.writes) writes.push_back(byte_rect(m));
    std::vector<uint32_t>& p = preds[i];
    for (const ByteRect& r : reads)
      for (const Access& a : live[static_cast<int>(r.memory)])
        if (a.write && overlaps(r, a.rect)) p.push_back(a.node);
    for (const ByteRect& w : writes)
      for (const Access& a : live[static_cast<int>(w.memory)])
        if (overlaps(w, a.rect)) p.push_back(a.node);
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    for (const ByteRect& w : writes)
      std::erase_if(live[static_cast<int>(w.memory)],
                    [&](const Access& a) { return covers(w, a.rect); });
    for (const ByteRect& r : reads) live[static_cast<int>(r.memory)].push_back({r, false, i});
    for (const ByteRect& w : writes) live[static_cast<int>(w.memory)].push_back({w, true, i});
  }
  return preds;
}

// The timing model both orders are judged by (scheduler.h).
class Timeline {
 public:
  Timeline(const std::vector<Node>& nodes, const std::vector<std::vector<uint32_t>>& preds,
           const std::array<double, device::kNumEngines>& semaphore_ns)
      : nodes_(nodes),
        preds_(preds),
        sem_(semaphore_ns),
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
  double earliest_start(uint32_t i, double ready) const {
    return std::max(ready, engine_free_[nodes_[i].engine]);
  }
  void place(uint32_t i, double start) {
    const Node& n = nodes_[i];
    start_[i] = start;
    engine_free_[n.engine] = start + n.ii_ns;
    if (n.queue >= 0) {
      const double q0 = std::max(queue_free_[n.queue], start + n.ii_ns + n.done_after_ns);
      done_[i] = q0 + n.dma_ns;
      queue_free_[n.queue] = done_[i];
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
  std::vector<double> start_, done_;
  std::array<double, device::kNumEngines> engine_free_{};
  std::array<double, 2> queue_free_{};
  double end_ = 0;
};

}  // namespace

ScheduleResult schedule_kernel(std::vector<PendingInstruction>& insts,
                               const device::CostModel& cost) {
  ScheduleResult result;
  const size_t n = insts.size();
  if (n < 3) return result;
  for (const PendingInstruction& in : insts)
    if (std::holds_alternative<device::Collective>(in.op)) return result;  // ordered with peers

  std::vector<Node> nodes(n);
  std::array<uint32_t, 2> last_on_queue{kNone, kNone};
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
      for (size_t k = 0; k < w.descriptors.size(); ++k)
        nd.dma_ns = std::max(nd.dma_ns,
                             cost.dma_engine_ns(w.rate_weighted_bytes[k], w.descriptors[k], rate));
      nd.queue_pred = last_on_queue[nd.queue];
      last_on_queue[nd.queue] = static_cast<uint32_t>(i);
    } else {
      nd.done_after_ns = c.ii_ns + c.latency_ns;
    }
  }
  const std::vector<std::vector<uint32_t>> preds = dependencies(insts);
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
  std::vector<std::vector<uint32_t>> succs(n);
  std::vector<uint32_t> pending(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t p : preds[i]) succs[p].push_back(i);
    if (nodes[i].queue_pred != kNone) succs[nodes[i].queue_pred].push_back(i);
    pending[i] = static_cast<uint32_t>(preds[i].size()) + (nodes[i].queue_pred != kNone);
  }
  std::vector<double> tail(n, 0);
  for (size_t i = n; i-- > 0;) {
    const Node& nd = nodes[i];
    double after = 0;
    for (uint32_t s : succs[i]) after = std::max(after, tail[s]);
    tail[i] = (nd.queue >= 0 ? nd.ii_ns + nd.done_after_ns + nd.dma_ns : nd.done_after_ns) + after;
  }

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

}  // namespace neuronc::codegen
