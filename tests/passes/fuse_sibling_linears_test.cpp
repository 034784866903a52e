// Sibling-linear fusion: before/after IR and fused values.
#include "passes/fuse_sibling_linears.h"

#include <gtest/gtest.h>

#include <memory>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "pass_test_util.h"
#include "passes/host_eval.h"

namespace neuronc::passes {
namespace {

using testing::set_f32;

// Query / key / value projections of one input (widths 2, 1, 2; K = 2) and one linear of
// another input, which stays.
constexpr const char* kQkv = R"(graph {
  input %x : f32[3, 2]
  input %o : f32[3, 2]
  param %wq : f32[2, 2] "q.weight"
  param %bq : f32[2] "q.bias"
  param %wk : f32[1, 2] "k.weight"
  param %bk : f32[1] "k.bias"
  param %wv : f32[2, 2] "v.weight"
  param %bv : f32[2] "v.bias"
  %q : f32[3, 2] = aten.linear.default(%x, %wq, %bq)
  %k : f32[3, 1] = aten.linear.default(%x, %wk, %bk)
  %v : f32[3, 2] = aten.linear.default(%x, %wv, %bv)
  %u : f32[3, 2] = aten.linear.default(%o, %wq, %bq)
  output %q
  output %k
  output %v
  output %u
})";

TEST(FuseSiblingLinears, ProjectionsOfOneInputBecomeOneLinearAndSlices) {
  auto g = ir::parse(kQkv);
  set_f32(*g, "wq", {1, 2, 3, 4});
  set_f32(*g, "bq", {10, 20});
  set_f32(*g, "wk", {5, 6});
  set_f32(*g, "bk", {30});
  set_f32(*g, "wv", {7, 8, 9, 10});
  set_f32(*g, "bv", {40, 50});
  FuseSiblingLinears pass;
  ASSERT_TRUE(pass.run(*g));
  ir::verify_or_throw(*g);
  const std::string out = ir::print(*g, {.locations = false});
  EXPECT_NE(out.find("%q_fused : f32[3, 5] = aten.linear.default(%x, "), std::string::npos) << out;
  EXPECT_NE(out.find("%q : f32[3, 2] = aten.slice.Tensor(%q_fused) {dim = 1, start = 0, end = 2"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%k : f32[3, 1] = aten.slice.Tensor(%q_fused) {dim = 1, start = 2, end = 3"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%v : f32[3, 2] = aten.slice.Tensor(%q_fused) {dim = 1, start = 3, end = 5"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("%u : f32[3, 2] = aten.linear.default(%o, %wq, %bq)"), std::string::npos)
      << out;
  // The fused weight and bias are the originals, concatenated along the output dim.
  const ir::Node* fused = g->find_value("q_fused")->producer();
  auto w = read_constant(*fused->input(1));
  auto b = read_constant(*fused->input(2));
  ASSERT_TRUE(w && b);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(w->data, (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(b->data, (std::vector<double>{10, 20, 30, 40, 50}));
  // Not copied: a deferred concatenation of the weights' own bytes.
  const ir::ConstantPayload* p = fused->input(1)->payload();
  ASSERT_NE(p->parts, nullptr);
  ASSERT_EQ(p->parts->size(), 3u);
  EXPECT_EQ(p->data, nullptr);
  EXPECT_EQ(p->nbytes, 40u);
  EXPECT_EQ((*p->parts)[0].data, g->find_value("wq")->payload()->data);
  EXPECT_EQ((*p->parts)[2].nbytes, 16u);  // wv (wk and wv themselves are gone)
}

// A strided weight (a view) is not stored as it is read: the stack is copied once instead, and
// reads the same.
TEST(FuseSiblingLinears, StridedWeightsAreCopiedOnce) {
  auto g = ir::parse(kQkv);
  set_f32(*g, "wq", {1, 3, 2, 4});  // stored transposed: read through strides {1, 2}
  ir::ConstantPayload q = *g->find_value("wq")->payload();
  q.strides = {1, 2};
  g->find_value("wq")->set_payload(q);
  set_f32(*g, "bq", {10, 20});
  set_f32(*g, "wk", {5, 6});
  set_f32(*g, "bk", {30});
  set_f32(*g, "wv", {7, 8, 9, 10});
  set_f32(*g, "bv", {40, 50});
  ASSERT_TRUE(FuseSiblingLinears().run(*g));
  ir::verify_or_throw(*g);
  const ir::Node* fused = g->find_value("q_fused")->producer();
  EXPECT_EQ(fused->input(1)->payload()->parts, nullptr);
  EXPECT_NE(fused->input(2)->payload()->parts, nullptr);  // the biases are plain
  auto w = read_constant(*fused->input(1));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->data, (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

// A concatenation whose parts do not add up to its size is malformed: reported, never read.
TEST(FuseSiblingLinears, ConcatenationOfTheWrongSizeIsReported) {
  auto g = ir::parse(R"(graph {
  param %w : f32[3, 2] "w"
  output %w
})");
  static const float a[4] = {1, 2, 3, 4};
  auto parts = std::make_shared<std::vector<ir::ConstantPayload::Part>>();
  parts->push_back({reinterpret_cast<const std::byte*>(a), sizeof a, nullptr, nullptr});
  ir::ConstantPayload p;
  p.nbytes = 24;
  p.parts = parts;
  p.owner = parts;
  g->find_value("w")->set_payload(p);
  const auto problems = ir::verify(*g);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("a deferred concatenation of 1 parts holding 16 bytes, expected 24"),
            std::string::npos)
      << problems[0];
  EXPECT_FALSE(read_constant(*g->find_value("w")));
}

TEST(FuseSiblingLinears, MixedBiasesWeightDtypesAndInputWeightsStaySeparate) {
  // One with a bias and one without; a weight that is a user input (not a constant).
  auto g = ir::parse(R"(graph {
  input %x : f32[3, 2]
  input %wu : f32[2, 2]
  param %w1 : f32[2, 2] "a.weight"
  param %b1 : f32[2] "a.bias"
  param %w2 : f32[2, 2] "b.weight"
  %a : f32[3, 2] = aten.linear.default(%x, %w1, %b1)
  %b : f32[3, 2] = aten.linear.default(%x, %w2, _)
  %c : f32[3, 2] = aten.linear.default(%x, %wu, _)
  output %a
  output %b
  output %c
})");
  set_f32(*g, "w1", {1, 2, 3, 4});
  set_f32(*g, "b1", {1, 2});
  set_f32(*g, "w2", {1, 2, 3, 4});
  FuseSiblingLinears pass;
  EXPECT_FALSE(pass.run(*g));
}

}  // namespace
}  // namespace neuronc::passes
