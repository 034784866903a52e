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

// --- The audit of every transfer rule (issue 53): each rule that could let a padded element
// reach a real one, pinned by the case it must refuse beside the case it keeps exact.

// `text` with PLACEHOLDER replaced by `what`.
std::string with(std::string text, const std::string& what) {
  text.replace(text.find("PLACEHOLDER"), 11, what);
  return text;
}

// A flatten that puts the padding inside rows cannot then be reduced; one that keeps it at the
// end can.
TEST(PaddingAudit, AReshapeKeepsTrackOfWhereThePaddingLies) {
  EXPECT_TRUE(zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 4]
  %f : f32[4*s0] = aten.view.default(%x) {size = [4*s0]}
  %y : f32[] = aten.sum.default(%f)
  output %y
})")
                  .ok);
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[4, s0]
  %f : f32[4*s0] = aten.view.default(%x) {size = [4*s0]}
  %y : f32[] = aten.sum.default(%f)
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.node, "y");
  EXPECT_NE(v.reason.find("pad interleaved"), std::string::npos) << v.reason;
}

// A transpose moves the padding with its axis: a sum over it stays exact, a max does not.
TEST(PaddingAudit, ATransposeMovesThePaddingWithItsAxis) {
  const char* text = R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  %t : f32[8, s0] = aten.transpose.int(%x) {dim0 = 0, dim1 = 1}
  %y : f32[8] = PLACEHOLDER(%t) {dim = [1]}
  output %y
})";
  EXPECT_TRUE(zeros(with(text, "aten.sum.dim_IntList")).ok);
  EXPECT_FALSE(zeros(with(text, "aten.amax.default")).ok);
}

// A weight broadcast along a padded dim fills the padding with copies of itself, not zeros.
TEST(PaddingAudit, ABroadcastCopyIsNotZeroPadding) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  param %b : f32[1, 8] "b"
  %e : f32[s0, 8] = aten.expand.default(%b) {size = [s0, 8]}
  %y : f32[8] = aten.sum.dim_IntList(%e) {dim = [0]}
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.node, "y");
}

// A contraction over a padded dim is exact while one operand is zero there, not once both are
// moved off zero.
TEST(PaddingAudit, AMatmulContractsOverThePaddingOnlyWhileItIsZero) {
  const char* text = R"(graph {
  sym s0 [1, 64]
  input %a : f32[2, s0]
  input %b : f32[s0, 4]
  %a1 : f32[2, s0] = PLACEHOLDER
  %b1 : f32[s0, 4] = aten.add.Scalar(%b) {other = 1.0}
  %y : f32[2, 4] = aten.mm.default(%a1, %b1)
  output %y
})";
  EXPECT_TRUE(zeros(with(text, "aten.mul.Scalar(%a) {other = 3.0}")).ok);
  const auto v = zeros(with(text, "aten.add.Scalar(%a) {other = 1.0}"));
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("contracts over s0"), std::string::npos) << v.reason;
}

// A norm over a padded dim counts the padding; one per row of it does not.
TEST(PaddingAudit, ANormOverThePaddedDimIsRefused) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[8, s0]
  %y : f32[8, s0] = aten.layer_norm.default(%x) {normalized_shape = [s0]}
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("normalises along dim 1"), std::string::npos) << v.message();
}

// Batch norm on batch statistics (training) averages over the batch, padding included; on
// running statistics (inference) each element is its own.
TEST(PaddingAudit, BatchNormOnBatchStatisticsCountsThePaddedBatch) {
  const char* text = R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 3, 4, 4]
  param %w : f32[3] "w"
  param %b : f32[3] "b"
  buffer %m : f32[3] "m"
  buffer %v : f32[3] "v"
  %y : f32[s0, 3, 4, 4] = aten.batch_norm.default(%x, %w, %b, %m, %v) {training = PLACEHOLDER, momentum = 0.1, eps = 1e-05, cudnn_enabled = false}
  output %y
})";
  EXPECT_TRUE(zeros(with(text, "false")).ok) << zeros(with(text, "false")).message();
  const auto v = zeros(with(text, "true"));
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("normalises along dim 0"), std::string::npos) << v.reason;
}

// Indices nobody bounds may point into the padding; an embedding of padded ids only fills
// padded rows.
TEST(PaddingAudit, GathersAtUnboundedIndicesAreRefused) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  input %i : i64[3]
  %y : f32[3, 8] = aten.index_select.default(%x, %i) {dim = 0}
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("gathers at indices it cannot bound"), std::string::npos) << v.reason;
  EXPECT_TRUE(zeros(R"(graph {
  sym s0 [1, 64]
  input %ids : i64[s0]
  param %w : f32[16, 8] "w"
  %y : f32[s0, 8] = aten.embedding.default(%w, %ids)
  output %y
})")
                  .ok);
}

// Moving rows along a padded dim (a flip, a roll) brings padding to the front.
TEST(PaddingAudit, MovingRowsAlongThePaddedDimIsRefused) {
  const char* text = R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  %y : f32[s0, 8] = aten.flip.default(%x) {dims = [PLACEHOLDER]}
  output %y
})";
  EXPECT_TRUE(zeros(with(text, "1")).ok);
  const auto v = zeros(with(text, "0"));
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("moves rows"), std::string::npos) << v.reason;
}

// A window sliding over a padded spatial dim reads the padding; a padded batch does not.
TEST(PaddingAudit, AConvolutionSlidesOverOnlyUnpaddedDims) {
  const char* text = R"(graph {
  sym s0 [1, 64]
  input %x : f32[PLACEHOLDER]
  param %w : f32[4, 3, 3, 3] "w"
  %y : f32[OUT] = aten.conv2d.default(%x, %w)
  output %y
})";
  std::string batch = with(text, "s0, 3, 8, 8");
  batch.replace(batch.find("OUT"), 3, "s0, 4, 6, 6");
  EXPECT_TRUE(zeros(batch).ok) << zeros(batch).message();
  const auto w = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[1, 3, 8, s0]
  param %w : f32[4, 3, 1, 1] "w"
  %y : f32[1, 4, 8, s0] = aten.conv2d.default(%x, %w)
  output %y
})");
  ASSERT_FALSE(w.ok);
  EXPECT_NE(w.reason.find("slides a window or mixes channels"), std::string::npos) << w.reason;
}

// A running sum reads only earlier rows: exact over the padding; a minimum over zero padding
// may be a padded zero.
TEST(PaddingAudit, PrefixesAreExactAndAMinimumOverZerosIsNot) {
  EXPECT_TRUE(zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  %y : f32[s0, 8] = aten.cumsum.default(%x) {dim = 0}
  output %y
})")
                  .ok);
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  %y : f32[8] = aten.amin.default(%x) {dim = [0]}
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("would change the amin"), std::string::npos) << v.message();
}

// A window written along a padded dim lands at a bucket's offset, not the run's.
TEST(PaddingAudit, AWindowWrittenAlongThePaddedDimIsRefused) {
  const auto v = zeros(R"(graph {
  sym s0 [2, 64]
  input %x : f32[s0, 8]
  input %u : f32[1, 8]
  %y : f32[s0, 8] = aten.slice_scatter.default(%x, %u) {dim = 0, start = 1, end = 2}
  output %y
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("writes a window"), std::string::npos) << v.reason;
}

// A state the program writes keeps every row it writes, padded ones too.
TEST(PaddingAudit, APaddedStateWriteIsRefused) {
  const auto v = zeros(R"(graph {
  sym s0 [1, 64]
  input %x : f32[s0, 8]
  %y : f32[s0, 8] = aten.relu.default(%x)
  output %y buffer_mutation "cache"
})");
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("the padded rows would be kept"), std::string::npos) << v.reason;
}

}  // namespace
}  // namespace neuronc::passes
