// Common subexpression elimination (see the header for the algorithm).
#include "passes/common_subexpression_elimination.h"

#include <map>

#include "ir/op_registry.h"
#include "ir/printer.h"

namespace neuronc::passes {
namespace {

std::string signature(const ir::Graph& g, const ir::Node& n) {
  std::string key = n.op() + "(";
  for (const ir::Value* v : n.inputs()) key += (v ? v->name() : std::string("_")) + ",";
  key += "){";
  for (const ir::NamedAttr& a : n.attrs())
    key += a.name + "=" + ir::format_attribute(g, a.value) + ",";
  key += "}";
  for (const ir::Value* v : n.outputs()) key += g.type_to_string(v->type()) + ";";
  return key;
}

}  // namespace

bool CommonSubexpressionElimination::run(ir::Graph& g) {
  bool changed = false;
  std::map<std::string, ir::Node*> seen;
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (ir::Node* n : order) {
    const ir::OpInfo* info = n->info();
    if (!info || info->inplace || n->outputs().empty()) continue;
    auto [it, inserted] = seen.emplace(signature(g, *n), n);
    if (inserted) continue;
    ir::Node* first = it->second;
    for (size_t i = 0; i < n->outputs().size(); ++i)
      n->output(i)->replace_all_uses_with(first->output(i));
    g.erase(n);
    changed = true;
  }
  return changed;
}

}  // namespace neuronc::passes
