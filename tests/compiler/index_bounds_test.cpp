// compiler::index_bounds: which integer inputs index a table, through which ops, and the bound.
#include "compiler/index_bounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/printer.h"

namespace neuronc::compiler {
namespace {

using ::testing::HasSubstr;

const ir::Value* input(const ir::Graph& g, const std::string& name) {
  for (const ir::GraphInput& in : g.inputs())
    if (in.value->name() == name) return in.value;
  return nullptr;
}

TEST(IndexBounds, EmbeddingAndIndexSelectThroughElementPreservingOps) {
  auto g = ir::parse(R"(graph {
  input %ids : i64[2, 3]
  input %pos : i32[3]
  input %sel : i64[4]
  input %narrowed : i64[3]
  input %other : i64[3]
  param %wte : f32[100, 8] "wte.weight"
  param %wpe : f32[16, 8] "wpe.weight"
  param %tab : f32[5, 7] "tab"
  %v : i64[6] = aten.view.default(%ids) {size = [6]}
  %e : f32[6, 8] = aten.embedding.default(%wte, %v)
  %p64 : i64[3] = aten._to_copy.default(%pos) {dtype = #i64}
  %pu : i64[1, 3] = aten.unsqueeze.default(%p64) {dim = 0}
  %pe : f32[1, 3, 8] = aten.embedding.default(%wpe, %pu)
  %s : f32[5, 4] = aten.index_select.default(%tab, %sel) {dim = 1}
  %n : i32[3] = aten._to_copy.default(%narrowed) {dtype = #i32}
  %ne : f32[3, 8] = aten.embedding.default(%wpe, %n)
  %o : i64[3] = aten.add.Tensor(%other, %other)
  %oe : f32[3, 8] = aten.embedding.default(%wpe, %o)
  output %e
  output %pe
  output %s
  output %ne
  output %oe
})");
  const auto b = index_bounds(*g);
  ASSERT_EQ(b.count(input(*g, "ids")), 1u);
  EXPECT_EQ(b.at(input(*g, "ids")).lo, 0);
  EXPECT_EQ(b.at(input(*g, "ids")).hi, 100);
  EXPECT_THAT(b.at(input(*g, "ids")).what,
              HasSubstr("the rows of embedding table 'wte.weight' (node 'e')"));
  ASSERT_EQ(b.count(input(*g, "pos")), 1u);  // a widening cast keeps every value
  EXPECT_EQ(b.at(input(*g, "pos")).hi, 16);
  ASSERT_EQ(b.count(input(*g, "sel")), 1u);
  EXPECT_EQ(b.at(input(*g, "sel")).hi, 7);
  EXPECT_THAT(b.at(input(*g, "sel")).what, HasSubstr("dim 1 of 'tab' (node 's')"));
  // A narrowing cast wraps in PyTorch too, and arithmetic changes the values: no bound.
  EXPECT_EQ(b.count(input(*g, "narrowed")), 0u);
  EXPECT_EQ(b.count(input(*g, "other")), 0u);
}

TEST(IndexBounds, TwoTablesIntersectAndTheSmallerNamesTheBound) {
  auto g = ir::parse(R"(graph {
  input %ids : i64[4]
  param %big : f32[50, 8] "big"
  param %small : f32[10, 8] "small"
  %a : f32[4, 8] = aten.embedding.default(%big, %ids)
  %b : f32[4, 8] = aten.embedding.default(%small, %ids)
  output %a
  output %b
})");
  const auto b = index_bounds(*g);
  ASSERT_EQ(b.count(input(*g, "ids")), 1u);
  EXPECT_EQ(b.at(input(*g, "ids")).lo, 0);
  EXPECT_EQ(b.at(input(*g, "ids")).hi, 10);
  EXPECT_THAT(b.at(input(*g, "ids")).what, HasSubstr("'small'"));
}

}  // namespace
}  // namespace neuronc::compiler
