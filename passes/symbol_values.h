// Symbol values: a program that reads a dynamic dim's size as data (`x / x.size(1)`, `x *
// x.numel()`, a mean over the dim) computes with the size the loader binds at run time, not
// with the shape bucket it was compiled for.
//
// torch.export writes such a read as a symbolic int argument of an op: `div.Scalar(x, s1)`,
// `full(size, s0)`. SpecializeShapes would turn it into the bucket's value, which is wrong
// whenever the loader runs a smaller size padded up to that bucket (issue 53). So, for the
// symbols the caller names (the open dims of a bucketed compile), each such argument that is not
// an extent (ArgSpec::extent: view's size, slice's end, which only shape the result) becomes a
// tensor operand fed by a symbol input (ir::InputRole::symbol, a 0-d value the loader fills with
// the symbol's real value in each run):
//   - an op with a tensor overload taking that argument as a Tensor (mul.Scalar -> mul.Tensor,
//     masked_fill.Scalar -> masked_fill.Tensor, where.ScalarOther -> where.self) switches to it;
//   - full / new_full / scalar_tensor become the symbol value cast and expanded (then cloned);
//   - a mean over a dim of such a symbol becomes a sum divided by the symbol value, the count
//     a padded run must divide by (a sum over zero padding is exact; the mean is not).
// A coefficient or a product of symbols (`numel` of [s0, 4]) is computed from the free symbols'
// values in the graph. The value is f32 where the op computes in floats, i64 otherwise, exact
// for every size up to 2^24. A read that none of these rules can rewrite stays as it is; the
// padding analysis (padding.h) then refuses to pad that symbol, naming the node, so the dim is
// compiled exact and nothing is padded silently.
#pragma once

#include <set>
#include <string>

#include "passes/pass.h"

namespace neuronc::passes {

class SymbolValues : public Pass {
 public:
  // The names of the free symbols whose reads become symbol inputs.
  explicit SymbolValues(std::set<std::string> symbols) : symbols_(std::move(symbols)) {}
  std::string_view name() const override { return "symbol-values"; }
  bool run(ir::Graph& g) override;

 private:
  std::set<std::string> symbols_;
};

}  // namespace neuronc::passes
