// Verifier rejections and their messages.
#include "ir/verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/printer.h"

namespace neuronc::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Verifier, AcceptsWellFormedGraph) {
  auto g = parse(R"(graph {
    input %x : f32[2, 3]
    param %w : f32[4, 3] "fc.weight"
    %y : f32[2, 4] = aten.linear.default(%x, %w, _)
    %r : f32[2, 4] = aten.relu.default(%y)
    output %r
  })");
  EXPECT_TRUE(verify(*g).empty());
}

TEST(Verifier, WrongResultTypeNamesNodeExpectedAndFound) {
  auto g = parse(R"(graph {
    input %x : f32[2, 3]
    param %w : f32[4, 3] "fc.weight"
    %y : f32[2, 5] = aten.linear.default(%x, %w, _) loc("model.py", 7, "fc")
    output %y
  })");
  EXPECT_THAT(verify(*g),
              ElementsAre("node 'y' (aten.linear.default) at model.py:7 (fc): result 0 'y' has "
                          "type f32[2, 5], expected f32[2, 4]"));
  EXPECT_THROW(verify_or_throw(*g), Error);
}

TEST(Verifier, ShapeRuleFailureIsReported) {
  auto g = parse(R"(graph {
    input %a : f32[2, 3]
    input %b : f32[4, 3]
    %c : f32[2, 3] = aten.add.Tensor(%a, %b)
    output %c
  })");
  EXPECT_THAT(verify(*g), ElementsAre(HasSubstr("cannot broadcast [2, 3] with [4, 3]")));
}

TEST(Verifier, WrongDtypeIsReported) {
  auto g = parse(R"(graph {
    input %a : f32[2]
    %c : bf16[2] = aten.relu.default(%a)
    output %c
  })");
  EXPECT_THAT(verify(*g), ElementsAre(HasSubstr("has type bf16[2], expected f32[2]")));
}

TEST(Verifier, UseBeforeDefinition) {
  Graph g;
  Value* x = g.add_input("x", {DType::f32, {Dim::constant(2)}});
  Node* second = g.append("aten.relu.default", {x});
  Node* first = g.insert_before(second, "aten.neg.default", {x});
  second->set_input(0, first->output());
  // Move the use ahead of the definition by inserting a consumer before `first`.
  Node* bad = g.insert_before(first, "aten.abs.default", {x});
  bad->set_input(0, second->output());
  g.add_output(bad->output());
  EXPECT_THAT(verify(g),
              ElementsAre(HasSubstr(
                  "node 'abs' (aten.abs.default): operand 0 'relu' is used before it is defined")));
}

TEST(Verifier, UnknownOpsAllowedOnlyWhenAsked) {
  Graph g;
  Value* x = g.add_input("x", {DType::f32, {Dim::constant(8)}});
  Node* n = g.append("aten.bincount.default", {x}, {},
                     std::vector<TensorType>{{DType::f32, {Dim::constant(5)}}});
  g.add_output(n->output());
  EXPECT_TRUE(verify(g).empty());
  EXPECT_THAT(verify(g, {.allow_unknown_ops = false}),
              ElementsAre("node 'bincount' (aten.bincount.default): operator is not registered"));
}

TEST(Verifier, ResultCountMustMatchSchema) {
  Graph g;
  Value* x = g.add_input("x", {DType::f32, {Dim::constant(2), Dim::constant(3)}});
  g.append("aten.max.dim", {x}, {{"dim", int64_t{1}}},
           std::vector<TensorType>{{DType::f32, {Dim::constant(2)}}});
  EXPECT_THAT(verify(g), ElementsAre(HasSubstr("expected 2 results, found 1")));
}

TEST(Verifier, ConstantPayloadTooSmall) {
  Graph g;
  static const float data[2] = {1, 2};
  Value* c = g.add_input("w", {DType::f32, {Dim::constant(3)}}, InputRole::parameter, "w");
  c->set_payload(
      ConstantPayload{reinterpret_cast<const std::byte*>(data), sizeof data, 0, {}, nullptr});
  EXPECT_THAT(verify(g), ElementsAre("constant 'w': needs 12 bytes, payload has 8"));
}

TEST(Verifier, OutputsAndTargets) {
  Graph g;
  Value* x = g.add_input("x", {DType::f32, {Dim::constant(2)}});
  g.mutable_inputs().push_back(GraphInput{x, InputRole::buffer, "", true, std::nullopt});
  g.add_output(x, OutputRole::buffer_mutation, "");
  std::vector<std::string> p = verify(g);
  EXPECT_THAT(p, ::testing::Contains(HasSubstr("(buffer) has no target name")));
  EXPECT_THAT(p, ::testing::Contains(HasSubstr("(buffer_mutation) has no target name")));
}

}  // namespace
}  // namespace neuronc::ir
