// FuseRmsNorm: before/after IR for the hand-written RMS norms of transformers' decoders.
#include "passes/fuse_rms_norm.h"

#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/dead_code_elimination.h"

namespace neuronc::passes {
namespace {

using testing::run_pass;

std::string fused(const std::string& before) {
  return run_pass<DeadCodeElimination>(run_pass<FuseRmsNorm>(before));
}

// fp32 LlamaRMSNorm: the weight multiplies the normalised row directly and joins the norm.
TEST(FuseRmsNorm, Fp32NormWithItsWeight) {
  const std::string before = R"(graph {
  input %x : f32[2, 16, 32]
  input %w : f32[32]
  %p : f32[2, 16, 32] = aten.pow.Tensor_Scalar(%x) {exponent = 2}
  %m : f32[2, 16, 1] = aten.mean.dim(%p) {dim = [-1], keepdim = true}
  %a : f32[2, 16, 1] = aten.add.Scalar(%m) {other = 1e-06}
  %r : f32[2, 16, 1] = aten.rsqrt.default(%a)
  %y : f32[2, 16, 32] = aten.mul.Tensor(%x, %r)
  %z : f32[2, 16, 32] = aten.mul.Tensor(%w, %y)
  output %z
}
)";
  const std::string after = R"(graph {
  input %x : f32[2, 16, 32]
  input %w : f32[32]
  %z : f32[2, 16, 32] = aten.rms_norm.default(%x, %w) {normalized_shape = [32], eps = 1e-06}
  output %z
}
)";
  EXPECT_EQ(fused(before), after);
}

// bf16 LlamaRMSNorm: float32(x0) in, the cast back to bf16 out; the weight multiplies the
// rounded row and stays outside.
TEST(FuseRmsNorm, Bf16NormAbsorbsItsCasts) {
  const std::string before = R"(graph {
  input %x0 : bf16[4, 64]
  input %w : bf16[64]
  %x : f32[4, 64] = aten._to_copy.default(%x0) {dtype = #f32}
  %p : f32[4, 64] = aten.mul.Tensor(%x, %x)
  %m : f32[4, 1] = aten.mean.dim(%p) {dim = [1], keepdim = true}
  %a : f32[4, 1] = aten.add.Scalar(%m) {other = 1e-05}
  %r : f32[4, 1] = aten.rsqrt.default(%a)
  %y : f32[4, 64] = aten.mul.Tensor(%r, %x)
  %b : bf16[4, 64] = aten._to_copy.default(%y) {dtype = #bf16}
  %z : bf16[4, 64] = aten.mul.Tensor(%w, %b)
  output %z
}
)";
  const std::string after = R"(graph {
  input %x0 : bf16[4, 64]
  input %w : bf16[64]
  %b : bf16[4, 64] = aten.rms_norm.default(%x0, _) {normalized_shape = [64], eps = 1e-05}
  %z : bf16[4, 64] = aten.mul.Tensor(%w, %b)
  output %z
}
)";
  EXPECT_EQ(fused(before), after);
}

// Left alone: a statistic read twice, a graph output in the chain, a mean over another dim,
// a mean of another tensor than the one scaled, a power other than 2.
TEST(FuseRmsNorm, OnlyTheExactPatternIsFused) {
  for (const char* body : {// the mean is also an output
                           R"(%p : f32[4, 8] = aten.pow.Tensor_Scalar(%x) {exponent = 2}
  %m : f32[4, 1] = aten.mean.dim(%p) {dim = [-1], keepdim = true}
  %a : f32[4, 1] = aten.add.Scalar(%m) {other = 1e-05}
  %r : f32[4, 1] = aten.rsqrt.default(%a)
  %y : f32[4, 8] = aten.mul.Tensor(%x, %r)
  output %y
  output %m)",
                           // the rsqrt is read twice
                           R"(%p : f32[4, 8] = aten.pow.Tensor_Scalar(%x) {exponent = 2}
  %m : f32[4, 1] = aten.mean.dim(%p) {dim = [-1], keepdim = true}
  %a : f32[4, 1] = aten.add.Scalar(%m) {other = 1e-05}
  %r : f32[4, 1] = aten.rsqrt.default(%a)
  %y : f32[4, 8] = aten.mul.Tensor(%x, %r)
  %y2 : f32[4, 8] = aten.mul.Tensor(%y, %r)
  output %y2)",
                           // mean over dim 0
                           R"(%p : f32[4, 8] = aten.pow.Tensor_Scalar(%x) {exponent = 2}
  %m : f32[1, 8] = aten.mean.dim(%p) {dim = [0], keepdim = true}
  %a : f32[1, 8] = aten.add.Scalar(%m) {other = 1e-05}
  %r : f32[1, 8] = aten.rsqrt.default(%a)
  %y : f32[4, 8] = aten.mul.Tensor(%x, %r)
  output %y)",
                           // the scaled tensor is not the squared one
                           R"(%p : f32[4, 8] = aten.pow.Tensor_Scalar(%x) {exponent = 2}
  %m : f32[4, 1] = aten.mean.dim(%p) {dim = [-1], keepdim = true}
  %a : f32[4, 1] = aten.add.Scalar(%m) {other = 1e-05}
  %r : f32[4, 1] = aten.rsqrt.default(%a)
  %y : f32[4, 8] = aten.mul.Tensor(%v, %r)
  output %y)",
                           // a cube
                           R"(%p : f32[4, 8] = aten.pow.Tensor_Scalar(%x) {exponent = 3}
  %m : f32[4, 1] = aten.mean.dim(%p) {dim = [-1], keepdim = true}
  %a : f32[4, 1] = aten.add.Scalar(%m) {other = 1e-05}
  %r : f32[4, 1] = aten.rsqrt.default(%a)
  %y : f32[4, 8] = aten.mul.Tensor(%x, %r)
  output %y)"}) {
    const std::string before =
        std::string("graph {\n  input %x : f32[4, 8]\n  input %v : f32[4, 8]\n  ") + body + "\n}\n";
    EXPECT_EQ(run_pass<FuseRmsNorm>(before).find("rms_norm"), std::string::npos) << body;
  }
}

}  // namespace
}  // namespace neuronc::passes
