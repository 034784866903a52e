// Batch-norm folding: before/after IR and folded values.
#include "passes/fold_batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "pass_test_util.h"
#include "passes/host_eval.h"

namespace neuronc::passes {
namespace {

using testing::set_f32;

// Two output channels, one input channel, 1x1 kernel: easy to check by hand.
constexpr const char* kConvBn = R"(graph {
  input %x : f32[1, 1, 2, 2]
  param %w : f32[2, 1, 1, 1] "conv.weight"
  param %b : f32[2] "conv.bias"
  param %gamma : f32[2] "bn.weight"
  param %beta : f32[2] "bn.bias"
  buffer %mean : f32[2] "bn.running_mean"
  buffer %var : f32[2] "bn.running_var"
  %y : f32[1, 2, 2, 2] = aten.conv2d.default(%x, %w, %b) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], groups = 1}
  %z : f32[1, 2, 2, 2] = aten.batch_norm.default(%y, %gamma, %beta, %mean, %var) {training = false, momentum = 0.1, eps = 0.0, cudnn_enabled = false}
  %r : f32[1, 2, 2, 2] = aten.relu.default(%z)
  output %r
})";

void attach_conv_bn(ir::Graph& g) {
  set_f32(g, "w", {2, 3});
  set_f32(g, "b", {1, -1});
  set_f32(g, "gamma", {1, 2});
  set_f32(g, "beta", {0.5, 0});
  set_f32(g, "mean", {1, 2});
  set_f32(g, "var", {4, 16});  // sqrt: 2, 4 -> s = 0.5, 0.5
}

TEST(FoldBatchNorm, ConvThenBatchNormBecomesOneConvolution) {
  auto g = ir::parse(kConvBn);
  attach_conv_bn(*g);
  FoldBatchNorm pass;
  ASSERT_TRUE(pass.run(*g));
  ir::verify_or_throw(*g);
  EXPECT_EQ(ir::print(*g, {.locations = false}), R"(graph {
  input %x : f32[1, 1, 2, 2]
  const %y_weight : f32[2, 1, 1, 1] "folded.z.weight"
  const %y_bias : f32[2] "folded.z.bias"
  %z : f32[1, 2, 2, 2] = aten.conv2d.default(%x, %y_weight, %y_bias) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], groups = 1}
  %r : f32[1, 2, 2, 2] = aten.relu.default(%z)
  output %r
}
)");
  // s = gamma / sqrt(var) = {0.5, 0.5}; t = beta - mean * s = {0, -1}.
  auto w = read_constant(*g->find_value("y_weight"));
  auto b = read_constant(*g->find_value("y_bias"));
  ASSERT_TRUE(w && b);
  EXPECT_EQ(w->data, (std::vector<double>{1.0, 1.5}));
  // b' = b * s + t = {1 * 0.5 + 0, -1 * 0.5 - 1}
  EXPECT_EQ(b->data, (std::vector<double>{0.5, -1.5}));
}

TEST(FoldBatchNorm, StandaloneBatchNormBecomesScaleAndShift) {
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 2, 3]
  param %gamma : f32[2] "bn.weight"
  buffer %mean : f32[2] "bn.running_mean"
  buffer %var : f32[2] "bn.running_var"
  %z : f32[1, 2, 3] = aten.batch_norm.default(%x, %gamma, _, %mean, %var) {training = false, momentum = 0.1, eps = 0.0, cudnn_enabled = false}
  output %z
})");
  set_f32(*g, "gamma", {3, 1});
  set_f32(*g, "mean", {1, -1});
  set_f32(*g, "var", {9, 0.25});
  FoldBatchNorm pass;
  ASSERT_TRUE(pass.run(*g));
  ir::verify_or_throw(*g);
  const std::string printed = ir::print(*g, {.locations = false});
  EXPECT_NE(printed.find("aten.mul.Tensor(%x, %z_scale)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%z : f32[1, 2, 3] = aten.add.Tensor("), std::string::npos) << printed;
  EXPECT_EQ(printed.find("batch_norm"), std::string::npos) << printed;
  auto s = read_constant(*g->find_value("z_scale"));
  auto t = read_constant(*g->find_value("z_shift"));
  ASSERT_TRUE(s && t);
  EXPECT_EQ(s->shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(s->data, (std::vector<double>{1.0, 2.0}));   // 3 / 3, 1 / 0.5
  EXPECT_EQ(t->data, (std::vector<double>{-1.0, 2.0}));  // 0 - 1 * 1, 0 + 1 * 2
  EXPECT_EQ(g->find_value("gamma"), nullptr);            // statistics are gone
}

TEST(FoldBatchNorm, ConvWithOtherUsesKeepsItsResult) {
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 1, 2, 2]
  param %w : f32[2, 1, 1, 1] "conv.weight"
  buffer %mean : f32[2] "bn.running_mean"
  buffer %var : f32[2] "bn.running_var"
  %y : f32[1, 2, 2, 2] = aten.conv2d.default(%x, %w, _) {groups = 1}
  %z : f32[1, 2, 2, 2] = aten.batch_norm.default(%y, _, _, %mean, %var) {training = false, momentum = 0.1, eps = 0.0, cudnn_enabled = false}
  %s : f32[1, 2, 2, 2] = aten.add.Tensor(%y, %z)
  output %s
})");
  set_f32(*g, "w", {1, 1});
  set_f32(*g, "mean", {0, 0});
  set_f32(*g, "var", {1, 1});
  FoldBatchNorm pass;
  ASSERT_TRUE(pass.run(*g));
  ir::verify_or_throw(*g);
  const std::string printed = ir::print(*g, {.locations = false});
  EXPECT_NE(printed.find("aten.conv2d.default(%x, %w, _)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("aten.mul.Tensor(%y, %z_scale)"), std::string::npos) << printed;
}

TEST(FoldBatchNorm, TrainingModeAndMutatedStatisticsStay) {
  auto g = ir::parse(R"(graph {
  input %x : f32[2, 2]
  buffer %mean : f32[2] "bn.running_mean"
  buffer %var : f32[2] "bn.running_var"
  %z : f32[2, 2] = aten.batch_norm.default(%x, _, _, %mean, %var) {training = true, momentum = 0.1, eps = 0.00001, cudnn_enabled = false}
  output %z
})");
  set_f32(*g, "mean", {0, 0});
  set_f32(*g, "var", {1, 1});
  FoldBatchNorm pass;
  EXPECT_FALSE(pass.run(*g));

  auto h = ir::parse(R"(graph {
  input %x : f32[2, 2]
  buffer %mean : f32[2] "bn.running_mean"
  buffer %var : f32[2] "bn.running_var"
  %z : f32[2, 2] = aten.batch_norm.default(%x, _, _, %mean, %var) {training = false, momentum = 0.1, eps = 0.00001, cudnn_enabled = false}
  %m : f32[2] = aten.add.Tensor(%mean, %mean)
  output %z
  output %m buffer_mutation "bn.running_mean"
})");
  set_f32(*h, "mean", {0, 0});
  set_f32(*h, "var", {1, 1});
  EXPECT_FALSE(pass.run(*h));
}

TEST(FoldBatchNorm, RuntimeStatisticsAreNotFolded) {
  auto g = ir::parse(R"(graph {
  input %x : f32[2, 2]
  input %mean : f32[2]
  buffer %var : f32[2] "bn.running_var"
  %z : f32[2, 2] = aten.batch_norm.default(%x, _, _, %mean, %var) {training = false, momentum = 0.1, eps = 0.00001, cudnn_enabled = false}
  output %z
})");
  set_f32(*g, "var", {1, 1});
  FoldBatchNorm pass;
  EXPECT_FALSE(pass.run(*g));
}

}  // namespace
}  // namespace neuronc::passes
