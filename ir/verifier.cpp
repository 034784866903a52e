// Graph verifier: definitions before uses, use lists, names, and result types that agree with
// each registered operator's shape rule.
#include "ir/verifier.h"

#include <unordered_set>

#include "ir/op_registry.h"

namespace neuronc::ir {
namespace {

void check_dims(const Graph& g, const Shape& s, const std::string& where,
                std::vector<std::string>& out) {
  for (const Dim& d : s) {
    if (d.is_symbolic()) {
      if (d.symbol >= static_cast<SymbolId>(g.symbols().size())) {
        out.push_back(where + ": unknown symbol id " + std::to_string(d.symbol));
      }
    } else if (d.value() < 0) {
      out.push_back(where + ": negative dimension " + std::to_string(d.value()));
    }
  }
}

}  // namespace

std::vector<std::string> verify(const Graph& g, const VerifyOptions& opts) {
  std::vector<std::string> problems;
  std::unordered_set<const Value*> defined;
  std::unordered_set<std::string> names;
  for (const GraphInput& in : g.inputs()) {
    if (!in.value) {
      problems.push_back("graph input is null");
      continue;
    }
    defined.insert(in.value);
    if (!names.insert(in.value->name()).second) {
      problems.push_back("value name '" + in.value->name() + "' is defined twice");
    }
    check_dims(g, in.value->shape(), "input '" + in.value->name() + "'", problems);
    if (in.role != InputRole::user_input && in.target.empty()) {
      problems.push_back("input '" + in.value->name() + "' (" + input_role_name(in.role) +
                         ") has no target name");
    }
    if (in.role == InputRole::symbol) {
      const std::optional<SymbolId> s = g.find_symbol(in.target);
      if (!s || g.symbol(*s).is_product())
        problems.push_back("symbol input '" + in.value->name() + "' names '" + in.target +
                           "': expected a free symbol of the graph");
      if (!in.value->shape().empty() || in.value->payload())
        problems.push_back("symbol input '" + in.value->name() +
                           "': expected a 0-d value with no payload");
    }
    if (in.role == InputRole::state && in.value->payload()) {
      problems.push_back("state input '" + in.value->name() +
                         "' has a payload: its value changes from run to run");
    }
    if (const ConstantPayload* p = in.value->payload(); p && !p->absent) {
      if (auto n = numel(in.value->shape()); n && n->is_constant() && p->strides.empty()) {
        const size_t need =
            (static_cast<size_t>(p->storage_offset) + static_cast<size_t>(n->coeff)) *
            dtype_size(p->element_dtype(in.value->dtype()));
        if (need > p->nbytes) {
          problems.push_back("constant '" + in.value->name() + "': needs " + std::to_string(need) +
                             " bytes, payload has " + std::to_string(p->nbytes));
        }
      }
      if (const std::string why = p->deferral_problem(in.value->dtype()); !why.empty())
        problems.push_back("constant '" + in.value->name() + "': " + why);
    }
  }
  for (const auto& node_ptr : g.nodes()) {
    const Node& n = *node_ptr;
    const std::string who = n.describe();
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const Value* v = n.inputs()[i];
      if (!v) continue;  // absent optional tensor
      if (!defined.count(v)) {
        problems.push_back(who + ": operand " + std::to_string(i) + " '" + v->name() +
                           "' is used before it is defined");
      }
      bool listed = false;
      for (const Use& u : v->uses()) listed |= (u.node == &n && u.operand == i);
      if (!listed)
        problems.push_back(who + ": use list of '" + v->name() + "' is missing this use");
    }
    for (const Value* out : n.outputs()) {
      if (out->producer() != &n) {
        problems.push_back(who + ": result '" + out->name() + "' names another producer");
      }
      if (!names.insert(out->name()).second) {
        problems.push_back("value name '" + out->name() + "' is defined twice");
      }
      check_dims(g, out->shape(), who + ": result '" + out->name() + "'", problems);
      defined.insert(out);
    }
    const OpInfo* info = n.info();
    if (!info) {
      if (!opts.allow_unknown_ops) problems.push_back(who + ": operator is not registered");
      continue;
    }
    if (info->num_outputs >= 0 && n.outputs().size() != static_cast<size_t>(info->num_outputs)) {
      problems.push_back(who + ": expected " + std::to_string(info->num_outputs) +
                         " results, found " + std::to_string(n.outputs().size()));
      continue;
    }
    std::vector<const TensorType*> in_types;
    for (const Value* v : n.inputs()) in_types.push_back(v ? &v->type() : nullptr);
    try {
      std::vector<TensorType> expect = infer_types(g, *info, in_types, n.attrs());
      if (expect.size() != n.outputs().size()) {
        problems.push_back(who + ": shape rule gives " + std::to_string(expect.size()) +
                           " results, node has " + std::to_string(n.outputs().size()));
        continue;
      }
      for (size_t i = 0; i < expect.size(); ++i) {
        const TensorType& have = n.outputs()[i]->type();
        if (!(have == expect[i])) {
          problems.push_back(who + ": result " + std::to_string(i) + " '" + n.outputs()[i]->name() +
                             "' has type " + g.type_to_string(have) + ", expected " +
                             g.type_to_string(expect[i]));
        }
      }
    } catch (const Error& e) {
      problems.push_back(who + ": " + e.what());
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const GraphOutput& o = g.outputs()[i];
    if (!o.value || !defined.count(o.value)) {
      problems.push_back("graph output " + std::to_string(i) + " '" +
                         (o.value ? o.value->name() : std::string("null")) + "' is not defined");
    }
    if (o.role != OutputRole::user_output && o.target.empty()) {
      problems.push_back("graph output " + std::to_string(i) + " (" + output_role_name(o.role) +
                         ") has no target name");
    }
  }
  return problems;
}

void verify_or_throw(const Graph& g, const VerifyOptions& opts) {
  std::vector<std::string> p = verify(g, opts);
  if (p.empty()) return;
  std::string msg = p[0];
  if (p.size() > 1) msg += " (and " + std::to_string(p.size() - 1) + " more problems)";
  throw Error(msg);
}

}  // namespace neuronc::ir
