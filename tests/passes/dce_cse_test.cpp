// Dead code and common subexpression elimination: before/after IR.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/dead_code_elimination.h"

namespace neuronc::passes {
namespace {

using testing::run_pass;

TEST(DeadCodeElimination, RemovesDeadChainsAndUnusedWeights) {
  const std::string before = R"(graph {
  input %x : f32[4]
  input %unused_input : f32[4]
  param %w : f32[4] "w"
  param %dead_w : f32[4] "dead"
  %a : f32[4] = aten.mul.Tensor(%x, %dead_w)
  %b : f32[4] = aten.relu.default(%a)
  %y : f32[4] = aten.add.Tensor(%x, %w)
  () = aten._assert_tensor_metadata.default(%x) {dtype = #f32}
  %keep : f32[4] = aten.relu_.default(%x)
  output %y
}
)";
  const std::string after = R"(graph {
  input %x : f32[4]
  input %unused_input : f32[4]
  param %w : f32[4] "w"
  %y : f32[4] = aten.add.Tensor(%x, %w)
  %keep : f32[4] = aten.relu_.default(%x)
  output %y
}
)";
  bool changed = false;
  EXPECT_EQ(run_pass<DeadCodeElimination>(before, &changed), after);
  EXPECT_TRUE(changed);
  EXPECT_EQ(run_pass<DeadCodeElimination>(after, &changed), after);
  EXPECT_FALSE(changed);
}

TEST(CommonSubexpressionElimination, MergesChainsOfDuplicates) {
  const std::string before = R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.mul.Scalar(%x) {other = 2.0}
  %b : f32[4] = aten.mul.Scalar(%x) {other = 2.0}
  %c : f32[4] = aten.relu.default(%a)
  %d : f32[4] = aten.relu.default(%b)
  %e : f32[4] = aten.mul.Scalar(%x) {other = 3.0}
  %s : f32[4] = aten.add.Tensor(%c, %d)
  %t : f32[4] = aten.add.Tensor(%s, %e)
  output %t
}
)";
  const std::string after = R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.mul.Scalar(%x) {other = 2.0}
  %c : f32[4] = aten.relu.default(%a)
  %e : f32[4] = aten.mul.Scalar(%x) {other = 3.0}
  %s : f32[4] = aten.add.Tensor(%c, %c)
  %t : f32[4] = aten.add.Tensor(%s, %e)
  output %t
}
)";
  EXPECT_EQ(run_pass<CommonSubexpressionElimination>(before), after);
}

TEST(CommonSubexpressionElimination, LeavesInplaceAndUnknownOpsAlone) {
  const std::string text = R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.relu_.default(%x)
  %b : f32[4] = aten.relu_.default(%x)
  %c : f32[4] = aten.bincount.default(%x)
  %d : f32[4] = aten.bincount.default(%x)
  %s : f32[4] = aten.add.Tensor(%a, %b)
  %t : f32[4] = aten.add.Tensor(%c, %d)
  output %s
  output %t
}
)";
  bool changed = true;
  EXPECT_EQ(run_pass<CommonSubexpressionElimination>(text, &changed), text);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace neuronc::passes
