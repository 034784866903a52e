// Graph-rewriting helpers.
#include "passes/rewrite.h"

#include <memory>

namespace neuronc::passes {

ir::Node* replace_node(ir::Graph& g, ir::Node* old, std::string op, std::vector<ir::Value*> inputs,
                       std::vector<ir::NamedAttr> attrs) {
  // Free the result names first so the replacement keeps them (stable names in the printed IR
  // and in --verify reports that key on torch.export's node names).
  std::vector<std::string> names;
  for (ir::Value* v : old->outputs()) names.push_back(v->name());
  ir::Node* n = g.insert_before(old, std::move(op), std::move(inputs), std::move(attrs));
  if (n->outputs().size() != old->outputs().size()) {
    throw ir::Error("rewriting " + old->describe() + " into " + n->op() + ": result count " +
                    std::to_string(n->outputs().size()) + " differs from " +
                    std::to_string(old->outputs().size()));
  }
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    if (!(n->output(i)->type() == old->output(i)->type())) {
      throw ir::Error("rewriting " + old->describe() + " into " + n->op() + ": result type " +
                      g.type_to_string(n->output(i)->type()) + " differs from " +
                      g.type_to_string(old->output(i)->type()));
    }
    old->output(i)->replace_all_uses_with(n->output(i));
  }
  n->set_location(old->location());
  const std::string old_name = old->name();
  g.erase(old);
  g.rename(n, old_name, names);
  return n;
}

ir::Value* NodeExpander::add(ir::Node* at, std::string op, std::vector<ir::Value*> in,
                             std::vector<ir::NamedAttr> attrs) {
  ir::Node* m = g_.insert_before(at, std::move(op), std::move(in), std::move(attrs));
  m->set_location(at->location());
  created_.insert(m);
  return m->output();
}

bool NodeExpander::finish(ir::Node* n, ir::Value* v) {
  if (!(v->type() == n->output()->type()))
    throw ir::Error(std::string(verb_) + " " + n->describe() + ": result type " +
                    g_.type_to_string(v->type()) + " differs from " +
                    g_.type_to_string(n->output()->type()));
  const std::string name = n->output()->name();
  const std::string node_name = n->name();
  n->output()->replace_all_uses_with(v);
  g_.erase(n);
  // Not when `v` is an existing value (the src of a full-width slice_scatter, say).
  if (ir::Node* p = v->producer(); p && created_.count(p)) g_.rename(p, node_name, {name});
  return true;
}

std::vector<ir::Node*> node_snapshot(const ir::Graph& g) {
  std::vector<ir::Node*> order;
  order.reserve(g.nodes().size());
  for (const auto& n : g.nodes()) order.push_back(n.get());
  return order;
}

void forward_to(ir::Graph& g, ir::Node* n, ir::Value* v) {
  n->output()->replace_all_uses_with(v);
  g.erase(n);
}

std::vector<ir::NamedAttr> narrow_as_slice(const ir::Node& n) {
  const ir::TensorType& in = n.input(0)->type();
  int64_t dim = n.attr_int("dim");
  if (dim < 0) dim += in.rank();
  int64_t start = n.attr_int("start");  // a symbolic start is refused here, naming it
  if (start < 0) {
    const ir::Dim size = in.shape.at(static_cast<size_t>(dim));
    if (!size.is_constant())
      throw ir::Error(n.describe() + ": a negative start needs a static dim, found a symbolic one");
    start += size.value();
  }
  // From 0, the end is the length, symbolic or not; past it, a constant.
  const ir::Attribute end = start == 0 && n.attr("length")
                                ? *n.attr("length")
                                : ir::Attribute(start + n.attr_int("length"));
  return {{"dim", dim}, {"start", start}, {"end", end}, {"step", int64_t{1}}};
}

ir::Attribute shape_attr(const ir::Shape& s) {
  if (ir::is_static(s)) {
    std::vector<int64_t> v;
    for (const ir::Dim& d : s) v.push_back(d.value());
    return v;
  }
  return ir::SymIntList{s};
}

ir::Value* add_constant_input(ir::Graph& g, const std::string& base, const std::string& target,
                              const HostTensor& t) {
  return add_constant_input(g, base, target, t.dtype, t.shape,
                            std::make_shared<std::vector<std::byte>>(encode(t)));
}

ir::Value* add_constant_input(ir::Graph& g, const std::string& base, const std::string& target,
                              ir::DType dtype, const std::vector<int64_t>& shape,
                              std::shared_ptr<std::vector<std::byte>> bytes) {
  return add_constant_input(g, base, target, dtype, shape,
                            bytes ? ir::ConstantPayload{bytes->data(), bytes->size(), 0, {}, bytes}
                                  : ir::ConstantPayload::absent_bytes());
}

ir::Value* add_constant_input(ir::Graph& g, const std::string& base, const std::string& target,
                              ir::DType dtype, const std::vector<int64_t>& shape,
                              ir::ConstantPayload payload) {
  ir::TensorType type;
  type.dtype = dtype;
  for (int64_t d : shape) type.shape.push_back(ir::Dim::constant(d));
  ir::Value* c = g.add_input(g.unique_name(base), type, ir::InputRole::constant, target);
  c->set_payload(std::move(payload));
  return c;
}

}  // namespace neuronc::passes
