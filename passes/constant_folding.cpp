// Constant folding (see the header).
#include "passes/constant_folding.h"

#include <memory>
#include <set>
#include <unordered_map>

#include "ir/op_registry.h"
#include "passes/reference_eval.h"

namespace neuronc::passes {

bool ConstantFolding::run(ir::Graph& g) {
  // Buffers the graph writes back keep their runtime value: not constants.
  std::set<std::string> mutated;
  for (const ir::GraphOutput& o : g.outputs()) {
    if (o.role == ir::OutputRole::buffer_mutation) mutated.insert(o.target);
  }
  std::unordered_map<const ir::Value*, HostTensor> known;
  auto constant_of = [&](const ir::Value* v) -> const HostTensor* {
    if (auto it = known.find(v); it != known.end()) return &it->second;
    if (v->producer() || !v->payload()) return nullptr;
    for (const ir::GraphInput& in : g.inputs()) {
      if (in.value != v) continue;
      if (in.role == ir::InputRole::user_input || mutated.count(in.target)) return nullptr;
    }
    auto t = read_constant(*v);
    if (!t) return nullptr;
    return &known.emplace(v, std::move(*t)).first->second;
  };

  bool changed = false;
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (ir::Node* n : order) {
    const ir::OpInfo* info = n->info();
    if (!info || info->inplace || n->outputs().size() != 1) continue;
    if (info->category == ir::OpCategory::matmul || info->category == ir::OpCategory::conv ||
        info->category == ir::OpCategory::attention)
      continue;
    auto numel = ir::numel(n->output()->shape());
    if (!numel || !numel->is_constant() || numel->coeff > max_elements_) continue;
    std::vector<const HostTensor*> args;
    bool all_const = true;
    for (const ir::Value* v : n->inputs()) {
      if (!v) {
        args.push_back(nullptr);
        continue;
      }
      const HostTensor* t = constant_of(v);
      if (!t) {
        all_const = false;
        break;
      }
      args.push_back(t);
    }
    if (!all_const) continue;
    std::optional<std::vector<HostTensor>> result = evaluate(*n, args);
    if (!result) continue;
    HostTensor& t = (*result)[0];
    auto bytes = std::make_shared<std::vector<std::byte>>(encode(t));
    ir::Value* c = g.add_input(g.unique_name(n->output()->name() + "_folded"), n->output()->type(),
                               ir::InputRole::constant, "folded." + n->name());
    c->set_payload(ir::ConstantPayload{bytes->data(), bytes->size(), 0, {}, bytes});
    known.emplace(c, std::move(t));
    n->output()->replace_all_uses_with(c);
    g.erase(n);
    changed = true;
  }
  if (changed) g.erase_unused_constant_inputs();
  return changed;
}

}  // namespace neuronc::passes
