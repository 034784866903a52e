// Graph, Node and Value: construction, use lists, naming.
#include "ir/graph.h"

#include <algorithm>
#include <cstring>

#include "ir/op_registry.h"

namespace neuronc::ir {

bool ConstantPayload::copy_stored(size_t offset, size_t n, std::byte* out) const {
  if (offset > nbytes || n > nbytes - offset) return false;
  if (!parts) {
    if (!data) return n == 0;
    std::memcpy(out, data + offset, n);
    return true;
  }
  size_t at = 0;  // the current part's first byte in the storage
  for (const Part& part : *parts) {
    if (n == 0) break;
    if (offset < at + part.nbytes) {
      const size_t from = offset - at, take = std::min(n, part.nbytes - from);
      if (!part.data) return false;
      std::memcpy(out, part.data + from, take);
      out += take;
      offset += take;
      n -= take;
    }
    at += part.nbytes;
  }
  return n == 0;
}

std::string ConstantPayload::deferral_problem(DType value_dtype) const {
  if (parts) {
    size_t total = 0;
    bool held = true;
    for (const Part& part : *parts) {
      total += part.nbytes;
      held = held && (part.data || part.nbytes == 0);
    }
    if (total != nbytes || !held || data)
      return "a deferred concatenation of " + std::to_string(parts->size()) + " parts holding " +
             std::to_string(total) + " bytes" + (held ? "" : " (some absent)") +
             (data ? " beside its own data" : "") + ", expected " + std::to_string(nbytes);
  }
  if (row_scale) {
    const size_t stored = nbytes / 4;
    if (element_dtype(value_dtype) != DType::f32 || row_scale_pitch <= 0 ||
        row_scale->size() < (stored + static_cast<size_t>(row_scale_pitch) - 1) /
                                static_cast<size_t>(row_scale_pitch))
      return "a deferred row scale needs f32 elements and one scale per " +
             std::to_string(row_scale_pitch) + " of its " + std::to_string(stored) +
             " stored elements, found " + std::string(dtype_name(element_dtype(value_dtype))) +
             " and " + std::to_string(row_scale->size()) + " scales";
  }
  return {};
}

bool ConstantPayload::row_major(const std::vector<int64_t>& shape) const {
  if (strides.empty()) return true;
  if (strides.size() != shape.size()) return false;
  int64_t dense = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != dense) return false;
    dense *= shape[d];
  }
  return true;
}

// --- Value ---------------------------------------------------------------------------------

void Value::replace_all_uses_with(Value* other) {
  if (other == this) return;
  const std::vector<Use> uses = uses_;
  for (const Use& u : uses) u.node->set_input(u.operand, other);
  if (graph_) {
    for (size_t i = 0; i < graph_->outputs_.size(); ++i) {
      if (graph_->outputs_[i].value == this) graph_->outputs_[i].value = other;
    }
  }
}

// --- Node ----------------------------------------------------------------------------------

void Node::set_input(size_t i, Value* v) {
  Value* old = inputs_.at(i);
  if (old) {
    auto& uses = old->uses_;
    auto it = std::find(uses.begin(), uses.end(), Use{this, i});
    if (it != uses.end()) uses.erase(it);
  }
  inputs_[i] = v;
  if (v) v->uses_.push_back(Use{this, i});
}

const Attribute* Node::attr(std::string_view name) const {
  for (const NamedAttr& a : attrs_) {
    if (a.name == name) return &a.value;
  }
  if (info_) {
    const int idx = info_->arg_index(name);
    if (idx >= 0 && info_->args[static_cast<size_t>(idx)].default_value)
      return &*info_->args[static_cast<size_t>(idx)].default_value;
  }
  return nullptr;
}

void Node::set_attr(std::string_view name, Attribute value) {
  for (NamedAttr& a : attrs_) {
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  }
  attrs_.push_back(NamedAttr{std::string(name), std::move(value)});
}

namespace {

[[noreturn]] void attr_error(const Node& n, std::string_view name, const char* expected,
                             const Attribute* found) {
  throw Error(n.describe() + ": attribute '" + std::string(name) + "': expected " + expected +
              ", found " + (found ? attr_kind_name(attr_kind(*found)) : "nothing"));
}

}  // namespace

int64_t Node::attr_int(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<int64_t>(a)) return *v;
    if (auto* d = std::get_if<Dim>(a); d && d->is_constant()) return d->value();
    if (auto* b = std::get_if<bool>(a)) return *b ? 1 : 0;
  }
  attr_error(*this, name, "an int", a);
}

double Node::attr_float(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<double>(a)) return *v;
    if (auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
    if (auto* b = std::get_if<bool>(a)) return *b ? 1.0 : 0.0;
  }
  attr_error(*this, name, "a float", a);
}

bool Node::attr_bool(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<bool>(a)) return *v;
    if (auto* i = std::get_if<int64_t>(a)) return *i != 0;
  }
  attr_error(*this, name, "a bool", a);
}

std::vector<int64_t> Node::attr_ints(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<std::vector<int64_t>>(a)) return *v;
    if (auto* i = std::get_if<int64_t>(a)) return {*i};
    if (auto* s = std::get_if<SymIntList>(a)) {
      std::vector<int64_t> out;
      for (const Dim& d : s->dims) {
        if (!d.is_constant()) attr_error(*this, name, "constant ints", a);
        out.push_back(d.value());
      }
      return out;
    }
  }
  attr_error(*this, name, "an int list", a);
}

const std::string& Node::attr_string(std::string_view name) const {
  const Attribute* a = attr(name);
  if (a) {
    if (auto* v = std::get_if<std::string>(a)) return *v;
  }
  attr_error(*this, name, "a string", a);
}

bool Node::attr_is_none(std::string_view name) const {
  const Attribute* a = attr(name);
  return a == nullptr || std::holds_alternative<NoneAttr>(*a);
}

std::string Node::describe() const {
  std::string s = "node '" + name_ + "' (" + op_ + ")";
  const std::string where = loc_.to_string();
  if (!where.empty()) s += " at " + where;
  return s;
}

const char* input_role_name(InputRole r) {
  switch (r) {
    case InputRole::user_input:
      return "input";
    case InputRole::parameter:
      return "param";
    case InputRole::buffer:
      return "buffer";
    case InputRole::constant:
      return "const";
    case InputRole::state:
      return "state";
    case InputRole::symbol:
      return "symbol";
  }
  return "?";
}

const char* output_role_name(OutputRole r) {
  switch (r) {
    case OutputRole::user_output:
      return "user_output";
    case OutputRole::buffer_mutation:
      return "buffer_mutation";
    case OutputRole::user_input_mutation:
      return "user_input_mutation";
  }
  return "?";
}

// --- Graph ---------------------------------------------------------------------------------

SymbolId Graph::add_symbol(std::string name, int64_t min, int64_t max) {
  if (find_symbol(name)) throw Error("symbol '" + name + "' is defined twice");
  if (min > max) {
    throw Error("symbol '" + name + "': range [" + std::to_string(min) + ", " +
                std::to_string(max) + "] is empty");
  }
  symbols_.push_back(Symbol{std::move(name), min, max, {}});
  return static_cast<SymbolId>(symbols_.size() - 1);
}

std::optional<SymbolId> Graph::find_symbol(std::string_view name) const {
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i].name == name) return static_cast<SymbolId>(i);
  }
  return std::nullopt;
}

SymbolId Graph::product_symbol(std::vector<SymbolId> factors) const {
  Monomial m;
  m.symbols = std::move(factors);
  m = expand(m);
  if (m.symbols.size() < 2) throw Error("a product symbol needs two or more factors");
  for (size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i].factors == m.symbols) return static_cast<SymbolId>(i);
  }
  Symbol p;
  p.min = 1;
  p.max = 1;
  for (SymbolId f : m.symbols) {
    const Symbol& s = symbols_.at(static_cast<size_t>(f));
    p.name += (p.name.empty() ? "" : "*") + s.name;
    if (__builtin_mul_overflow(p.min, s.min, &p.min)) p.min = INT64_MAX;
    if (__builtin_mul_overflow(p.max, s.max, &p.max)) p.max = INT64_MAX;
  }
  p.factors = m.symbols;
  symbols_.push_back(std::move(p));
  return static_cast<SymbolId>(symbols_.size() - 1);
}

Monomial Graph::expand(const Monomial& m) const {
  Monomial out;
  out.coeff = m.coeff;
  for (SymbolId s : m.symbols) {
    const Symbol& sym = symbols_.at(static_cast<size_t>(s));
    if (sym.is_product())
      out.symbols.insert(out.symbols.end(), sym.factors.begin(), sym.factors.end());
    else
      out.symbols.push_back(s);
  }
  std::sort(out.symbols.begin(), out.symbols.end());
  return out;
}

Dim Graph::dim_of(const Monomial& m) const {
  const Monomial e = expand(m);
  if (e.symbols.empty()) return Dim::constant(e.coeff);
  if (e.symbols.size() == 1) return Dim::sym(e.symbols[0], e.coeff);
  return Dim::sym(product_symbol(e.symbols), e.coeff);
}

std::string Graph::dim_to_string(const Dim& d) const {
  if (d.is_constant()) return std::to_string(d.value());
  const std::string name = d.symbol < static_cast<SymbolId>(symbols_.size())
                               ? symbols_[static_cast<size_t>(d.symbol)].name
                               : "?" + std::to_string(d.symbol);
  if (d.coeff == 1) return name;
  return std::to_string(d.coeff) + "*" + name;
}

std::string Graph::shape_to_string(const Shape& s) const {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += dim_to_string(s[i]);
  }
  return out + "]";
}

std::string Graph::type_to_string(const TensorType& t) const {
  return std::string(dtype_name(t.dtype)) + shape_to_string(t.shape);
}

std::string Graph::unique_name(std::string_view base) {
  std::string b = base.empty() ? std::string("v") : std::string(base);
  if (!values_by_name_.count(b) && !node_names_.count(b)) return b;
  size_t& n = name_counters_[b];
  for (;;) {
    std::string candidate = b + "_" + std::to_string(++n);
    if (!values_by_name_.count(candidate) && !node_names_.count(candidate)) return candidate;
  }
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->symbols_ = symbols_;
  g->name_counters_ = name_counters_;
  g->node_names_ = node_names_;
  std::unordered_map<const Value*, Value*> vmap;
  std::unordered_map<const Node*, Node*> nmap;
  for (const auto& v : values_) {
    auto c = std::make_unique<Value>();
    c->name_ = v->name_;
    c->type_ = v->type_;
    c->graph_ = g.get();
    c->payload_ = v->payload_;
    c->output_index_ = v->output_index_;
    vmap[v.get()] = c.get();
    g->values_by_name_[c->name_] = c.get();
    g->values_.push_back(std::move(c));
  }
  auto map_value = [&](const Value* v) -> Value* { return v ? vmap.at(v) : nullptr; };
  for (const auto& n : nodes_) {
    auto c = std::make_unique<Node>();
    c->op_ = n->op_;
    c->info_ = n->info_;
    c->name_ = n->name_;
    c->attrs_ = n->attrs_;
    c->loc_ = n->loc_;
    c->graph_ = g.get();
    for (const Value* v : n->inputs_) c->inputs_.push_back(map_value(v));
    for (const Value* v : n->outputs_) c->outputs_.push_back(map_value(v));
    nmap[n.get()] = c.get();
    g->nodes_.push_back(std::move(c));
  }
  for (const auto& v : values_) {
    Value* c = vmap.at(v.get());
    c->producer_ = v->producer_ ? nmap.at(v->producer_) : nullptr;
    for (const Use& u : v->uses_) c->uses_.push_back({nmap.at(u.node), u.operand});
  }
  for (const GraphInput& in : inputs_) {
    GraphInput c = in;
    c.value = vmap.at(in.value);
    g->inputs_.push_back(std::move(c));
  }
  for (const GraphOutput& o : outputs_) {
    GraphOutput c = o;
    c.value = vmap.at(o.value);
    g->outputs_.push_back(std::move(c));
  }
  return g;
}

void Graph::swap(Graph& other) noexcept {
  std::swap(symbols_, other.symbols_);
  std::swap(values_, other.values_);
  std::swap(nodes_, other.nodes_);
  std::swap(inputs_, other.inputs_);
  std::swap(outputs_, other.outputs_);
  std::swap(values_by_name_, other.values_by_name_);
  std::swap(name_counters_, other.name_counters_);
  std::swap(node_names_, other.node_names_);
  for (Graph* g : {this, &other}) {
    for (const auto& v : g->values_) v->graph_ = g;
    for (const auto& n : g->nodes_) n->graph_ = g;
  }
}

Value* Graph::new_value(std::string name, TensorType type) {
  if (name.empty() || values_by_name_.count(name)) name = unique_name(name);
  auto v = std::make_unique<Value>();
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  v->graph_ = this;
  Value* raw = v.get();
  values_by_name_[raw->name_] = raw;
  values_.push_back(std::move(v));
  return raw;
}

Value* Graph::add_input(std::string name, TensorType type, InputRole role, std::string target,
                        bool persistent) {
  Value* v = new_value(std::move(name), std::move(type));
  inputs_.push_back(GraphInput{v, role, std::move(target), persistent, std::nullopt});
  return v;
}

Node* Graph::append(std::string op, std::vector<Value*> inputs, std::vector<NamedAttr> attrs,
                    std::optional<std::vector<TensorType>> output_types,
                    std::vector<std::string> output_names, std::string node_name) {
  return create_node(nodes_.size(), std::move(op), std::move(inputs), std::move(attrs),
                     std::move(output_types), std::move(output_names), std::move(node_name));
}

Node* Graph::insert_before(const Node* pos, std::string op, std::vector<Value*> inputs,
                           std::vector<NamedAttr> attrs,
                           std::optional<std::vector<TensorType>> output_types,
                           std::vector<std::string> output_names, std::string node_name) {
  return create_node(position(pos), std::move(op), std::move(inputs), std::move(attrs),
                     std::move(output_types), std::move(output_names), std::move(node_name));
}

Node* Graph::create_node(size_t pos, std::string op, std::vector<Value*> inputs,
                         std::vector<NamedAttr> attrs,
                         std::optional<std::vector<TensorType>> output_types,
                         std::vector<std::string> output_names, std::string node_name) {
  const OpInfo* info = OpRegistry::global().find(op);
  if (!output_types) {
    if (!info) {
      throw Error("cannot infer the result types of unknown operator '" + op +
                  "': pass them explicitly");
    }
    std::vector<const TensorType*> in_types;
    in_types.reserve(inputs.size());
    for (Value* v : inputs) in_types.push_back(v ? &v->type() : nullptr);
    output_types = infer_types(*this, *info, in_types, attrs);
  }
  std::vector<TensorType>& types = *output_types;
  auto n = std::make_unique<Node>();
  n->op_ = std::move(op);
  n->info_ = info;
  n->graph_ = this;
  n->attrs_ = std::move(attrs);
  if (node_name.empty()) {
    if (!output_names.empty() && !output_names[0].empty()) {
      node_name = output_names[0];
    } else {
      // "aten.relu.default" -> "relu", as torch.export names nodes.
      const size_t b = n->op_.find('.'), e = n->op_.rfind('.');
      node_name = b != std::string::npos && e > b ? n->op_.substr(b + 1, e - b - 1) : n->op_;
    }
  }
  if (node_names_.count(node_name)) node_name = unique_name(node_name);
  n->name_ = node_name;
  node_names_[n->name_] = 1;
  Node* raw = n.get();
  raw->inputs_.resize(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) raw->set_input(i, inputs[i]);
  for (size_t i = 0; i < types.size(); ++i) {
    std::string vname = i < output_names.size() ? output_names[i] : "";
    if (vname.empty())
      vname = types.size() == 1 ? raw->name_ : raw->name_ + "_" + std::to_string(i);
    Value* v = new_value(std::move(vname), std::move(types[i]));
    v->producer_ = raw;
    v->output_index_ = i;
    raw->outputs_.push_back(v);
  }
  nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(pos), std::move(n));
  return raw;
}

void Graph::add_output(Value* v, OutputRole role, std::string target) {
  if (!v) throw Error("graph output is null");
  outputs_.push_back(GraphOutput{v, role, std::move(target)});
}

void Graph::set_output_value(size_t i, Value* v) {
  outputs_.at(i).value = v;
}

void Graph::erase(Node* n) {
  for (Value* out : n->outputs_) {
    if (out->has_uses() || is_graph_output(out)) {
      throw Error("cannot erase " + n->describe() + ": its result '" + out->name() +
                  "' is still used");
    }
  }
  for (size_t i = 0; i < n->inputs_.size(); ++i) n->set_input(i, nullptr);
  for (Value* out : n->outputs_) {
    values_by_name_.erase(out->name_);
    out->producer_ = nullptr;
  }
  node_names_.erase(n->name_);
  const size_t pos = position(n);
  std::vector<Value*> dead = n->outputs_;
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(pos));
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const std::unique_ptr<Value>& v) {
                                 return std::find(dead.begin(), dead.end(), v.get()) != dead.end();
                               }),
                values_.end());
}

size_t Graph::erase_unused_constant_inputs() {
  size_t removed = 0;
  for (size_t i = inputs_.size(); i-- > 0;) {
    const GraphInput& in = inputs_[i];
    if (in.role == InputRole::user_input || in.role == InputRole::state || in.value->has_uses() ||
        is_graph_output(in.value))
      continue;
    Value* v = in.value;
    values_by_name_.erase(v->name_);
    inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
    values_.erase(std::remove_if(values_.begin(), values_.end(),
                                 [&](const std::unique_ptr<Value>& p) { return p.get() == v; }),
                  values_.end());
    ++removed;
  }
  return removed;
}

void Graph::rename(Node* n, const std::string& node_name,
                   const std::vector<std::string>& value_names) {
  if (!node_name.empty() && node_name != n->name_ && !node_names_.count(node_name)) {
    node_names_.erase(n->name_);
    n->name_ = node_name;
    node_names_[node_name] = 1;
  }
  for (size_t i = 0; i < value_names.size() && i < n->outputs_.size(); ++i) {
    Value* v = n->outputs_[i];
    const std::string& want = value_names[i];
    if (want.empty() || want == v->name_ || values_by_name_.count(want)) continue;
    values_by_name_.erase(v->name_);
    v->name_ = want;
    values_by_name_[want] = v;
  }
}

Value* Graph::find_value(std::string_view name) const {
  auto it = values_by_name_.find(std::string(name));
  return it == values_by_name_.end() ? nullptr : it->second;
}

const Node* Graph::find_node(std::string_view name) const {
  for (const auto& n : nodes_) {
    if (n->name() == name) return n.get();
  }
  return nullptr;
}

bool Graph::is_graph_output(const Value* v) const {
  return std::any_of(outputs_.begin(), outputs_.end(),
                     [&](const GraphOutput& o) { return o.value == v; });
}

size_t Graph::position(const Node* n) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].get() == n) return i;
  }
  throw Error("node is not in this graph");
}

}  // namespace neuronc::ir
