// Lowering support checks (see support.h).
#include "codegen/support.h"

#include "codegen/lowering.h"

namespace neuronc::codegen {

std::optional<std::string> unsupported_reason(const ir::Node& n, const device::Target& t) {
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
  if (const Lowering* l = find_lowering(op)) return l->refusal(n, t);
  if (is_alias_op(op) || is_creation_op(op)) return std::nullopt;
  return "codegen has no lowering for " + op;
}

}  // namespace neuronc::codegen
