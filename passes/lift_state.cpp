// Lift state (lift_state.h).
#include "passes/lift_state.h"

#include <set>
#include <string>

namespace neuronc::passes {

bool LiftState::run(ir::Graph& g) {
  std::set<std::string> mutated;
  for (const ir::GraphOutput& o : g.outputs())
    if (o.role == ir::OutputRole::buffer_mutation) mutated.insert(o.target);
  bool changed = false;
  for (ir::GraphInput& in : g.mutable_inputs()) {
    const bool lifts = in.role == ir::InputRole::buffer || in.role == ir::InputRole::parameter;
    if (!lifts || !mutated.count(in.target)) continue;
    in.role = ir::InputRole::state;
    in.initial = in.value->take_payload();
    changed = true;
  }
  return changed;
}

}  // namespace neuronc::passes
