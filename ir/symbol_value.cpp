// A dynamic dim's size as data (symbol_value.h).
#include "ir/symbol_value.h"

#include <utility>
#include <vector>

namespace neuronc::ir {

Value* symbol_input(Graph& g, SymbolId s, DType dt) {
  const std::string& name = g.symbol(s).name;
  for (const GraphInput& in : g.inputs())
    if (in.role == InputRole::symbol && in.target == name && in.value->dtype() == dt)
      return in.value;
  return g.add_input("size_" + name + "_" + std::string(dtype_name(dt)), TensorType{dt, {}},
                     InputRole::symbol, name);
}

Value* symbol_value(Graph& g, const Dim& d, DType dt, const Node* at, const std::string& name) {
  auto add = [&](std::string op, std::vector<Value*> in, std::vector<NamedAttr> attrs) {
    if (at) {
      Node* m = g.insert_before(at, std::move(op), std::move(in), std::move(attrs));
      m->set_location(at->location());
      return m->output();
    }
    const std::string n = g.unique_name(name);
    return g.append(std::move(op), std::move(in), std::move(attrs), std::nullopt, {n}, n)->output();
  };
  const Monomial m = g.expand(Monomial::of(d));
  if (m.symbols.empty()) throw Error("symbol_value of the constant " + g.dim_to_string(d));
  Value* v = nullptr;
  for (SymbolId s : m.symbols) {
    Value* x = symbol_input(g, s, dt);
    v = v ? add("aten.mul.Tensor", {v, x}, {}) : x;
  }
  std::vector<NamedAttr> coeff;
  coeff.push_back({"other", m.coeff});
  if (m.coeff != 1) v = add("aten.mul.Scalar", {v}, std::move(coeff));
  return v;
}

}  // namespace neuronc::ir
