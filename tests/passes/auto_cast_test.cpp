// Auto-cast: before/after IR.
#include "passes/auto_cast.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/verifier.h"

namespace neuronc::passes {
namespace {

std::string run(const std::string& text, AutoCastMode mode) {
  auto g = ir::parse(text);
  AutoCast pass(mode);
  pass.run(*g);
  ir::verify_or_throw(*g);
  return ir::print(*g);
}

const char* kMlp = R"(graph {
  input %x : f32[2, 8]
  param %w : f32[4, 8] "fc.weight"
  %y : f32[2, 4] = aten.linear.default(%x, %w, _)
  %r : f32[2, 4] = aten.relu.default(%y)
  %z : f32[2, 4] = aten.mul.Tensor(%r, %r)
  output %z
}
)";

TEST(AutoCast, NoneChangesNothing) {
  EXPECT_EQ(run(kMlp, AutoCastMode::none), kMlp);
}

TEST(AutoCast, MatmulCastsOnlyMatmulOperands) {
  EXPECT_EQ(run(kMlp, AutoCastMode::matmul), R"(graph {
  input %x : f32[2, 8]
  param %w : f32[4, 8] "fc.weight"
  %x_bf16 : bf16[2, 8] = aten._to_copy.default(%x) {dtype = #bf16}
  %w_bf16 : bf16[4, 8] = aten._to_copy.default(%w) {dtype = #bf16}
  %y_bf16 : bf16[2, 4] = aten.linear.default(%x_bf16, %w_bf16, _)
  %y : f32[2, 4] = aten._to_copy.default(%y_bf16) {dtype = #f32}
  %r : f32[2, 4] = aten.relu.default(%y)
  %z : f32[2, 4] = aten.mul.Tensor(%r, %r)
  output %z
}
)");
}

TEST(AutoCast, AllKeepsChainsInBf16) {
  EXPECT_EQ(run(kMlp, AutoCastMode::all), R"(graph {
  input %x : f32[2, 8]
  param %w : f32[4, 8] "fc.weight"
  %x_bf16 : bf16[2, 8] = aten._to_copy.default(%x) {dtype = #bf16}
  %w_bf16 : bf16[4, 8] = aten._to_copy.default(%w) {dtype = #bf16}
  %y_bf16 : bf16[2, 4] = aten.linear.default(%x_bf16, %w_bf16, _)
  %y : f32[2, 4] = aten._to_copy.default(%y_bf16) {dtype = #f32}
  %r_bf16 : bf16[2, 4] = aten.relu.default(%y_bf16)
  %r : f32[2, 4] = aten._to_copy.default(%r_bf16) {dtype = #f32}
  %z_bf16 : bf16[2, 4] = aten.mul.Tensor(%r_bf16, %r_bf16)
  %z : f32[2, 4] = aten._to_copy.default(%z_bf16) {dtype = #f32}
  output %z
}
)");
}

// A projection's result viewed into heads feeds a second matmul: the second one reads the same
// views of the bf16 result (bf16 -> f32 -> bf16 is the identity), not a cast of the f32 view.
TEST(AutoCast, ViewsOfACastBackReadTheBf16Value) {
  const std::string out = run(R"(graph {
  input %x : f32[4, 8]
  param %w : f32[8, 8] "w"
  param %v : f32[4, 3] "v"
  %y : f32[4, 8] = aten.linear.default(%x, %w, _)
  %r : f32[4, 2, 4] = aten.view.default(%y) {size = [4, 2, 4]}
  %p : f32[2, 4, 4] = aten.permute.default(%r) {dims = [1, 0, 2]}
  %z : f32[2, 4, 3] = aten.matmul.default(%p, %v)
  output %z
}
)",
                              AutoCastMode::matmul);
  EXPECT_NE(out.find("%r_bf16 : bf16[4, 2, 4] = aten.view.default(%y_bf16)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("%p_bf16 : bf16[2, 4, 4] = aten.permute.default(%r_bf16)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("aten.matmul.default(%p_bf16, %v_bf16)"), std::string::npos) << out;
  // The only f32 -> bf16 casts left are of the graph's inputs and weights.
  EXPECT_EQ(out.find("= aten._to_copy.default(%p)"), std::string::npos) << out;
}

// A view of a computed f32 value (not a conversion of a bf16 one) keeps its cast: relu's result
// is rounded to bf16 for the next matmul.
TEST(AutoCast, ComputedF32ValuesAreStillCast) {
  const std::string out = run(R"(graph {
  input %x : f32[4, 8]
  param %w : f32[8, 8] "w"
  %y : f32[4, 8] = aten.linear.default(%x, %w, _)
  %a : f32[4, 8] = aten.relu.default(%y)
  %r : f32[8, 4] = aten.t.default(%a)
  %z : f32[8, 8] = aten.mm.default(%r, %a)
  output %z
}
)",
                              AutoCastMode::matmul);
  EXPECT_NE(out.find("= aten._to_copy.default(%r) {dtype = #bf16}"), std::string::npos) << out;
}

TEST(AutoCast, ComparisonsAndIntegerOpsStay) {
  const std::string text = R"(graph {
  input %x : f32[4]
  input %i : i64[4]
  %b : bool[4] = aten.gt.Scalar(%x) {other = 0.0}
  %j : i64[4] = aten.add.Tensor(%i, %i)
  output %b
  output %j
}
)";
  EXPECT_EQ(run(text, AutoCastMode::all), text);
}

TEST(AutoCast, ParsesModeNames) {
  EXPECT_EQ(parse_auto_cast("matmult"), AutoCastMode::matmul);
  EXPECT_EQ(parse_auto_cast("all"), AutoCastMode::all);
  EXPECT_FALSE(parse_auto_cast("fp8").has_value());
}

}  // namespace
}  // namespace neuronc::passes
