// Graph construction, use lists and mutation.
#include "ir/graph.h"

#include <gtest/gtest.h>

#include "ir/op_registry.h"
#include "ir/printer.h"

namespace neuronc::ir {
namespace {

TensorType f32(Shape s) {
  return {DType::f32, std::move(s)};
}
Shape dims(std::initializer_list<int64_t> v) {
  Shape s;
  for (int64_t x : v) s.push_back(Dim::constant(x));
  return s;
}

// A clone is the same graph (symbols, names, payloads shared) and independent of the original:
// mutating one leaves the other, and both name what is added next the same way.
TEST(Graph, CloneIsAnIndependentEqualGraph) {
  auto g = parse(R"(graph {
  sym s0 [1, 8]
  input %x : f32[s0, 4]
  param %w : f32[4, 4] "w"
  %y : f32[s0, 4] = aten.linear.default(%x, %w)
  %r : f32[s0, 4] = aten.relu.default(%y)
  output %r
})");
  static const float w[16] = {1};
  g->find_value("w")->set_payload(
      {reinterpret_cast<const std::byte*>(w), sizeof w, 0, {}, nullptr});
  std::unique_ptr<Graph> c = g->clone();
  EXPECT_EQ(print(*c), print(*g));
  EXPECT_EQ(c->find_value("w")->payload()->data, g->find_value("w")->payload()->data);
  ASSERT_EQ(c->find_value("y")->uses().size(), 1u);
  EXPECT_EQ(c->find_value("y")->uses()[0].node, c->find_node("r"));
  EXPECT_EQ(c->find_value("r")->producer(), c->find_node("r"));
  Node* added = c->append("aten.relu.default", {c->find_value("r")});
  Node* same = g->append("aten.relu.default", {g->find_value("r")});
  EXPECT_EQ(added->name(), same->name());
  EXPECT_EQ(added->output()->name(), same->output()->name());
  c->set_output_value(0, added->output());
  EXPECT_NE(print(*c), print(*g));
  EXPECT_EQ(g->outputs()[0].value, g->find_value("r"));
}

TEST(Graph, BuildsLinearWithInferredTypes) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({2, 3})));
  Value* w = g.add_input("w", f32(dims({4, 3})), InputRole::parameter, "fc.weight");
  Value* b = g.add_input("b", f32(dims({4})), InputRole::parameter, "fc.bias");
  Node* n = g.append("aten.linear.default", {x, w, b});
  ASSERT_NE(n->info(), nullptr);
  EXPECT_EQ(n->info()->category, OpCategory::matmul);
  EXPECT_EQ(g.type_to_string(n->output()->type()), "f32[2, 4]");
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(x->uses()[0].node, n);
  EXPECT_EQ(w->uses()[0].operand, 1u);
}

TEST(Graph, UniqueNamesAndLookup) {
  Graph g;
  Value* a = g.add_input("x", f32(dims({1})));
  Value* b = g.add_input("x", f32(dims({1})));
  EXPECT_NE(a->name(), b->name());
  EXPECT_EQ(g.find_value(b->name()), b);
  EXPECT_EQ(g.find_value("missing"), nullptr);
}

TEST(Graph, ReplaceAllUsesAndErase) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({2, 2})));
  Node* r1 = g.append("aten.relu.default", {x});
  Node* r2 = g.append("aten.relu.default", {r1->output()});
  g.add_output(r2->output());
  Node* neg = g.append("aten.neg.default", {x});
  r1->output()->replace_all_uses_with(neg->output());
  EXPECT_EQ(r2->input(0), neg->output());
  EXPECT_FALSE(r1->output()->has_uses());
  g.erase(r1);
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(x->uses().size(), 1u);
  // A node whose result is still used cannot be erased.
  EXPECT_THROW(g.erase(neg), Error);
}

TEST(Graph, ReplaceUpdatesGraphOutputs) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({2})));
  Node* r = g.append("aten.relu.default", {x});
  g.add_output(r->output());
  r->output()->replace_all_uses_with(x);
  EXPECT_EQ(g.outputs()[0].value, x);
}

TEST(Graph, InsertBeforeKeepsOrder) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({2})));
  Node* last = g.append("aten.relu.default", {x});
  Node* first = g.insert_before(last, "aten.neg.default", {x});
  EXPECT_EQ(g.position(first), 0u);
  EXPECT_EQ(g.position(last), 1u);
}

TEST(Graph, UnknownOpNeedsExplicitTypes) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({8})));
  EXPECT_THROW(g.append("aten.bincount.default", {x}), Error);
  Node* n = g.append("aten.bincount.default", {x}, {}, std::vector<TensorType>{f32(dims({5}))});
  EXPECT_EQ(n->info(), nullptr);
}

TEST(Graph, ZeroResultNode) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({8})));
  Node* n = g.append("aten._assert_tensor_metadata.default", {x}, {{"dtype", DType::f32}});
  EXPECT_TRUE(n->outputs().empty());
}

TEST(Graph, AttributeDefaultsComeFromSchema) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({2, 3})));
  Node* n = g.append("aten.sum.dim_IntList", {x}, {{"dim", std::vector<int64_t>{1}}});
  EXPECT_FALSE(n->attr_bool("keepdim"));
  EXPECT_EQ(n->attr_ints("dim"), std::vector<int64_t>{1});
  EXPECT_TRUE(n->attr_is_none("dtype"));
  try {
    n->attr_string("dim");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attribute 'dim': expected a string, found int list"),
              std::string::npos)
        << e.what();
  }
}

TEST(Graph, SymbolsAndConstantPayloads) {
  Graph g;
  SymbolId s = g.add_symbol("s0", 1, 64);
  EXPECT_THROW(g.add_symbol("s0", 1, 2), Error);
  EXPECT_THROW(g.add_symbol("s1", 5, 2), Error);
  Value* x = g.add_input("x", f32({Dim::sym(s), Dim::constant(3)}));
  EXPECT_EQ(g.type_to_string(x->type()), "f32[s0, 3]");
  static const float data[3] = {1, 2, 3};
  auto owner = std::make_shared<int>(0);
  Value* c = g.add_input("c", f32(dims({3})), InputRole::constant, "c0");
  c->set_payload(
      ConstantPayload{reinterpret_cast<const std::byte*>(data), sizeof data, 0, {}, owner});
  EXPECT_EQ(reinterpret_cast<const float*>(c->payload()->data)[2], 3.0f);
  EXPECT_EQ(owner.use_count(), 2);  // the IR keeps the owner alive, no copy of the bytes
}

TEST(Graph, EraseUnusedConstants) {
  Graph g;
  Value* x = g.add_input("x", f32(dims({2})));
  g.add_input("w", f32(dims({2})), InputRole::parameter, "w");
  g.add_output(x);
  EXPECT_EQ(g.erase_unused_constant_inputs(), 1u);
  EXPECT_EQ(g.inputs().size(), 1u);
}

TEST(SourceLocation, ParsesInnermostFrame) {
  const std::string trace =
      "  File \"/src/train.py\", line 40, in main\n    y = model(x)\n"
      "  File \"/src/model.py\", line 12, in forward\n    return self.fc(x)\n";
  SourceLocation loc = parse_python_stack_trace(trace);
  EXPECT_EQ(loc.file, "/src/model.py");
  EXPECT_EQ(loc.line, 12);
  EXPECT_EQ(loc.function, "forward");
  EXPECT_EQ(loc.code, "return self.fc(x)");
  loc.module_path = "fc";
  EXPECT_EQ(loc.to_string(), "/src/model.py:12 (fc)");
  EXPECT_TRUE(parse_python_stack_trace("").file.empty());
  // PyTorch's own frames are skipped in favour of the model's line.
  SourceLocation user = parse_python_stack_trace(
      "  File \"/src/model.py\", line 7, in forward\n    return self.fc(x)\n"
      "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/linear.py\", line 134, in forward\n"
      "    return F.linear(input, self.weight, self.bias)\n");
  EXPECT_EQ(user.file, "/src/model.py");
  EXPECT_EQ(user.line, 7);
}

TEST(DType, NamesSizesPromotion) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  }
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::f8e5m2), 1u);
  EXPECT_EQ(promote_types(DType::f16, DType::bf16), DType::f32);
  EXPECT_EQ(promote_types(DType::i32, DType::i64), DType::i64);
  EXPECT_EQ(promote_types(DType::i64, DType::f16), DType::f16);
  EXPECT_EQ(promote_types(DType::boolean, DType::i32), DType::i32);
  EXPECT_EQ(promote_types(DType::u8, DType::i8), DType::i16);
  EXPECT_FALSE(parse_dtype("float32").has_value());
}

}  // namespace
}  // namespace neuronc::ir
