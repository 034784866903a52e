// The IR text form: print/parse round trips and parse errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace neuronc::ir {
namespace {

const char* kModel = R"(graph {
  sym s0 [1, 64]
  sym s1 [2, inf]
  input %x : f32[s0, 16]
  input %ids : i64[s0, 4]
  param %w : f32[32, 16] "encoder.fc.weight"
  buffer %rm : f32[32] "bn.running_mean" nonpersistent
  const %c : bf16[] "c0"
  %y : f32[s0, 32] = aten.linear.default(%x, %w, _) loc("model.py", 12, "encoder.fc")
  %v : f32[2*s0, 8] = aten.view.default(%x) {size = [2*s0, 8]} name("view_1")
  %g : f32[s0, 32] = aten.gelu.default(%y) {approximate = "tan\"h"}
  %a : f32[s0], %i : i64[s0] = aten.max.dim(%g) {dim = 1, keepdim = false}
  %f : f32[s0, 32] = aten.masked_fill.Scalar(%g, %b) {value = -inf}
  %t : bf16[s0, 32] = aten._to_copy.default(%f) {dtype = #bf16, device = device("cpu"), memory_format = #preserve_format, layout = #strided}
  %p : f32[s0, 1] = aten.mean.dim(%g) {dim = [-1], keepdim = true, dtype = none}
  () = aten._assert_tensor_metadata.default(%x) {dtype = #f32}
  output %a
  output %i
  output %y buffer_mutation "bn.running_mean"
}
)";

TEST(TextForm, RoundTripIsExact) {
  // %b is used before it is defined in kModel: the parser must say so.
  EXPECT_THROW(parse(kModel), Error);
  std::string text = kModel;
  text.replace(
      text.find("%f : f32[s0, 32] = aten.masked_fill.Scalar(%g, %b) {value = -inf}"),
      std::string("%f : f32[s0, 32] = aten.masked_fill.Scalar(%g, %b) {value = -inf}").size(),
      "%b : bool[s0, 32] = aten.gt.Scalar(%g) {other = 0.5}\n"
      "  %f : f32[s0, 32] = aten.masked_fill.Scalar(%g, %b) {value = -inf}");
  auto g = parse(text);
  EXPECT_TRUE(verify(*g).empty()) << verify(*g)[0];
  const std::string printed = print(*g);
  EXPECT_EQ(printed, text);
  auto g2 = parse(printed);
  EXPECT_EQ(print(*g2), printed);

  const Node* view = g->find_node("view_1");
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(std::get<SymIntList>(*view->attr("size")).dims[0], Dim::sym(0, 2));
  EXPECT_EQ(g->symbol(1).max, INT64_MAX);
  const Node* fill = g->find_node("f");
  EXPECT_TRUE(std::isinf(fill->attr_float("value")));
  EXPECT_EQ(g->find_node("y")->location().line, 12);
  EXPECT_EQ(g->inputs()[3].persistent, false);
  EXPECT_EQ(g->outputs()[2].role, OutputRole::buffer_mutation);
}

TEST(TextForm, FloatsListsAndEmptyLists) {
  auto g = parse(R"(graph {
  input %x : f32[2, 3]
  %y : f32[2, 3] = aten.leaky_relu.default(%x) {negative_slope = 0.1}
  %z : f32[2, 3] = aten.hardtanh.default(%y) {min_val = -1e-07, max_val = 6.0}
  %s : f32[2, 3] = aten.amax.default(%z) {dim = [], keepdim = true}
  output %s
})");
  const std::string p = print(*g);
  EXPECT_NE(p.find("negative_slope = 0.1}"), std::string::npos) << p;
  EXPECT_NE(p.find("min_val = -1e-07"), std::string::npos) << p;
  EXPECT_EQ(print(*parse(p)), p);
}

struct BadCase {
  const char* text;
  const char* message;
};

TEST(TextForm, ParseErrorsSayWhereAndWhat) {
  const BadCase cases[] = {
      {"graf {}", "line 1:1: expected 'graph', found 'graf'"},
      {"graph {\n input %x : f33[2]\n}",
       "line 2:13: expected a dtype (f32, bf16, i64, bool, ...), found 'f33'"},
      {"graph {\n input %x : f32[2, s9]\n}", "line 2:20: expected a declared symbol, found 's9'"},
      {"graph {\n output %nope\n}",
       "line 2:9: expected a defined value, found '%nope' which is never defined"},
      {"graph {\n input %x : f32[2]\n input %x : f32[2]\n}",
       "line 3:8: expected a new value name, found '%x' again"},
      {"graph {\n input %x : f32[2]\n %y : f32[2] = aten.relu.default(%x) {a = }\n}",
       "line 3:43: expected an attribute value, found '}'"},
      {"graph {\n input %x : f32[2]\n %y : f32[2] = aten.relu.default(%x\n}",
       "line 4:1: expected ',', found '}'"},
      {"graph {\n input %x : f32[2]\n %y : f32[2] = aten.relu.default(%x) {v = [1, \"a\"]}\n}",
       "line 3:51: expected a homogeneous list, found '}'"},
      {"graph {\n sym s [5, 2]\n}",
       "expected a valid symbol, found symbol 's': range [5, 2] is empty"},
      {"graph {\n input %x : f32[2]", "expected '}', found end of input"},
      {"graph {\n param %w : f32[2]\n}", "line 3:1: expected a string, found '}'"},
  };
  for (const BadCase& c : cases) {
    try {
      parse(c.text);
      ADD_FAILURE() << "no error for: " << c.text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << "text: " << c.text << "\nmessage: " << e.what() << "\nexpected: " << c.message;
    }
  }
}

TEST(TextForm, UnknownOpsRoundTrip) {
  const std::string text = R"(graph {
  input %x : f32[8]
  %y : f32[5] = aten.bincount.default(%x) {n = none, dim = -1}
  output %y
}
)";
  auto g = parse(text);
  EXPECT_EQ(g->nodes()[0]->info(), nullptr);
  EXPECT_EQ(print(*g), text);
}

}  // namespace
}  // namespace neuronc::ir
