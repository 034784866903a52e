// Partitioning (see the header for the algorithm).
#include "passes/partition.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "ir/op_registry.h"

namespace neuronc::passes {

Placement registry_placement(const ir::Node& node) {
  const ir::OpInfo* info = node.info();
  if (!info) return {Placement::unsupported, "operator is not in neuronc's registry"};
  if (info->placement == ir::Placement::host) {
    return {Placement::host, "no NeuronCore lowering for " + info->name};
  }
  for (const ir::Value* v : node.inputs()) {
    if (v && ir::is_complex(v->dtype())) {
      return {Placement::host,
              "complex operand '" + v->name() + "' (the NeuronCore has no complex types)"};
    }
  }
  for (const ir::Value* v : node.outputs()) {
    if (ir::is_complex(v->dtype())) {
      return {Placement::host,
              "complex result '" + v->name() + "' (the NeuronCore has no complex types)"};
    }
  }
  return {Placement::device, ""};
}

PartitionPlan partition_graph(const ir::Graph& g, const PlacementOracle& oracle) {
  PartitionPlan plan;
  const auto& nodes = g.nodes();
  const size_t n = nodes.size();
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < n; ++i) index[nodes[i].get()] = i;

  std::vector<PartitionKind> kind(n, PartitionKind::device);
  for (size_t i = 0; i < n; ++i) {
    const ir::Node* node = nodes[i].get();
    const Placement p = oracle(*node);
    if (p.kind == Placement::device) continue;
    kind[i] = PartitionKind::host;
    if (p.kind == Placement::unsupported)
      plan.unsupported.push_back({node, p.reason});
    else
      plan.host_reasons.push_back({node, p.reason});
  }

  // Dependency counts.
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    std::set<size_t> preds;
    for (const ir::Value* v : nodes[i]->inputs()) {
      if (v && v->producer()) preds.insert(index.at(v->producer()));
    }
    pending[i] = preds.size();
    for (size_t p : preds) users[p].push_back(i);
  }
  std::set<size_t> ready[2];
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready[static_cast<int>(kind[i])].insert(i);
  }
  PartitionKind current = PartitionKind::device;
  if (ready[0].empty() && !ready[1].empty()) current = PartitionKind::host;
  std::vector<size_t> order_kind_switch;
  std::vector<std::vector<size_t>> groups;
  std::vector<PartitionKind> group_kind;
  while (!ready[0].empty() || !ready[1].empty()) {
    int k = static_cast<int>(current);
    if (ready[k].empty()) {
      current = current == PartitionKind::device ? PartitionKind::host : PartitionKind::device;
      k = static_cast<int>(current);
    }
    if (groups.empty() || group_kind.back() != current) {
      groups.emplace_back();
      group_kind.push_back(current);
    }
    const size_t i = *ready[k].begin();
    ready[k].erase(ready[k].begin());
    groups.back().push_back(i);
    for (size_t u : users[i]) {
      if (--pending[u] == 0) ready[static_cast<int>(kind[u])].insert(u);
    }
  }

  std::vector<int> group_of(n, -1);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (size_t i : groups[gi]) group_of[i] = static_cast<int>(gi);
  }
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    Partition p;
    p.kind = group_kind[gi];
    std::set<const ir::Value*> in_seen, out_seen;
    for (size_t i : groups[gi]) {
      const ir::Node* node = nodes[i].get();
      p.nodes.push_back(node);
      for (const ir::Value* v : node->inputs()) {
        if (!v) continue;
        const bool outside =
            !v->producer() || group_of[index.at(v->producer())] != static_cast<int>(gi);
        if (outside && in_seen.insert(v).second) p.inputs.push_back(v);
      }
      for (const ir::Value* v : node->outputs()) {
        bool escapes = g.is_graph_output(v);
        for (const ir::Use& u : v->uses())
          escapes |= group_of[index.at(u.node)] != static_cast<int>(gi);
        if (escapes && out_seen.insert(v).second) p.outputs.push_back(v);
      }
    }
    plan.partitions.push_back(std::move(p));
  }
  return plan;
}

}  // namespace neuronc::passes
