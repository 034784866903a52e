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
