// ExportedProgram JSON import: every union encoding, both schema_version forms, non-finite
// tokens, symbolic dims, symbolic-int ops, higher-order op inlining, source locations, and the
// messages for malformed programs.
#include "frontend/exported_program_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/error.h"
#include "ir/op_registry.h"

namespace neuronc::frontend {
namespace {

using ::testing::HasSubstr;

std::string meta(const std::string& sizes, int dtype = 7) {
  return R"({"dtype": )" + std::to_string(dtype) + R"(, "sizes": )" + sizes +
         R"(, "requires_grad": false, "device": {"type": "cpu", "index": null}, "strides": [],
            "storage_offset": {"as_int": 0}, "layout": 7})";
}

struct Prog {
  std::string schema = R"({"major": 8, "minor": 20})";
  std::string inputs = R"([{"as_tensor": {"name": "x"}}])";
  std::string outputs = R"([{"as_tensor": {"name": "relu"}}])";
  std::string nodes = R"J([{"target": "torch.ops.aten.relu.default",
      "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1}],
      "outputs": [{"as_tensor": {"name": "relu"}}],
      "metadata": {"stack_trace": "File \"/src/model.py\", line 12, in forward\n    return torch.relu(x)",
                   "nn_module_stack": "L__self__,,M;L__self__act,act,torch.nn.ReLU"}}])J";
  std::string tensor_values = R"("x": )" + meta(R"([{"as_int": 2}, {"as_int": 3}])") +
                              R"(, "relu": )" + meta(R"([{"as_int": 2}, {"as_int": 3}])");
  std::string sym_int_values = "{}";
  std::string input_specs = R"([{"user_input": {"arg": {"as_tensor": {"name": "x"}}}}])";
  std::string output_specs = R"([{"user_output": {"arg": {"as_tensor": {"name": "relu"}}}}])";
  std::string range_constraints = "{}";

  std::string json() const {
    return R"({"graph_module": {"graph": {"inputs": )" + inputs + R"(, "outputs": )" + outputs +
           R"(, "nodes": )" + nodes + R"(, "tensor_values": {)" + tensor_values +
           R"(}, "sym_int_values": )" + sym_int_values +
           R"(, "sym_bool_values": {}, "is_single_tensor_return": false},
           "signature": {"input_specs": )" +
           input_specs + R"(, "output_specs": )" + output_specs +
           R"(}, "module_call_graph": []}, "opset_version": {"aten": 10},
           "range_constraints": )" +
           range_constraints + R"(, "schema_version": )" + schema +
           R"(, "verifiers": ["TRAINING"], "torch_version": "2.14.1", "some_future_key": 1})";
  }
};

ImportedProgram load(const std::string& json) {
  return import_exported_program(json, "m.json");
}

std::string error_of(const std::string& json, int hint = 0) {
  try {
    import_exported_program(json, "m.json", hint);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExportedProgram, MinimalCurrentSchema) {
  ImportedProgram p = load(Prog().json());
  const ir::Graph& g = *p.graph;
  ASSERT_EQ(g.nodes().size(), 1u);
  const ir::Node& n = *g.nodes()[0];
  EXPECT_EQ(n.op(), "aten.relu.default");
  EXPECT_NE(n.info(), nullptr);
  EXPECT_EQ(g.type_to_string(n.output()->type()), "f32[2, 3]");
  EXPECT_EQ(n.location().file, "/src/model.py");
  EXPECT_EQ(n.location().line, 12);
  EXPECT_EQ(n.location().module_path, "act");
  EXPECT_EQ(p.info.schema_major, 8);
  EXPECT_EQ(p.info.schema_minor, 20);
  EXPECT_EQ(p.info.torch_version, "2.14.1");
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0].role, ir::InputRole::user_input);
  ASSERT_EQ(g.outputs().size(), 1u);
}

TEST(ExportedProgram, AllMembersUnionsOfSchema2) {
  Prog p;
  p.schema = "2";
  p.inputs =
      R"([{"as_none": null, "as_tensor": {"name": "x"}, "as_tensors": null, "as_int": null}])";
  p.nodes = R"([{"target": "torch.ops.aten.leaky_relu.default", "inputs": [
      {"name": "self", "arg": {"as_none": null, "as_tensor": {"name": "x"}, "as_int": null}},
      {"name": "negative_slope", "arg": {"as_none": null, "as_tensor": null, "as_float": 0.5}}],
      "outputs": [{"as_none": null, "as_tensor": {"name": "relu"}}], "metadata": {}}])";
  p.tensor_values =
      R"("x": {"dtype": 7, "sizes": [{"as_int": 2, "as_expr": null}, {"as_int": 3, "as_expr": null}],
      "requires_grad": false, "device": {"type": "cpu", "index": null}, "strides": [], "storage_offset": 0, "layout": 7},
      "relu": {"dtype": 7, "sizes": [{"as_int": 2, "as_expr": null}, {"as_int": 3, "as_expr": null}],
      "requires_grad": false, "device": {"type": "cpu", "index": null}, "strides": [], "storage_offset": 0, "layout": 7})";
  p.input_specs =
      R"([{"user_input": {"arg": {"as_none": null, "as_tensor": {"name": "x"}}}, "parameter": null, "buffer": null}])";
  p.output_specs =
      R"([{"user_output": {"arg": {"as_tensor": {"name": "relu"}, "as_none": null}}, "buffer_mutation": null}])";
  ImportedProgram ip = load(p.json());
  EXPECT_EQ(ip.info.schema_major, 2);
  const ir::Node& n = *ip.graph->nodes()[0];
  EXPECT_EQ(n.attr_float("negative_slope"), 0.5);
}

TEST(ExportedProgram, DollarTypeUnions) {
  Prog p;
  p.schema = R"({"major": 4, "minor": 1})";
  p.inputs = R"([{"$type": "as_tensor", "$value": {"name": "x"}}])";
  p.nodes = R"([{"target": "torch.ops.aten.relu.default", "inputs": [
      {"name": "self", "arg": {"$type": "as_tensor", "$value": {"name": "x"}}}],
      "outputs": [{"$type": "as_tensor", "$value": {"name": "relu"}}]}])";
  p.input_specs =
      R"([{"$type": "user_input", "$value": {"arg": {"$type": "as_tensor", "$value": {"name": "x"}}}}])";
  p.output_specs =
      R"([{"$type": "user_output", "$value": {"arg": {"$type": "as_tensor", "$value": {"name": "relu"}}}}])";
  EXPECT_EQ(load(p.json()).graph->nodes().size(), 1u);
}

TEST(ExportedProgram, NonFiniteTokensAndStrings) {
  for (const char* v : {"-Infinity", R"("-Infinity")", "NaN", R"("NaN")", "Infinity"}) {
    Prog p;
    p.nodes = std::string(R"([{"target": "torch.ops.aten.leaky_relu.default", "inputs": [
        {"name": "self", "arg": {"as_tensor": {"name": "x"}}},
        {"name": "negative_slope", "arg": {"as_float": )") +
              v + R"(}}],
        "outputs": [{"as_tensor": {"name": "relu"}}], "metadata": {"note": "NaN Infinity in a string"}}])";
    ImportedProgram ip = load(p.json());
    double d = ip.graph->nodes()[0]->attr_float("negative_slope");
    std::string s = v;
    if (s.find("NaN") != std::string::npos) {
      EXPECT_TRUE(std::isnan(d)) << v;
    } else {
      EXPECT_TRUE(std::isinf(d)) << v;
      EXPECT_EQ(d < 0, s.find('-') != std::string::npos) << v;
    }
  }
}

TEST(ExportedProgram, ScalarOperandSelectsScalarOverload) {
  Prog p;
  p.nodes = R"([{"target": "torch.ops.aten.add.Tensor", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "other", "arg": {"as_float": 1.5}}],
      "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  ImportedProgram ip = load(p.json());
  EXPECT_EQ(ip.graph->nodes()[0]->op(), "aten.add.Scalar");
  EXPECT_EQ(ip.graph->nodes()[0]->attr_float("other"), 1.5);
}

TEST(ExportedProgram, SymbolicDimsAndSymIntOps) {
  Prog p;
  p.range_constraints = R"({"s0": {"min_val": 1, "max_val": 64}})";
  std::string s0 =
      R"J({"as_expr": {"expr_str": "Symbol('s0', positive=True, integer=True)", "hint": {"as_int": 3}}})J";
  p.tensor_values =
      R"("x": )" + meta("[" + s0 + R"(, {"as_int": 4}])") + R"(, "relu": )" +
      meta(
          R"J([{"as_expr": {"expr_str": "Mul(Integer(4), Symbol('s0', positive=True, integer=True))"}}])J");
  p.sym_int_values = R"({"sym_size_int": )" + s0 + R"(, "mul": {"as_expr": {"expr_str": "4*s0"}}})";
  p.nodes = R"([
    {"target": "torch.ops.aten.sym_size.int", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}}, {"name": "dim", "arg": {"as_int": 0}}],
      "outputs": [{"as_sym_int": {"as_name": "sym_size_int"}}]},
    {"target": "_operator.mul", "inputs": [
      {"name": "", "arg": {"as_sym_int": {"as_name": "sym_size_int"}}}, {"name": "", "arg": {"as_int": 4}}],
      "outputs": [{"as_sym_int": {"as_name": "mul"}}]},
    {"target": "torch.ops.aten._assert_scalar.default", "inputs": [
      {"name": "self", "arg": {"as_sym_bool": {"as_name": "ge"}}}, {"name": "assert_msg", "arg": {"as_string": "x"}}],
      "outputs": []},
    {"target": "torch.ops.aten.view.default", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "size", "arg": {"as_sym_ints": [{"as_name": "mul"}]}}],
      "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  ImportedProgram ip = load(p.json());
  const ir::Graph& g = *ip.graph;
  ASSERT_EQ(g.symbols().size(), 1u);
  EXPECT_EQ(g.symbols()[0].name, "s0");
  EXPECT_EQ(g.symbols()[0].min, 1);
  EXPECT_EQ(g.symbols()[0].max, 64);
  ASSERT_EQ(g.nodes().size(), 1u);  // sym_size, mul and the assert are resolved/dropped
  EXPECT_EQ(ip.info.dropped_nodes, 3u);
  const ir::Node& view = *g.nodes()[0];
  const ir::Attribute* size = view.attr("size");
  ASSERT_NE(size, nullptr);
  const auto* list = std::get_if<ir::SymIntList>(size);
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(list->dims.size(), 1u);
  EXPECT_EQ(list->dims[0], ir::Dim::sym(0, 4));
  EXPECT_EQ(g.type_to_string(view.output()->type()), "f32[4*s0]");
  EXPECT_EQ(g.type_to_string(g.inputs()[0].value->type()), "f32[s0, 4]");
}

// Dynamic batch and sequence: core ATen flattens [s0, s1, 4] to [s0*s1, 4], written as the
// sympy srepr Mul(Symbol, Symbol) in tensor metadata and computed by _operator.mul of two
// sym_sizes; both become one product symbol.
TEST(ExportedProgram, ProductsOfSymbols) {
  Prog p;
  p.range_constraints =
      R"({"s0": {"min_val": 1, "max_val": 16}, "s1": {"min_val": 8, "max_val": 128}})";
  const std::string s0 =
      R"J({"as_expr": {"expr_str": "Symbol('s0', positive=True, integer=True)"}})J";
  const std::string s1 =
      R"J({"as_expr": {"expr_str": "Symbol('s1', positive=True, integer=True)"}})J";
  p.tensor_values =
      R"("x": )" + meta("[" + s0 + ", " + s1 + R"(, {"as_int": 4}])") + R"(, "flat": )" +
      meta(
          R"J([{"as_expr": {"expr_str": "Mul(Symbol('s0', positive=True, integer=True), Symbol('s1', positive=True, integer=True))"}}, {"as_int": 4}])J");
  p.sym_int_values =
      R"({"b": )" + s0 + R"(, "s": )" + s1 + R"(, "bs": {"as_expr": {"expr_str": "s0*s1"}}})";
  p.nodes = R"([
    {"target": "torch.ops.aten.sym_size.int", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}}, {"name": "dim", "arg": {"as_int": 0}}],
      "outputs": [{"as_sym_int": {"as_name": "b"}}]},
    {"target": "torch.ops.aten.sym_size.int", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}}, {"name": "dim", "arg": {"as_int": 1}}],
      "outputs": [{"as_sym_int": {"as_name": "s"}}]},
    {"target": "_operator.mul", "inputs": [
      {"name": "", "arg": {"as_sym_int": {"as_name": "b"}}}, {"name": "", "arg": {"as_sym_int": {"as_name": "s"}}}],
      "outputs": [{"as_sym_int": {"as_name": "bs"}}]},
    {"target": "torch.ops.aten.view.default", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "size", "arg": {"as_sym_ints": [{"as_name": "bs"}, {"as_int": 4}]}}],
      "outputs": [{"as_tensor": {"name": "flat"}}]}])";
  p.outputs = R"([{"as_tensor": {"name": "flat"}}])";
  p.output_specs = R"([{"user_output": {"arg": {"as_tensor": {"name": "flat"}}}}])";
  ImportedProgram ip = load(p.json());
  const ir::Graph& g = *ip.graph;
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.type_to_string(g.nodes()[0]->output()->type()), "f32[s0*s1, 4]");
  const std::optional<ir::SymbolId> bs = g.find_symbol("s0*s1");
  ASSERT_TRUE(bs);
  EXPECT_EQ(g.symbol(*bs).min, 8);
  EXPECT_EQ(g.symbol(*bs).max, 2048);
}

// The training IR keeps a torch.vmap region (transformers' mask functions, Mamba's scan) as
// predispatch calls on batched tensors, whose recorded shapes are the logical ones.
std::string predispatch(const std::string& fn, const std::string& args, const std::string& out) {
  return R"({"target": "torch._functorch.predispatch.)" + fn + R"(", "inputs": [)" + args +
         R"(], "outputs": [)" + (out.empty() ? R"({"as_none": true})" : out) + "]}";
}
std::string tensor_arg(const std::string& name) {
  return R"({"name": "", "arg": {"as_tensor": {"name": ")" + name + R"("}}})";
}
std::string int_arg(int64_t v) {
  return R"({"name": "", "arg": {"as_int": )" + std::to_string(v) + "}}";
}
std::string tensor_out(const std::string& name) {
  return R"({"as_tensor": {"name": ")" + name + R"("}})";
}

// transformers' mask: vmap over the query index (outer, 6) and the key index (inner, 4) of
// `kv <= q`; the result is [q, kv], the outer level's dim first.
TEST(ExportedProgram, NestedVmapMaskIsDebatched) {
  Prog p;
  p.inputs = R"([{"as_tensor": {"name": "q"}}, {"as_tensor": {"name": "kv"}}])";
  p.input_specs = R"([{"user_input": {"arg": {"as_tensor": {"name": "q"}}}},
                      {"user_input": {"arg": {"as_tensor": {"name": "kv"}}}}])";
  p.tensor_values = R"("q": )" + meta(R"([{"as_int": 6}])", 5) + R"(, "kv": )" +
                    meta(R"([{"as_int": 4}])", 5) + R"(, "bq": )" + meta("[]", 5) + R"(, "bk": )" +
                    meta("[]", 5) + R"(, "le": )" + meta("[]", 12) + R"(, "r1": )" +
                    meta(R"([{"as_int": 4}])", 12) + R"(, "mask": )" +
                    meta(R"([{"as_int": 6}, {"as_int": 4}])", 12);
  p.nodes = "[" + predispatch("lazy_load_decompositions", "", "") + "," +
            predispatch("_vmap_increment_nesting",
                        int_arg(6) + R"(, {"name": "", "arg": {"as_string": "error"}})", "") +
            "," +
            predispatch("_add_batch_dim", tensor_arg("q") + "," + int_arg(0) + "," + int_arg(1),
                        tensor_out("bq")) +
            "," +
            predispatch("_vmap_increment_nesting",
                        int_arg(4) + R"(, {"name": "", "arg": {"as_string": "error"}})", "") +
            "," +
            predispatch("_add_batch_dim", tensor_arg("kv") + "," + int_arg(0) + "," + int_arg(2),
                        tensor_out("bk")) +
            "," +
            R"({"target": "torch.ops.aten.le.Tensor", "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "bk"}}},
                {"name": "other", "arg": {"as_tensor": {"name": "bq"}}}],
              "outputs": [{"as_tensor": {"name": "le"}}]},)" +
            predispatch("_remove_batch_dim",
                        tensor_arg("le") + "," + int_arg(2) + "," + int_arg(4) + "," + int_arg(0),
                        tensor_out("r1")) +
            "," + predispatch("_vmap_decrement_nesting", "", "") + "," +
            predispatch("_remove_batch_dim",
                        tensor_arg("r1") + "," + int_arg(1) + "," + int_arg(6) + "," + int_arg(0),
                        tensor_out("mask")) +
            "," + predispatch("_vmap_decrement_nesting", "", "") + "]";
  p.outputs = R"([{"as_tensor": {"name": "mask"}}])";
  p.output_specs = R"([{"user_output": {"arg": {"as_tensor": {"name": "mask"}}}}])";
  ImportedProgram ip = load(p.json());
  const ir::Graph& g = *ip.graph;
  const ir::Value* out = g.outputs()[0].value;
  EXPECT_EQ(g.type_to_string(out->type()), "bool[6, 4]");
  // The comparison runs once, on [q, kv] operands: q as [6, 1], kv as [1, 4].
  const ir::Node* le = g.find_node("le");
  ASSERT_NE(le, nullptr);
  EXPECT_EQ(g.type_to_string(le->input(0)->type()), "i64[1, 4]");
  EXPECT_EQ(g.type_to_string(le->input(1)->type()), "i64[6, 1]");
  EXPECT_EQ(g.type_to_string(le->output()->type()), "bool[6, 4]");
}

// Mamba's step: a tensor batched over its dim 1, an unbatched operand, a view inside, and the
// batch returned at out_dim 2; a level that does not vary is expanded on the way out.
TEST(ExportedProgram, VmapWithViewsAndOutDims) {
  Prog p;
  p.inputs = R"([{"as_tensor": {"name": "x"}}, {"as_tensor": {"name": "y"}}])";
  p.input_specs = R"([{"user_input": {"arg": {"as_tensor": {"name": "x"}}}},
                      {"user_input": {"arg": {"as_tensor": {"name": "y"}}}}])";
  p.tensor_values = R"("x": )" + meta(R"([{"as_int": 3}, {"as_int": 5}])") + R"(, "y": )" +
                    meta(R"([{"as_int": 3}])") + R"(, "bx": )" + meta(R"([{"as_int": 3}])") +
                    R"(, "s": )" + meta(R"([{"as_int": 3}])") + R"(, "u": )" +
                    meta(R"([{"as_int": 1}, {"as_int": 3}])") + R"(, "out": )" +
                    meta(R"([{"as_int": 1}, {"as_int": 3}, {"as_int": 5}])") + R"(, "o2": )" +
                    meta(R"([{"as_int": 5}, {"as_int": 3}])");
  p.nodes = "[" +
            predispatch("_vmap_increment_nesting",
                        int_arg(5) + R"(, {"name": "", "arg": {"as_string": "error"}})", "") +
            "," +
            predispatch("_add_batch_dim", tensor_arg("x") + "," + int_arg(1) + "," + int_arg(1),
                        tensor_out("bx")) +
            "," +
            R"({"target": "torch.ops.aten.add.Tensor", "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "bx"}}},
                {"name": "other", "arg": {"as_tensor": {"name": "y"}}}],
              "outputs": [{"as_tensor": {"name": "s"}}]},
              {"target": "torch.ops.aten.unsqueeze.default", "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "s"}}},
                {"name": "dim", "arg": {"as_int": 0}}],
              "outputs": [{"as_tensor": {"name": "u"}}]},)" +
            predispatch("_remove_batch_dim",
                        tensor_arg("u") + "," + int_arg(1) + "," + int_arg(5) + "," + int_arg(2),
                        tensor_out("out")) +
            "," +
            predispatch("_remove_batch_dim",
                        tensor_arg("y") + "," + int_arg(1) + "," + int_arg(5) + "," + int_arg(0),
                        tensor_out("o2")) +
            "," + predispatch("_vmap_decrement_nesting", "", "") + "]";
  p.outputs = R"([{"as_tensor": {"name": "out"}}, {"as_tensor": {"name": "o2"}}])";
  p.output_specs = R"([{"user_output": {"arg": {"as_tensor": {"name": "out"}}}},
                       {"user_output": {"arg": {"as_tensor": {"name": "o2"}}}}])";
  ImportedProgram ip = load(p.json());
  const ir::Graph& g = *ip.graph;
  EXPECT_EQ(g.type_to_string(g.outputs()[0].value->type()), "f32[1, 3, 5]");
  EXPECT_EQ(g.type_to_string(g.outputs()[1].value->type()), "f32[5, 3]");
  // The batched x is held as [5, 3] (its dim 1 first), so y broadcasts as [1, 3].
  EXPECT_EQ(g.type_to_string(g.find_node("s")->output()->type()), "f32[5, 3]");
}

// An op with no batching rule here is refused naming the node; so are levels out of order.
TEST(ExportedProgram, VmapRegionsRefuseWhatTheyCannotDebatch) {
  Prog p;
  p.tensor_values += R"(, "bx": )" + meta(R"([{"as_int": 3}])") + R"(, "sm": )" + meta("[]");
  p.nodes = "[" +
            predispatch("_vmap_increment_nesting",
                        int_arg(2) + R"(, {"name": "", "arg": {"as_string": "error"}})", "") +
            "," +
            predispatch("_add_batch_dim", tensor_arg("x") + "," + int_arg(0) + "," + int_arg(1),
                        tensor_out("bx")) +
            "," +
            R"({"target": "torch.ops.aten.sum.dim_IntList", "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "bx"}}},
                {"name": "dim", "arg": {"as_ints": [0]}}],
              "outputs": [{"as_tensor": {"name": "sm"}}]}])";
  std::string e = error_of(p.json());
  EXPECT_THAT(e,
              HasSubstr("node 'sm' (aten.sum.dim_IntList) takes a tensor batched by torch.vmap"));
  EXPECT_THAT(e, HasSubstr("ep.run_decompositions()"));

  p.nodes = "[" +
            predispatch("_vmap_increment_nesting",
                        int_arg(2) + R"(, {"name": "", "arg": {"as_string": "error"}})", "") +
            "," +
            predispatch("_add_batch_dim", tensor_arg("x") + "," + int_arg(0) + "," + int_arg(2),
                        tensor_out("bx")) +
            "]";
  EXPECT_THAT(error_of(p.json()), HasSubstr("level 2 is not the innermost open vmap level (1)"));

  p.nodes = "[" + predispatch("_vmap_decrement_nesting", "", "") + "]";
  EXPECT_THAT(error_of(p.json()), HasSubstr("a vmap level closed that was never opened"));

  p.nodes = "[" + predispatch("_some_future_call", "", "") + "]";
  EXPECT_THAT(error_of(p.json()), HasSubstr("is not supported inside a torch.vmap region"));
}

// XLM's max(lengths).item() <= seq: the scalar feeds only a runtime assert, which is dropped with
// the other checks, so the program imports; a size taken from it is refused naming the item.
TEST(ExportedProgram, ItemThatOnlyFeedsAssertsIsDropped) {
  Prog p;
  p.range_constraints = R"({"u0": {"min_val": 0, "max_val": 16}})";
  p.sym_int_values = R"({"item": {"as_expr": {"expr_str": "u0"}}})";
  p.tensor_values = R"("x": )" + meta(R"([{"as_int": 2}, {"as_int": 3}])") + R"(, "relu": )" +
                    meta(R"([{"as_int": 2}, {"as_int": 3}])") + R"(, "mx": )" + meta("[]");
  const std::string item = R"([
    {"target": "torch.ops.aten.max.default", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}}], "outputs": [{"as_tensor": {"name": "mx"}}]},
    {"target": "torch.ops.aten.item.default", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "mx"}}}],
      "outputs": [{"as_sym_int": {"as_name": "item"}}]},
    {"target": "_operator.le", "inputs": [
      {"name": "", "arg": {"as_sym_int": {"as_name": "item"}}}, {"name": "", "arg": {"as_int": 16}}],
      "outputs": [{"as_sym_bool": {"as_name": "le"}}]},
    {"target": "torch.ops.aten._assert_scalar.default", "inputs": [
      {"name": "self", "arg": {"as_sym_bool": {"as_name": "le"}}},
      {"name": "assert_msg", "arg": {"as_string": "u0 <= 16"}}], "outputs": []},)";
  p.nodes = item + R"(
    {"target": "torch.ops.aten.relu.default", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}}], "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  ImportedProgram ip = load(p.json());
  EXPECT_EQ(ip.info.dropped_nodes, 3u);  // item, le and the assert
  std::vector<std::string> ops;
  for (const auto& n : ip.graph->nodes()) ops.push_back(n->op());
  EXPECT_EQ(ops, (std::vector<std::string>{"aten.max.default", "aten.relu.default"}));

  p.nodes = item + R"(
    {"target": "torch.ops.aten.view.default", "inputs": [
      {"name": "self", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "size", "arg": {"as_sym_ints": [{"as_name": "item"}, {"as_int": 3}]}}],
      "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  EXPECT_THAT(error_of(p.json()),
              HasSubstr("uses symbolic int 'item': it is the value of a tensor at run time (node "
                        "'item' (aten.item.default)): data-dependent scalars cannot be compiled"));
}

TEST(ExportedProgram, PlainSymbolStringsAndUnboundedRanges) {
  Prog p;
  p.range_constraints =
      R"({"s0": {"min_val": 2, "max_val": Infinity}, "s1": {"min_val": 0, "max_val": null}})";
  p.tensor_values =
      R"("x": )" + meta(R"([{"as_expr": {"expr_str": "s0"}}, {"as_expr": {"expr_str": "s1*2"}}])") +
      R"(, "relu": )" +
      meta(R"([{"as_expr": {"expr_str": "s0"}}, {"as_expr": {"expr_str": "2*s1"}}])");
  ImportedProgram ip = load(p.json());
  EXPECT_EQ(ip.graph->symbols()[0].max, INT64_MAX);
  EXPECT_EQ(ip.graph->symbols()[1].max, INT64_MAX);
  EXPECT_EQ(ip.graph->type_to_string(ip.graph->nodes()[0]->output()->type()), "f32[s0, 2*s1]");
}

TEST(ExportedProgram, InlinesWrapWithSetGradEnabled) {
  Prog p;
  p.tensor_values += R"(, "neg": )" + meta(R"([{"as_int": 2}, {"as_int": 3}])");
  p.outputs = R"([{"as_tensor": {"name": "relu"}}])";
  p.nodes = R"([{"target": "torch.ops.higher_order.wrap_with_set_grad_enabled", "inputs": [
      {"name": "", "arg": {"as_bool": false}},
      {"name": "", "arg": {"as_graph": {"name": "submod_1", "graph": {
         "inputs": [{"as_tensor": {"name": "x"}}], "outputs": [{"as_tensor": {"name": "neg"}}],
         "nodes": [{"target": "torch.ops.aten.neg.default",
                    "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}}],
                    "outputs": [{"as_tensor": {"name": "neg"}}]}],
         "tensor_values": {"x": )" +
            meta(R"([{"as_int": 2}, {"as_int": 3}])") + R"(, "neg": )" +
            meta(R"([{"as_int": 2}, {"as_int": 3}])") + R"(},
         "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false}}}},
      {"name": "", "arg": {"as_tensor": {"name": "x"}}}],
      "outputs": [{"as_tensor": {"name": "wrap"}}]},
    {"target": "torch.ops.aten.relu.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "wrap"}}}],
     "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  ImportedProgram ip = load(p.json());
  ASSERT_EQ(ip.graph->nodes().size(), 2u);
  EXPECT_EQ(ip.graph->nodes()[0]->op(), "aten.neg.default");
  EXPECT_EQ(ip.graph->nodes()[1]->input(0), ip.graph->nodes()[0]->output());
}

TEST(ExportedProgram, SignatureRoles) {
  Prog p;
  p.inputs =
      R"([{"as_tensor": {"name": "p_w"}}, {"as_tensor": {"name": "b_rm"}}, {"as_tensor": {"name": "c_k"}},
                 {"as_token": null, "as_tensor": {"name": "tok"}}, {"as_int": 3}, {"as_tensor": {"name": "x"}}])";
  p.tensor_values += R"(, "p_w": )" + meta(R"([{"as_int": 3}])") + R"(, "b_rm": )" +
                     meta(R"([{"as_int": 3}])") + R"(, "c_k": )" + meta(R"([{"as_int": 3}])") +
                     R"(, "tok": )" + meta("[]");
  p.input_specs = R"([{"parameter": {"arg": {"name": "p_w"}, "parameter_name": "fc.w"}},
      {"buffer": {"arg": {"name": "b_rm"}, "buffer_name": "bn.rm", "persistent": false}},
      {"tensor_constant": {"arg": {"name": "c_k"}, "tensor_constant_name": "k"}},
      {"token": {"arg": {"name": "tok"}}},
      {"constant_input": {"name": "n", "value": {"as_int": 3}}},
      {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}])";
  p.outputs = R"([{"as_tensor": {"name": "p_w"}}, {"as_tensor": {"name": "relu"}}])";
  p.output_specs = R"([{"buffer_mutation": {"arg": {"name": "p_w"}, "buffer_name": "bn.rm"}},
      {"user_output": {"arg": {"as_tensor": {"name": "relu"}}}}])";
  ImportedProgram ip = load(p.json());
  const auto& in = ip.graph->inputs();
  ASSERT_EQ(in.size(), 4u);  // token and constant_input dropped
  EXPECT_EQ(in[0].role, ir::InputRole::parameter);
  EXPECT_EQ(in[0].target, "fc.w");
  EXPECT_EQ(in[1].role, ir::InputRole::buffer);
  EXPECT_FALSE(in[1].persistent);
  EXPECT_EQ(in[2].role, ir::InputRole::constant);
  EXPECT_EQ(in[3].role, ir::InputRole::user_input);
  ASSERT_EQ(ip.graph->outputs().size(), 2u);
  EXPECT_EQ(ip.graph->outputs()[0].role, ir::OutputRole::buffer_mutation);
  EXPECT_EQ(ip.graph->outputs()[0].target, "bn.rm");
}

// --- malformed programs ---------------------------------------------------------------------

TEST(ExportedProgramErrors, NewerSchemaMajor) {
  Prog p;
  p.schema = R"({"major": 9, "minor": 0})";
  EXPECT_THAT(
      error_of(p.json()),
      HasSubstr("m.json: schema_version: schema major 9 is newer than the newest supported (8)"));
}

TEST(ExportedProgramErrors, UnknownAndAmbiguousUnionTags) {
  Prog p;
  p.nodes = R"([{"target": "torch.ops.aten.relu.default",
      "inputs": [{"name": "self", "arg": {"as_foo": 1}}], "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  EXPECT_THAT(
      error_of(p.json()),
      HasSubstr("graph_module.graph.nodes[0].inputs[0].arg: unknown Argument tag 'as_foo'"));
  p.nodes = R"([{"target": "torch.ops.aten.relu.default",
      "inputs": [{"name": "self", "arg": {"as_int": 1, "as_float": 2.0}}], "outputs": []}])";
  EXPECT_THAT(error_of(p.json()),
              HasSubstr("ambiguous union Argument: non-null members [as_float, as_int]"));
  p.nodes = R"([{"target": "torch.ops.aten.relu.default",
      "inputs": [{"name": "self", "arg": {"as_none": false}}], "outputs": []}])";
  EXPECT_THAT(error_of(p.json()), HasSubstr("as_none must be true, [] or null"));
}

TEST(ExportedProgramErrors, DanglingName) {
  Prog p;
  p.nodes = R"([{"target": "torch.ops.aten.relu.default",
      "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x9"}}}], "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  EXPECT_THAT(error_of(p.json()), HasSubstr("node 'relu' uses 'x9' which is never defined"));
}

TEST(ExportedProgramErrors, WrongJsonTypes) {
  Prog p;
  p.tensor_values = R"("x": {"dtype": "float32", "sizes": [], "layout": 7}, "relu": )" + meta("[]");
  EXPECT_THAT(
      error_of(p.json()),
      HasSubstr(
          "graph_module.graph.tensor_values.x.dtype: expected integer, found string \"float32\""));
  p = Prog();
  p.tensor_values = R"("x": {"dtype": 7, "sizes": 3}, "relu": )" + meta("[]");
  EXPECT_THAT(error_of(p.json()),
              HasSubstr("tensor_values.x.sizes: expected array, found integer 3"));
  p = Prog();
  p.nodes = R"({"a": 1})";
  EXPECT_THAT(error_of(p.json()),
              HasSubstr("graph_module.graph.nodes: expected array, found object"));
}

TEST(ExportedProgramErrors, UnsupportedDtypeAndLayout) {
  Prog p;
  p.tensor_values = R"("x": )" + meta("[]", 11) + R"(, "relu": )" + meta("[]");
  EXPECT_THAT(error_of(p.json()),
              HasSubstr("tensor 'x': dtype 11 (COMPLEXDOUBLE) is not supported"));
  p.tensor_values = R"("x": )" + meta("[]", 20) + R"(, "relu": )" + meta("[]");
  EXPECT_THAT(error_of(p.json()), HasSubstr("dtype 20 is not an export ScalarType"));
}

TEST(ExportedProgramErrors, NegativeDimAndUnsupportedExpression) {
  Prog p;
  p.tensor_values = R"("x": )" + meta(R"([{"as_int": -2}])") + R"(, "relu": )" + meta("[]");
  EXPECT_THAT(error_of(p.json()), HasSubstr("tensor 'x' size 0 is negative (-2)"));
  p.tensor_values =
      R"("x": )" + meta(R"([{"as_expr": {"expr_str": "s0 + 1"}}])") + R"(, "relu": )" + meta("[]");
  EXPECT_THAT(error_of(p.json()), HasSubstr("symbolic expression 's0 + 1' is not supported"));
}

TEST(ExportedProgramErrors, InvalidJsonHasLineAndColumn) {
  EXPECT_THAT(error_of("{\n  \"a\": tru\n}"), HasSubstr("m.json:2:"));
  EXPECT_THAT(error_of("{\"a\": Infinit}"), HasSubstr("invalid JSON"));
  EXPECT_THAT(error_of(std::string(300, '[') + std::string(300, ']')),
              HasSubstr("nesting deeper than 256"));
}

TEST(ExportedProgramErrors, SpecCountMismatch) {
  Prog p;
  p.input_specs = "[]";
  EXPECT_THAT(error_of(p.json()), HasSubstr("input_specs: has 0 entries but graph.inputs has 1"));
}

// A higher-order kernel call neuronc does not inline (here a triton kernel as torch.export
// records one: kernel index, grid, kwargs of tensors) is one opaque node over its tensor operands
// with the recorded output types, for analyze's inventory; nothing can run it.
TEST(ExportedProgram, KeepsAnUninlinedHigherOrderCallWhole) {
  Prog p;
  p.tensor_values += R"(, "out": )" + meta(R"([{"as_int": 2}, {"as_int": 3}])");
  p.outputs = R"([{"as_tensor": {"name": "relu"}}])";
  p.nodes = R"([{"target": "torch.ops.higher_order.triton_kernel_wrapper_functional", "inputs": [
      {"name": "kernel_idx", "arg": {"as_int": 0}},
      {"name": "grid", "arg": {"as_ints": [4, 1, 1]}},
      {"name": "in_ptr", "arg": {"as_tensor": {"name": "x"}}},
      {"name": "tensors_to_clone", "arg": {"as_strings": ["out_ptr"]}}],
      "outputs": [{"as_tensor": {"name": "out"}}]},
    {"target": "torch.ops.aten.relu.default", "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "out"}}}],
     "outputs": [{"as_tensor": {"name": "relu"}}]}])";
  ImportedProgram ip = load(p.json());
  ASSERT_EQ(ip.graph->nodes().size(), 2u);
  const ir::Node& hop = *ip.graph->nodes()[0];
  EXPECT_EQ(hop.op(), "higher_order.triton_kernel_wrapper_functional");
  EXPECT_EQ(hop.info(), nullptr);
  ASSERT_EQ(hop.inputs().size(), 1u);
  EXPECT_EQ(hop.input(0)->name(), "x");
  EXPECT_EQ(ip.graph->type_to_string(hop.output()->type()), "f32[2, 3]");
  EXPECT_EQ(ip.graph->nodes()[1]->input(0), hop.output());
}

TEST(ExportedProgramErrors, MissingRequiredField) {
  EXPECT_THAT(error_of(R"({"schema_version": {"major": 8, "minor": 1}})"),
              HasSubstr("m.json: <root>: missing field 'graph_module'"));
}

TEST(PayloadConfig, ParsesEntries) {
  auto m = read_payload_config(R"({"config": {"w": {"path_name": "weight_0", "is_param": true,
      "use_pickle": false, "tensor_meta": )" +
                                   meta(R"([{"as_int": 3}])") + "}}}",
                               "c.json");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.at("w").path_name, "weight_0");
  EXPECT_EQ(m.at("w").tensor_meta->sizes, std::vector<int64_t>{3});
}

TEST(SchemaDtypes, NotC10Numbering) {
  EXPECT_EQ(schema_dtype_to_ir(7), ir::DType::f32);
  EXPECT_EQ(schema_dtype_to_ir(13), ir::DType::bf16);  // c10 would say 15
  EXPECT_EQ(schema_dtype_to_ir(12), ir::DType::boolean);
  EXPECT_EQ(schema_dtype_to_ir(29), ir::DType::f8e4m3fn);
  EXPECT_EQ(schema_dtype_to_ir(15), std::nullopt);
  EXPECT_EQ(schema_dtype_to_ir(0), std::nullopt);
}

}  // namespace
}  // namespace neuronc::frontend
