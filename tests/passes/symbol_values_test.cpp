// Symbol values (passes/symbol_values.h): a program's reads of a dynamic dim's size as data
// become symbol inputs, which the padding analysis may then pad; a read no rule rewrites keeps
// the dim unpadded, naming the node.
#include "passes/symbol_values.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/padding.h"

namespace neuronc::passes {
namespace {

struct Rewritten {
  std::unique_ptr<ir::Graph> g;
  bool changed = false;
  std::string text;
};

Rewritten rewrite(const std::string& before, std::set<std::string> symbols = {"s0"}) {
  Rewritten r;
  r.g = ir::parse(before);
  r.changed = SymbolValues(std::move(symbols)).run(*r.g);
  ir::verify_or_throw(*r.g);
  r.text = ir::print(*r.g, {.locations = false});
  return r;
}

PaddingVerdict padded_with_zeros(const ir::Graph& g,
                                 const std::vector<std::string>& syms = {"s0"}) {
  std::map<ir::SymbolId, PadWith> ids;
  for (const std::string& s : syms) ids[*g.find_symbol(s)] = PadWith::zeros;
  return check_padding(g, ids);
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// x * x.size(0): torch.export's mul.Scalar(x, s0) reads the size the loader binds, so the dim may
// be padded; before, it read the bucket's size and the padding analysis refuses it.
TEST(SymbolValues, AScalarOperandBecomesTheRunsSize) {
  const char* text = R"(graph {
  sym s0 [2, 40]
  input %x : f32[s0, 8]
  %y : f32[s0, 8] = aten.mul.Scalar(%x) {other = s0}
  output %y
})";
  const PaddingVerdict before = padded_with_zeros(*ir::parse(text));
  ASSERT_FALSE(before.ok);
  EXPECT_EQ(before.node, "y");
  EXPECT_TRUE(has(before.reason, "reads the size s0 as a value (argument 'other')"))
      << before.reason;

  const Rewritten r = rewrite(text);
  EXPECT_TRUE(r.changed);
  EXPECT_TRUE(has(r.text, "symbol %size_s0_f32 : f32[] \"s0\"")) << r.text;
  EXPECT_TRUE(has(r.text, "%y : f32[s0, 8] = aten.mul.Tensor(%x, %size_s0_f32)")) << r.text;
  EXPECT_FALSE(has(r.text, "other = s0")) << r.text;
  const PaddingVerdict after = padded_with_zeros(*r.g);
  EXPECT_TRUE(after.ok) << after.message();
}

// numel of [s0, 4] is 4*s0; of [s0, s1] the product symbol: both computed from the free
// symbols' values. An integer operand takes an i64 value.
TEST(SymbolValues, CoefficientsAndProductsAreComputedFromTheFreeSymbols) {
  const Rewritten r = rewrite(R"(graph {
  sym s0 [2, 40]
  sym s1 [2, 40]
  input %x : f32[s0, 4]
  input %i : i64[s0, s1]
  %a : f32[s0, 4] = aten.mul.Scalar(%x) {other = 4*s0}
  %n : i64[s0, s1] = aten.add.Scalar(%i) {other = s0*s1}
  output %a
  output %n
})",
                              {"s0", "s1"});
  EXPECT_TRUE(has(r.text, "= aten.mul.Scalar(%size_s0_f32) {other = 4}")) << r.text;
  EXPECT_TRUE(has(r.text, "= aten.mul.Tensor(%size_s0_i64, %size_s1_i64)")) << r.text;
  EXPECT_TRUE(has(r.text, "%n : i64[s0, s1] = aten.add.Tensor(%i,")) << r.text;
  const PaddingVerdict v = padded_with_zeros(*r.g, {"s0", "s1"});
  EXPECT_TRUE(v.ok) << v.message();
}

// A mean over the padded dim divides by the run's count: a sum over the zero padding (exact)
// divided by the symbol value.
TEST(SymbolValues, AMeanOverTheDimDividesByTheRunsCount) {
  const char* text = R"(graph {
  sym s0 [2, 40]
  input %x : f32[s0, 8]
  %m : f32[8] = aten.mean.dim(%x) {dim = [0]}
  output %m
})";
  EXPECT_FALSE(padded_with_zeros(*ir::parse(text)).ok);
  const Rewritten r = rewrite(text);
  EXPECT_TRUE(has(r.text, "aten.sum.dim_IntList(%x) {dim = [0], keepdim = false")) << r.text;
  EXPECT_TRUE(has(r.text, "%m : f32[8] = aten.div.Tensor(")) << r.text;
  const PaddingVerdict v = padded_with_zeros(*r.g);
  EXPECT_TRUE(v.ok) << v.message();
  // A mean over a static dim stays.
  const Rewritten s = rewrite(R"(graph {
  sym s0 [2, 40]
  input %x : f32[s0, 8]
  %m : f32[s0] = aten.mean.dim(%x) {dim = [1]}
  output %m
})");
  EXPECT_FALSE(s.changed);
}

// full(size, s0) is the symbol value, cast and broadcast, then copied.
TEST(SymbolValues, AFactoryFilledWithTheSize) {
  const Rewritten r = rewrite(R"(graph {
  sym s0 [2, 40]
  input %x : f32[s0, 8]
  %f : f32[s0, 8] = aten.full.default() {size = [s0, 8], fill_value = s0, dtype = #f32}
  %y : f32[s0, 8] = aten.add.Tensor(%x, %f)
  output %y
})");
  EXPECT_TRUE(has(r.text, "aten.expand.default(%size_s0_f32) {size = [s0, 8]}")) << r.text;
  EXPECT_TRUE(has(r.text, "%f : f32[s0, 8] = aten.clone.default(")) << r.text;
  const PaddingVerdict v = padded_with_zeros(*r.g);
  EXPECT_TRUE(v.ok) << v.message();
}

// Extents (view's size, arange's end, slice's end) only shape results: left to the shapes.
TEST(SymbolValues, ExtentsAreNotValues) {
  const char* text = R"(graph {
  sym s0 [2, 40]
  input %x : f32[s0, 4, 2]
  param %t : f32[40, 8] "t"
  %v : f32[s0, 8] = aten.view.default(%x) {size = [s0, 8]}
  %p : i64[s0] = aten.arange.default() {end = s0, dtype = #i64}
  %e : f32[s0, 8] = aten.slice.Tensor(%t) {dim = 0, start = 0, end = s0}
  %y : f32[s0, 8] = aten.add.Tensor(%v, %e)
  output %y
  output %p
})";
  EXPECT_FALSE(rewrite(text).changed);
  const PaddingVerdict v = padded_with_zeros(*ir::parse(text));
  EXPECT_TRUE(v.ok) << v.message();
}

// A read no rule rewrites (clamp's bound, whose tensor overload takes both bounds as tensors)
// stays, and the padding analysis refuses it by name.
TEST(SymbolValues, AnIndexReadKeepsTheDimExact) {
  const char* text = R"(graph {
  sym s0 [2, 40]
  input %x : f32[s0, 8]
  param %t : f32[8] "t"
  %r : f32[8] = aten.clamp.default(%t) {max = s0}
  %y : f32[s0, 8] = aten.add.Tensor(%x, %r)
  output %y
})";
  const Rewritten r = rewrite(text);
  EXPECT_FALSE(r.changed);
  const PaddingVerdict v = padded_with_zeros(*r.g);
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.node, "r");
  EXPECT_TRUE(has(v.reason, "reads the size s0 as a value (argument 'max')")) << v.reason;
}

// Symbols the caller does not name (bound by --dim) are left to SpecializeShapes.
TEST(SymbolValues, OnlyTheNamedSymbols) {
  EXPECT_FALSE(rewrite(R"(graph {
  sym s0 [2, 40]
  input %x : f32[s0, 8]
  %y : f32[s0, 8] = aten.mul.Scalar(%x) {other = s0}
  output %y
})",
                       {"s1"})
                   .changed);
}

}  // namespace
}  // namespace neuronc::passes
