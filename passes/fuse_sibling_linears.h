// Sibling linears: linears that read the same input with constant weights (a transformer's
// query, key and value projections) become one linear over the concatenated weights, and each
// original result a slice of its output:
//
//   y_i = linear(x, W_i, b_i)   ->   y = linear(x, cat(W_i), cat(b_i));  y_i = y[..., o_i : o_i +
//   N_i]
//
// The input is read once instead of once per projection and one kernel replaces several. Each
// output element is the same dot product over the same K elements, so results are unchanged.
// Conditions: at least two linears with input 0 = x; every weight (and bias) a constant the
// graph does not mutate, all of one dtype and K; either every linear has a bias or none does.
// The fused weight and bias are constant graph inputs that own their bytes.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class FuseSiblingLinears : public Pass {
 public:
  std::string_view name() const override { return "fuse-sibling-linears"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
