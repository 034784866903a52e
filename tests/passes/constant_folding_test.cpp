// Constant folding: before/after IR and folded values.
#include "passes/constant_folding.h"

#include <gtest/gtest.h>

#include <cstring>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/dead_code_elimination.h"
#include "passes/host_eval.h"

namespace neuronc::passes {
namespace {

TEST(ConstantFolding, FoldsMaskArithmeticButNotUserInputs) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 4]
  %r : i64[4] = aten.arange.default() {end = 4}
  %c : i64[4, 1] = aten.view.default(%r) {size = [4, 1]}
  %m : bool[4, 4] = aten.gt.Tensor(%r, %c)
  %y : f32[4, 4] = aten.masked_fill.Scalar(%x, %m) {value = -inf}
  output %y
})");
  ConstantFolding fold;
  EXPECT_TRUE(fold.run(*g));
  ir::verify_or_throw(*g);
  EXPECT_EQ(ir::print(*g), R"(graph {
  input %x : f32[4, 4]
  const %m_folded : bool[4, 4] "folded.m"
  %y : f32[4, 4] = aten.masked_fill.Scalar(%x, %m_folded) {value = -inf}
  output %y
}
)");
  auto mask = read_constant(*g->find_value("m_folded"));
  ASSERT_TRUE(mask.has_value());
  // Row i, column j is masked when j > i (a causal mask).
  const std::vector<double> want = {0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0};
  EXPECT_EQ(mask->data, want);
}

TEST(ConstantFolding, CastsWeightsToBf16WithRoundToNearestEven) {
  auto g = ir::parse(R"(graph {
  input %x : bf16[3]
  param %w : f32[3] "w"
  %wb : bf16[3] = aten._to_copy.default(%w) {dtype = #bf16}
  %y : bf16[3] = aten.mul.Tensor(%x, %wb)
  output %y
})");
  // 1 + 2^-8 is a tie between bf16 neighbours 1 and 1 + 2^-7: rounds to even (1.0).
  static const float w[3] = {1.0f + 1.0f / 256, 3.0f, -0.1f};
  g->find_value("w")->set_payload(
      {reinterpret_cast<const std::byte*>(w), sizeof w, 0, {}, nullptr});
  ConstantFolding fold;
  ASSERT_TRUE(fold.run(*g));
  const ir::Value* c = g->find_value("wb_folded");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->dtype(), ir::DType::bf16);
  // The cast is deferred: the constant reads the weight's own f32 bytes, not a copy.
  EXPECT_EQ(c->payload()->data, reinterpret_cast<const std::byte*>(w));
  EXPECT_EQ(c->payload()->stored_dtype, ir::DType::f32);
  EXPECT_EQ(g->find_value("w"), nullptr);  // the fp32 weight is gone
  // Its value, read as a pass reads it, is the cast's.
  const std::optional<DenseTensor> d = dense_constant(*c);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->nbytes(), 6u);
  uint16_t bits[3];
  std::memcpy(bits, d->data, 6);
  EXPECT_EQ(bits[0], 0x3f80);
  EXPECT_EQ(bits[1], 0x4040);
  EXPECT_EQ(bits[2], 0xbdcd);  // -0.1 -> 0xbdcccccd rounds up to 0xbdcd
}

TEST(ConstantFolding, ADeferredCastReadsThroughStridesAndFoldsOnward) {
  // Column 1 of a [2, 3] f32 weight (strides [3, 1], offset 1), cast to bf16, then negated:
  // the negation folds from the deferred cast's rounded values.
  auto g = ir::parse(R"(graph {
  param %w : f32[2] "w"
  %wb : bf16[2] = aten._to_copy.default(%w) {dtype = #bf16}
  %n : bf16[2] = aten.neg.default(%wb)
  output %n
})");
  static const float w[6] = {0, 1.0f + 1.0f / 256, 0, 0, -0.1f, 0};
  g->find_value("w")->set_payload(
      {reinterpret_cast<const std::byte*>(w), sizeof w, 1, {3}, nullptr});
  ConstantFolding fold;
  ASSERT_TRUE(fold.run(*g));
  ASSERT_EQ(g->outputs().size(), 1u);
  const std::optional<DenseTensor> d = dense_constant(*g->outputs()[0].value);
  ASSERT_TRUE(d.has_value());
  uint16_t bits[2];
  std::memcpy(bits, d->data, 4);
  EXPECT_EQ(bits[0], 0xbf80);  // -(1 + 2^-8) rounded to even first: -1
  EXPECT_EQ(bits[1], 0x3dcd);
}

TEST(ConstantFolding, MutatedBuffersAreNotConstants) {
  auto g = ir::parse(R"(graph {
  input %x : f32[2]
  buffer %b : f32[2] "running"
  %n : f32[2] = aten.neg.default(%b)
  %u : f32[2] = aten.add.Tensor(%b, %x)
  output %n
  output %u buffer_mutation "running"
})");
  static const float b[2] = {1, 2};
  g->find_value("b")->set_payload(
      {reinterpret_cast<const std::byte*>(b), sizeof b, 0, {}, nullptr});
  ConstantFolding fold;
  EXPECT_FALSE(fold.run(*g));
}

TEST(ConstantFolding, RespectsTheSizeLimitAndStrides) {
  auto g = ir::parse(R"(graph {
  param %w : f32[2, 3] "w"
  %t : f32[3, 2] = aten.permute.default(%w) {dims = [1, 0]}
  %z : f32[64] = aten.zeros.default() {size = [64]}
  output %t
  output %z
})");
  // A transposed view: storage [[0,1],[2,3],[4,5]] read with strides [1, 2] is [[0,2,4],[1,3,5]].
  static const float w[6] = {0, 1, 2, 3, 4, 5};
  g->find_value("w")->set_payload(
      {reinterpret_cast<const std::byte*>(w), sizeof w, 0, {1, 2}, nullptr});
  ConstantFolding fold(/*max_elements=*/16);
  ASSERT_TRUE(fold.run(*g));
  auto t = read_constant(*g->find_value("t_folded"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->data, (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_NE(g->find_node("z"), nullptr);  // 64 elements > 16: left in the graph
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

TEST(ConstantFolding, BoolMaskAndDiffCumsum) {
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 4]
  %one : bool[] = aten.full.default() {size = [], fill_value = true, dtype = #bool}
  %r : i64[4] = aten.arange.default() {end = 4}
  %le : bool[4] = aten.le.Scalar(%r) {other = 2}
  %m : bool[4] = aten.__and__.Tensor(%one, %le)
  %y : f32[1, 4] = aten.masked_fill.Scalar(%x, %m) {value = 0.0}
  output %y
})");
  ConstantFolding fold;
  ASSERT_TRUE(fold.run(*g));
  EXPECT_EQ(g->nodes().size(), 1u) << ir::print(*g);
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

TEST(ConstantFolding, PositionIdsChainDiffCumsumIndex) {
  auto g = ir::parse(R"(graph {
  input %x : i64[1, 2]
  %r : i64[4] = aten.arange.default() {end = 4}
  %v : i64[1, 4] = aten.view.default(%r) {size = [1, 4]}
  %p : i64[1, 1] = aten.full.default() {size = [1, 1], fill_value = -1, dtype = #i64}
  %d : i64[1, 4] = aten.diff.default(%v, %p, _)
  %c : i64[1, 4] = aten.cumsum.default(%d) {dim = -1}
  %i0 : i64[1, 1] = aten.zeros.default() {size = [1, 1], dtype = #i64}
  %j : i64[2] = aten.arange.start() {start = 1, end = 3}
  %ix : i64[1, 2] = aten.index.Tensor(%c, %i0, %j)
  %y : i64[1, 2] = aten.add.Tensor(%x, %ix)
  output %y
})");
  ConstantFolding fold;
  ASSERT_TRUE(fold.run(*g));
  ASSERT_EQ(g->nodes().size(), 1u) << ir::print(*g);
  auto ix = read_constant(*g->find_value("ix_folded"));
  ASSERT_TRUE(ix.has_value());
  // diff([-1, 0, 1, 2, 3]) = [1, 1, 1, 1]; cumsum = [1, 2, 3, 4]; columns 1 and 2 = [2, 3].
  EXPECT_EQ(ix->data, (std::vector<double>{2, 3}));
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

// Folding runs the host kernel the loader would run: any operator with one folds, including
// lookups of constant positions and nodes with several results; a node the kernel refuses is
// left to run time, where the same kernel reports it.
TEST(ConstantFolding, RunsTheHostKernels) {
  auto g = ir::parse(R"(graph {
  input %x : f32[2, 2]
  param %table : f32[4, 2] "table"
  %pos : i64[2] = aten.arange.start() {start = 1, end = 3}
  %e : f32[2, 2] = aten.embedding.default(%table, %pos)
  %bad_ix : i64[1] = aten.full.default() {size = [1], fill_value = 7, dtype = #i64}
  %bad : f32[1, 2] = aten.index_select.default(%table, %bad_ix) {dim = 0}
  %s : f32[2, 2] = aten.add.Tensor(%x, %e)
  output %s
  output %bad
})");
  static const float table[8] = {0, 1, 10, 11, 20, 21, 30, 31};
  g->find_value("table")->set_payload(
      {reinterpret_cast<const std::byte*>(table), sizeof table, 0, {}, nullptr});
  ConstantFolding fold;
  ASSERT_TRUE(fold.run(*g));
  ir::verify_or_throw(*g);
  auto e = read_constant(*g->find_value("e_folded"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->data, (std::vector<double>{10, 11, 20, 21}));
  // Row 7 of a 4-row table: not folded, so the loader's kernel refuses it when it runs.
  ASSERT_NE(g->find_node("bad"), nullptr) << ir::print(*g);
  EXPECT_EQ(g->find_node("bad_ix"), nullptr);
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

// A trailing optional tensor left out of the node's inputs (linear without a bias) is None: the
// builder must not read past the inputs (it did, and CI's heap made the garbage a tensor).
TEST(HostEval, OmittedTrailingOptionalTensorIsNone) {
  auto g = ir::parse(R"(graph {
  input %x : f32[2, 3]
  input %w : f32[4, 3]
  %y : f32[2, 4] = aten.linear.default(%x, %w)
  output %y
})");
  const ir::Node& n = *g->find_node("y");
  ASSERT_EQ(n.inputs().size(), 2u);
  std::vector<size_t> asked;
  auto args = kernel_args(n, [&](size_t slot, const ir::Value&) {
    asked.push_back(slot);
    return static_cast<int32_t>(slot);
  });
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[2].name, "bias");
  EXPECT_EQ(args[2].kind, kernels::ArgKind::none);
  EXPECT_EQ(asked, (std::vector<size_t>{0, 1}));
}

}  // namespace
}  // namespace neuronc::passes
