// Shape specialisation (see the header).
#include "passes/specialize_shapes.h"

#include <memory>
#include <vector>

#include "ir/op_registry.h"
#include "passes/host_eval.h"

namespace neuronc::passes {
namespace {

ir::Dim bind_dim(const ir::Dim& d, const std::vector<std::optional<int64_t>>& v) {
  if (d.is_symbolic() && v[static_cast<size_t>(d.symbol)]) {
    return ir::Dim::constant(d.coeff * *v[static_cast<size_t>(d.symbol)]);
  }
  return d;
}

ir::Attribute bind_attr(const ir::Attribute& a, const std::vector<std::optional<int64_t>>& v) {
  if (const auto* l = std::get_if<ir::SymIntList>(&a)) {
    ir::SymIntList out;
    bool all_static = true;
    for (const ir::Dim& d : l->dims) {
      out.dims.push_back(bind_dim(d, v));
      all_static &= out.dims.back().is_constant();
    }
    if (!all_static) return out;
    std::vector<int64_t> ints;
    for (const ir::Dim& d : out.dims) ints.push_back(d.value());
    return ints;
  }
  if (const auto* d = std::get_if<ir::Dim>(&a)) {
    ir::Dim b = bind_dim(*d, v);
    if (b.is_constant()) return b.value();
    return b;
  }
  return a;
}

}  // namespace

bool SpecializeShapes::run(ir::Graph& g) {
  if (values_.empty()) return false;
  std::vector<std::optional<int64_t>> v(g.symbols().size());
  for (const auto& [name, value] : values_) {
    auto id = g.find_symbol(name);
    if (!id) {
      std::string known;
      for (const ir::Symbol& s : g.symbols()) known += (known.empty() ? "" : ", ") + s.name;
      throw ir::Error("symbol '" + name +
                      "' is not in the graph (symbols: " + (known.empty() ? "none" : known) + ")");
    }
    const ir::Symbol& s = g.symbol(*id);
    if (value < s.min || value > s.max) {
      throw ir::Error("symbol '" + name + "' = " + std::to_string(value) +
                      " is outside its range [" + std::to_string(s.min) + ", " +
                      (s.max == INT64_MAX ? std::string("inf") : std::to_string(s.max)) + "]");
    }
    if (s.is_product()) {
      throw ir::Error("symbol '" + name + "' is a product of other symbols: bind its factors");
    }
    v[static_cast<size_t>(*id)] = value;
  }
  // A product symbol's value follows from its factors'.
  for (size_t i = 0; i < g.symbols().size(); ++i) {
    const ir::Symbol& s = g.symbol(static_cast<ir::SymbolId>(i));
    if (!s.is_product()) continue;
    int64_t p = 1;
    bool bound = true;
    for (ir::SymbolId f : s.factors) {
      bound &= v[static_cast<size_t>(f)].has_value();
      if (bound && __builtin_mul_overflow(p, *v[static_cast<size_t>(f)], &p))
        throw ir::Error("symbol '" + s.name + "' overflows int64 at these values");
    }
    if (bound) v[i] = p;
  }
  // A symbol input of a bound symbol the run does not rebind: a constant of its value.
  for (ir::GraphInput& in : g.mutable_inputs()) {
    if (in.role != ir::InputRole::symbol || keep_.count(in.target)) continue;
    auto it = values_.find(in.target);
    if (it == values_.end()) continue;
    auto bytes = std::make_shared<std::vector<std::byte>>(
        encode(HostTensor{in.value->dtype(), {}, {static_cast<double>(it->second)}}));
    in.value->set_payload(ir::ConstantPayload{bytes->data(), bytes->size(), 0, {}, bytes});
    in.role = ir::InputRole::constant;
    in.target = "size." + in.target;
  }
  for (const ir::GraphInput& in : g.inputs()) {
    ir::TensorType t = in.value->type();
    for (ir::Dim& d : t.shape) d = bind_dim(d, v);
    in.value->set_type(t);
  }
  for (const auto& n : g.nodes()) {
    for (const ir::NamedAttr& a : std::vector<ir::NamedAttr>(n->attrs())) {
      n->set_attr(a.name, bind_attr(a.value, v));
    }
    if (n->info()) {
      std::vector<const ir::TensorType*> in_types;
      for (const ir::Value* x : n->inputs()) in_types.push_back(x ? &x->type() : nullptr);
      std::vector<ir::TensorType> types = ir::infer_types(g, *n->info(), in_types, n->attrs());
      for (size_t i = 0; i < types.size() && i < n->outputs().size(); ++i)
        n->output(i)->set_type(types[i]);
    } else {
      for (ir::Value* out : n->outputs()) {
        ir::TensorType t = out->type();
        for (ir::Dim& d : t.shape) d = bind_dim(d, v);
        out->set_type(t);
      }
    }
  }
  return true;
}

}  // namespace neuronc::passes
