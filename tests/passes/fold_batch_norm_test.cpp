// Batch-norm folding: before/after IR and folded values.
#include "passes/fold_batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "kernels/numerics.h"
#include "pass_test_util.h"
#include "passes/constant_folding.h"
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

// A convolution's f32 weight is not copied: the folded weight shares its bytes with a deferred
// scale per output channel, and reads (in f32, and through the bf16 cast --auto-cast defers
// after it) as the weight scaled in double and rounded once to f32.
TEST(FoldBatchNorm, FoldedWeightSharesTheWeightBytesWithADeferredScale) {
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 3, 5, 5]
  param %w : f32[4, 3, 3, 3] "conv.weight"
  param %gamma : f32[4] "bn.weight"
  param %beta : f32[4] "bn.bias"
  buffer %mean : f32[4] "bn.running_mean"
  buffer %var : f32[4] "bn.running_var"
  %y : f32[1, 4, 3, 3] = aten.conv2d.default(%x, %w) {stride = [1, 1], padding = [0, 0], dilation = [1, 1], groups = 1}
  %z : f32[1, 4, 3, 3] = aten.batch_norm.default(%y, %gamma, %beta, %mean, %var) {training = false, momentum = 0.1, eps = 0.001, cudnn_enabled = false}
  output %z
})");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f), pos(0.1f, 3.0f);
  std::vector<float> w(4 * 27), gamma(4), beta(4), mean(4), var(4);
  for (float& v : w) v = u(rng);
  for (int o = 0; o < 4; ++o)
    gamma[o] = u(rng), beta[o] = u(rng), mean[o] = u(rng), var[o] = pos(rng);
  set_f32(*g, "w", w);
  set_f32(*g, "gamma", gamma);
  set_f32(*g, "beta", beta);
  set_f32(*g, "mean", mean);
  set_f32(*g, "var", var);
  const std::byte* bytes = g->find_value("w")->payload()->data;
  ASSERT_TRUE(FoldBatchNorm().run(*g));
  ir::verify_or_throw(*g);
  const ir::Value* folded = g->find_value("y_weight");
  ASSERT_NE(folded, nullptr);
  ASSERT_EQ(folded->payload()->data, bytes);  // the weight's own bytes
  ASSERT_NE(folded->payload()->row_scale, nullptr);
  EXPECT_EQ(folded->payload()->row_scale_pitch, 27);
  // s and the weight as the fold computes them: in double, the product rounded once to f32.
  std::vector<double> want(w.size());
  for (int o = 0; o < 4; ++o) {
    const double s = static_cast<double>(gamma[o]) / std::sqrt(static_cast<double>(var[o]) + 0.001);
    for (int k = 0; k < 27; ++k)
      want[o * 27 + k] = static_cast<float>(static_cast<double>(w[o * 27 + k]) * s);
  }
  const auto read = read_constant(*folded);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->data, want);
  EXPECT_NE(read->data[0], static_cast<double>(w[0]));  // scaled, not the bytes as they are

  // --auto-cast's narrowing of the folded weight is deferred on top of the scale.
  auto cast = ir::parse(R"(graph {
  param %w : f32[4, 3, 3, 3] "w"
  %wb : bf16[4, 3, 3, 3] = aten._to_copy.default(%w) {dtype = #bf16}
  output %wb
})");
  ir::ConstantPayload p = *folded->payload();
  cast->find_value("w")->set_payload(p);
  ASSERT_TRUE(ConstantFolding().run(*cast));
  const ir::Value* c = cast->find_value("wb_folded");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->payload()->data, bytes);
  EXPECT_EQ(c->payload()->stored_dtype, ir::DType::f32);
  EXPECT_NE(c->payload()->row_scale, nullptr);
  const std::optional<DenseTensor> d = dense_constant(*c);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->nbytes(), want.size() * 2);
  for (size_t i = 0; i < want.size(); ++i) {
    uint16_t got;
    std::memcpy(&got, d->data + 2 * i, 2);
    EXPECT_EQ(got, kernels::f32_to_bf16_nearest(static_cast<float>(want[i]))) << i;
  }
}

// A weight whose storage holds more than the weight (a view of a larger tensor) is scaled at once,
// with the same values.
TEST(FoldBatchNorm, WeightInALargerStorageIsScaledAtOnce) {
  auto g = ir::parse(kConvBn);
  attach_conv_bn(*g);
  set_f32(*g, "w", {2, 3, 99});  // one element past the weight
  ASSERT_TRUE(FoldBatchNorm().run(*g));
  ir::verify_or_throw(*g);
  const ir::Value* w = g->find_value("y_weight");
  EXPECT_EQ(w->payload()->row_scale, nullptr);
  const auto read = read_constant(*w);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->data, (std::vector<double>{1.0, 1.5}));
}

// A scale that does not cover the payload's elements is a malformed payload, reported by the
// verifier, and refused by the passes' reader rather than read past its end.
TEST(FoldBatchNorm, ShortDeferredScaleIsReported) {
  auto g = ir::parse(R"(graph {
  param %w : f32[4, 2] "w"
  output %w
})");
  set_f32(*g, "w", {1, 2, 3, 4, 5, 6, 7, 8});
  ir::ConstantPayload p = *g->find_value("w")->payload();
  p.row_scale = std::make_shared<const std::vector<double>>(std::vector<double>{1, 2, 3});
  p.row_scale_pitch = 2;
  g->find_value("w")->set_payload(p);
  const auto problems = ir::verify(*g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("one scale per 2 of its 8 stored elements, found f32 and 3 scales"),
            std::string::npos)
      << problems[0];
  EXPECT_FALSE(read_constant(*g->find_value("w")));
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
