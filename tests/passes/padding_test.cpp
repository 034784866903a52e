// Padded-dim analysis (passes/padding.h): what padding a symbolic dim keeps exact, and the
// node and reason when it does not.
#include "passes/padding.h"

#include <gtest/gtest.h>

#include "ir/printer.h"

namespace neuronc::passes {
namespace {

// The verdict for `text` with the named symbols padded as given.
PaddingVerdict verdict(const std::string& text, std::map<std::string, PadWith> padded) {
  auto g = ir::parse(text);
  std::map<ir::SymbolId, PadWith> ids;
  for (const auto& [name, with] : padded) ids[*g->find_symbol(name)] = with;
  return check_padding(*g, ids);
}

PaddingVerdict zeros(const std::string& text, const std::string& sym = "s0") {
  return verdict(text, {{sym, PadWith::zeros}});
}

TEST(Padding, RowWiseWorkIsExact) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  param %w : f32[16, 8] "w"
  param %g : f32[16] "g"
  %h : f32[s0, 16] = aten.linear.default(%x, %w)
  %r : f32[s0, 16] = aten.relu.default(%h)
  %n : f32[s0, 16] = aten.layer_norm.default(%r, %g) {normalized_shape = [16]}
  %v : f32[s0, 4, 4] = aten.view.default(%n) {size = [s0, 4, 4]}
  %f : f32[4*s0, 4] = aten.view.default(%v) {size = [4*s0, 4]}
  output %f
})");
  EXPECT_TRUE(v.ok) << v.message();
}

// A sum skips zeros; a mean divides by the padded count.
TEST(Padding, SumOverZerosIsExactAndAMeanIsNot) {
  const char* sum = R"(graph {
  sym s0 [1, 64]
  input %x : f32[2, s0]
  %y : f32[2] = aten.sum.dim_IntList(%x) {dim = [1]}
  output %y
})";
  EXPECT_TRUE(zeros(sum).ok);
  // Copies of the last row would be counted twice.
  EXPECT_FALSE(verdict(sum, {{"s0", PadWith::edge}}).ok);
  const auto mean = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[2, s0]
  %y : f32[2] = aten.mean.dim(%x) {dim = [1]}
  output %y
})");
  ASSERT_FALSE(mean.ok);
  EXPECT_EQ(mean.node, "y");
  EXPECT_EQ(mean.op, "aten.mean.dim");
  EXPECT_NE(mean.reason.find("reduces over dim 1, which s0 pads"), std::string::npos)
      << mean.reason;
  EXPECT_NE(mean.message().find("node 'y' (aten.mean.dim)"), std::string::npos);
}

// Masked mean pooling, sum(h * m) / sum(m): the mask zeroes the padding.
TEST(Padding, MaskedMeanPoolingIsExact) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %h : f32[2, s0, 8]
  input %m : f32[2, s0]
  %m3 : f32[2, s0, 1] = aten.unsqueeze.default(%m) {dim = 2}
  %hm : f32[2, s0, 8] = aten.mul.Tensor(%h, %m3)
  %num : f32[2, 8] = aten.sum.dim_IntList(%hm) {dim = [1]}
  %den : f32[2, 1] = aten.sum.dim_IntList(%m3) {dim = [1]}
  %y : f32[2, 8] = aten.div.Tensor(%num, %den)
  output %y
})");
  EXPECT_TRUE(v.ok) << v.message();
}

// A softmax over padded keys needs a mask that hides them: (1 - m) * finfo.min is -huge there.
TEST(Padding, SoftmaxNeedsAMaskOverThePadding) {
  const char* unmasked = R"(graph {
  sym s0 [1, 64]
  input %s : f32[2, s0]
  %p : f32[2, s0] = aten._softmax.default(%s) {dim = 1, half_to_float = false}
  output %p
})";
  const auto bad = zeros(unmasked);
  ASSERT_FALSE(bad.ok);
  EXPECT_NE(bad.reason.find("softmax"), std::string::npos) << bad.reason;
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %s : f32[2, s0]
  input %m : f32[2, s0]
  %inv : f32[2, s0] = aten.rsub.Scalar(%m) {other = 1}
  %bias : f32[2, s0] = aten.mul.Scalar(%inv) {other = -3.4028234663852886e+38}
  %t : f32[2, s0] = aten.add.Tensor(%s, %bias)
  %p : f32[2, s0] = aten._softmax.default(%t) {dim = 1, half_to_float = false}
  output %p
})");
  EXPECT_TRUE(v.ok) << v.message();
}

const char* kAttention = R"(graph {
  sym s0 [1, 64]
  input %q : f32[1, 2, s0, 8]
  input %k : f32[1, 2, s0, 8]
  input %v : f32[1, 2, s0, 8]
  %o : f32[1, 2, s0, 8] = aten.scaled_dot_product_attention.default(%q, %k, %v) {is_causal = CAUSAL}
  output %o
})";

TEST(Padding, CausalAttentionIsExactAndFullAttentionIsNot) {
  std::string causal = kAttention, full = kAttention;
  causal.replace(causal.find("CAUSAL"), 6, "true");
  full.replace(full.find("CAUSAL"), 6, "false");
  EXPECT_TRUE(zeros(causal).ok) << zeros(causal).message();
  const auto v = zeros(full);
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("neither a causal mask nor its attention mask hides them"),
            std::string::npos)
      << v.reason;
}

// A padded batch whose attention mask is zero there: every key of a padded row is masked, so
// zeros would make those rows NaN; copies of a real row keep them finite.
TEST(Padding, FullyMaskedPaddedRowsNeedEdgePadding) {
  const char* text = R"(graph {
  sym s0 [1, 16]
  input %x : f32[s0, 2, 8, 4]
  input %m : bool[s0, 8]
  %m4 : bool[s0, 1, 1, 8] = aten.view.default(%m) {size = [s0, 1, 1, 8]}
  %o : f32[s0, 2, 8, 4] = aten.scaled_dot_product_attention.default(%x, %x, %x, %m4)
  output %o
})";
  const auto z = zeros(text);
  ASSERT_FALSE(z.ok);
  EXPECT_NE(z.reason.find("0/0 (NaN)"), std::string::npos) << z.reason;
  EXPECT_TRUE(verdict(text, {{"s0", PadWith::edge}}).ok);
}

TEST(Padding, OnlyRowsEverySizeHasMayBeSelected) {
  const char* text = R"(graph {
  sym s0 [2, 64]
  input %x : f32[3, s0, 8]
  %y : f32[3, 8] = aten.select.int(%x) {dim = 1, index = INDEX}
  output %y
})";
  auto with = [&](const char* index) {
    std::string t = text;
    t.replace(t.find("INDEX"), 5, index);
    return zeros(t);
  };
  EXPECT_TRUE(with("1").ok);
  EXPECT_FALSE(with("2").ok);   // s0 may be 2: row 2 would be padding
  EXPECT_FALSE(with("-1").ok);  // the last row of the bucket is padding
}

TEST(Padding, ConcatenatingAlongThePaddingIsRefused) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  input %y : f32[s0, 8]
  %c : f32[2*s0, 8] = aten.cat.default(%x, %y) {dim = 0}
  output %c
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("concatenates along dim 0"), std::string::npos) << v.reason;
}

// [s0, 4] flattened is padded at its end; [4, s0] flattened has padding inside every row, which
// the loader cannot cut back.
TEST(Padding, InterleavedOutputsAreRefused) {
  const char* text = R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 4]
  %t : f32[4, s0] = aten.permute.default(%x) {dims = [1, 0]}
  %f : f32[4*s0] = aten.view.default(%t) {size = [4*s0]}
  output %f
})";
  const auto v = zeros(text);
  ASSERT_FALSE(v.ok);
  EXPECT_TRUE(v.node.empty());
  EXPECT_NE(v.reason.find("interleaves the padding of s0"), std::string::npos) << v.reason;
}

TEST(Padding, ADivisionByTheZeroPaddingIsRefused) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0]
  %y : f32[s0] = aten.reciprocal.default(%x)
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("infinite"), std::string::npos) << v.reason;
}

// An operator without a padding rule refuses only when the padding reaches it.
TEST(Padding, UnknownOperatorsRefuseOnlyOnPaddedOperands) {
  const char* text = R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  input %w : f32[8, 8]
  %y : f32[8, 8] = aten.linalg_inv.default(%w)
  %z : f32[s0, 8] = aten.mm.default(%x, %y)
  output %z
})";
  EXPECT_TRUE(zeros(text).ok) << zeros(text).message();
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, s0]
  %y : f32[s0, s0] = aten.linalg_inv.default(%x)
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("no padding rule"), std::string::npos) << v.reason;
}

}  // namespace
}  // namespace neuronc::passes
