// Batch-norm folding: inference-mode batch norm with compile-time statistics disappears.
//
//   s = gamma / sqrt(running_var + eps)          (gamma = 1 when absent)
//   t = beta - running_mean * s                  (beta = 0 when absent)
//
// 1. conv -> batch_norm: when the batch norm (training = false) reads a convolution whose only
//    use it is, and the convolution's weight (and bias, if any) are constants, the pair becomes
//    one convolution with W'[o, ...] = W[o, ...] * s[o] and b'[o] = b[o] * s[o] + t[o]. The new
//    weight and bias are constant graph inputs (payloads own their bytes).
// 2. Any other inference-mode batch norm with constant statistics becomes
//    mul(x, s[C, 1, ...]) + t[C, 1, ...]: two element-wise ops that codegen fuses with their
//    neighbours (and that still fold into a preceding convolution's evacuation).
//
// Statistics that are graph inputs, or buffers the graph mutates (training mode), are left
// alone. Arithmetic is done in double and rounded once to the parameters' dtype.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class FoldBatchNorm : public Pass {
 public:
  std::string_view name() const override { return "fold-batch-norm"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
