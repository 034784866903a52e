// Lowering support checks (see support.h).
#include "codegen/support.h"

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

bool is_compile_time_constant(const ir::Value* v) {
  return v && !v->producer() && v->payload();
}

}  // namespace

std::optional<std::string> unsupported_reason(const ir::Graph& g, const ir::Node& n) {
  (void)g;
  const std::string& op = n.op();
  for (const ir::Value* v : n.inputs()) {
    if (v && ir::is_complex(v->dtype())) return "complex operand '" + v->name() + "'";
  }
  for (const ir::Value* v : n.outputs()) {
    if (ir::is_complex(v->dtype())) return "complex result '" + v->name() + "'";
  }
  for (const ir::Value* v : n.outputs()) {
    for (const ir::Dim& d : v->shape()) {
      if (d.is_symbolic()) return "symbolic dim in result '" + v->name() + "'";
    }
  }
  if (!find_lowering(op) && !is_alias_op(op) && !is_creation_op(op))
    return "codegen has no lowering for " + op;
  if (conv_lowering(op)) {
    ConvGeometry geo;
    if (auto why = conv_geometry(n, geo)) return why;
  }
  if (pool_lowering(op)) {
    PoolGeometry geo;
    if (auto why = pool_geometry(n, geo)) return why;
  }
  if (op == "aten.div.Tensor_mode" && !n.attr_is_none("rounding_mode")) {
    return "div with rounding_mode '" + n.attr_string("rounding_mode") + "' is not lowered";
  }
  if (op == "aten.gather.default" || op == "aten.index_select.default" ||
      op == "aten.index.Tensor") {
    for (size_t i = 1; i < n.inputs().size(); ++i) {
      const ir::Value* v = n.inputs()[i];
      if (v && !is_compile_time_constant(v)) {
        return "indices '" + v->name() + "' are only known at run time (data-dependent gather)";
      }
    }
  }
  if (op == "aten.scaled_dot_product_attention.default" && n.attr("dropout_p") &&
      n.attr_float("dropout_p") != 0.0) {
    return "attention dropout is not run on the device";
  }
  return std::nullopt;
}

}  // namespace neuronc::codegen
