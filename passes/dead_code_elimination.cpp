// Dead code elimination (see the header for the algorithm).
#include "passes/dead_code_elimination.h"

#include "ir/op_registry.h"

namespace neuronc::passes {
namespace {

bool has_effect(const ir::Node& n) {
  const ir::OpInfo* info = n.info();
  if (info && info->inplace) return true;
  if (n.outputs().empty()) return !(info && info->category == ir::OpCategory::metadata);
  return false;
}

}  // namespace

bool DeadCodeElimination::run(ir::Graph& g) {
  bool changed = false;
  for (size_t i = g.nodes().size(); i-- > 0;) {
    ir::Node* n = g.nodes()[i].get();
    if (has_effect(*n)) continue;
    bool live = false;
    for (const ir::Value* v : n->outputs()) live |= v->has_uses() || g.is_graph_output(v);
    if (live) continue;
    g.erase(n);
    changed = true;
  }
  if (g.erase_unused_constant_inputs() > 0) changed = true;
  return changed;
}

}  // namespace neuronc::passes
