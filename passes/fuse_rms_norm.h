// RMS norm recognition: the norm most decoder LLMs write out by hand (transformers' LlamaRMSNorm
// and its copies in Mistral, Qwen, Gemma, Phi-3, T5, ...)
//
//   v = mean(pow(x, 2), dim=-1, keepdim=True)        (or x * x, or square(x))
//   y = x * rsqrt(v + eps)                             (or rsqrt(eps + v), either mul order)
//   [z = y * w  or  w * y, w a [D] tensor]
//
// becomes aten.rms_norm(x, [D], w?, eps): one row kernel instead of four kernels meeting
// through HBM. The weight joins only when it multiplies y directly. In the bf16 LlamaRMSNorm,
// x = float32(x0) and y is cast back to x0's dtype before the weight: that is rms_norm(x0)
// (fp32 inside, one rounding at the end), and the weight's multiply keeps its own rounding
// outside. The intermediate values must have no other reader and not be graph outputs.
// -O1 and up (it is a fusion).
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class FuseRmsNorm : public Pass {
 public:
  std::string_view name() const override { return "fuse-rms-norm"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
