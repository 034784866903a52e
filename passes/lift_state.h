// Lift state: a parameter or buffer the program mutates becomes a state input.
//
// torch.export records such a buffer (a static KV cache, BatchNorm's running statistics) as an
// input plus a buffer_mutation output holding its new content. Left as a constant, a pass could
// fold, fuse or bake its exported bytes into code, and the next run would silently read them
// instead of what the previous run wrote. So the input's role becomes `state` and its payload
// moves to GraphInput::initial: every later pass sees a value with no bytes, like a user input,
// and the compiler records the pair (state input, mutation output) so the loader's Session
// carries the value from one run to the next, starting from `initial`.
//
// Runs after Functionalize, which gives every in-place write of a buffer its mutation output.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class LiftState : public Pass {
 public:
  std::string_view name() const override { return "lift-state"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
