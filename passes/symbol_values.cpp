// Symbol values (see the header).
#include "passes/symbol_values.h"

#include <map>
#include <vector>

#include "ir/op_registry.h"
#include "ir/symbol_value.h"
#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

// "aten.mul.Scalar" -> "aten.mul".
std::string without_overload(const std::string& op) {
  const size_t e = op.rfind('.');
  return e == std::string::npos ? op : op.substr(0, e);
}

class Rewriter {
 public:
  Rewriter(ir::Graph& g, std::set<ir::SymbolId> open) : g_(g), open_(std::move(open)) {}

  bool run() {
    bool changed = false;
    for (ir::Node* n : node_snapshot(g_)) {
      if (!n->info() || n->outputs().size() != 1) continue;
      if (without_overload(n->op()) == "aten.mean" && mean(n)) {
        changed = true;
        continue;
      }
      std::set<std::string> reads;
      for (const ir::NamedAttr& a : n->attrs()) {
        const int k = n->info()->arg_index(a.name);
        if (k >= 0 && n->info()->args[static_cast<size_t>(k)].extent) continue;
        if (const auto* d = std::get_if<ir::Dim>(&a.value); d && open(*d)) reads.insert(a.name);
      }
      if (reads.empty()) continue;
      changed |= factory(n, reads) || switch_overload(n, reads);
    }
    return changed;
  }

 private:
  // Whether `d` is symbolic in some open symbol, and in open symbols only.
  bool open(const ir::Dim& d) const {
    if (!d.is_symbolic()) return false;
    const ir::Monomial m = g_.expand(ir::Monomial::of(d));
    for (ir::SymbolId s : m.symbols)
      if (!open_.count(s)) return false;
    return !m.symbols.empty();
  }

  ir::Value* add(ir::Node* at, std::string op, std::vector<ir::Value*> in,
                 std::vector<ir::NamedAttr> attrs = {}) {
    ir::Node* m = g_.insert_before(at, std::move(op), std::move(in), std::move(attrs));
    m->set_location(at->location());
    return m->output();
  }

  // `v` as `dt`.
  ir::Value* cast(ir::Value* v, ir::DType dt, ir::Node* at) {
    return v->dtype() == dt ? v : add(at, "aten._to_copy.default", {v}, {{"dtype", dt}});
  }

  static ir::DType value_dtype(bool floating) { return floating ? ir::DType::f32 : ir::DType::i64; }

  // Moves n's uses to `v` (a result of nodes made before it), erases n and gives v's node n's
  // names.
  void finish(ir::Node* n, ir::Value* v) {
    const std::string node_name = n->name(), value_name = n->output()->name();
    n->output()->replace_all_uses_with(v);
    g_.erase(n);
    if (ir::Node* p = v->producer()) g_.rename(p, node_name, {value_name});
  }

  // full(size, s), new_full(self, size, s), full_like(self, s), scalar_tensor(s): the symbol
  // value cast to the result's dtype, broadcast to its shape and copied (a fresh tensor a later
  // in-place write may change, as the factory's result is).
  bool factory(ir::Node* n, const std::set<std::string>& reads) {
    const std::string base = without_overload(n->op());
    const char* fill = base == "aten.scalar_tensor" ? "s" : "fill_value";
    if (base != "aten.full" && base != "aten.new_full" && base != "aten.full_like" &&
        base != "aten.scalar_tensor")
      return false;
    if (reads.size() != 1 || !reads.count(fill)) return false;
    const ir::TensorType& out = n->output()->type();
    if (ir::is_complex(out.dtype)) return false;
    const ir::Dim d = std::get<ir::Dim>(*n->attr(fill));
    ir::Value* v =
        cast(ir::symbol_value(g_, d, value_dtype(ir::is_floating(out.dtype)), n), out.dtype, n);
    if (!out.shape.empty())
      v = add(n, "aten.expand.default", {v}, {{"size", shape_attr(out.shape)}});
    v = add(n, "aten.clone.default", {v});
    finish(n, v);
    return true;
  }

  // The overload of n's op that takes each argument in `reads` as a Tensor and every other
  // argument as n's does (mul.Scalar -> mul.Tensor), or null.
  const ir::OpInfo* tensor_overload(const ir::OpInfo& info, const std::set<std::string>& reads) {
    const std::string prefix = without_overload(info.name) + ".";
    if (all_.empty()) all_ = ir::OpRegistry::global().all();
    for (const ir::OpInfo* o : all_) {
      if (o == &info || !o->name.starts_with(prefix) ||
          o->name.find('.', prefix.size()) != std::string::npos ||
          o->args.size() != info.args.size() || o->placement != info.placement)
        continue;
      bool same = true;
      for (size_t i = 0; i < o->args.size() && same; ++i) {
        const ir::ArgSpec& a = info.args[i];
        const ir::ArgSpec& b = o->args[i];
        same = a.name == b.name && (reads.count(a.name) ? b.type == ir::ArgType::tensor ||
                                                              b.type == ir::ArgType::opt_tensor
                                                        : a.type == b.type);
      }
      if (same) return o;
    }
    return nullptr;
  }

  bool switch_overload(ir::Node* n, const std::set<std::string>& reads) {
    const ir::OpInfo& info = *n->info();
    for (const ir::ArgSpec& a : info.args)
      if (a.type == ir::ArgType::tensor_list || a.type == ir::ArgType::opt_tensor_list)
        return false;
    const ir::OpInfo* alt = tensor_overload(info, reads);
    if (!alt) return false;
    // n's tensor operands by argument name.
    std::map<std::string, ir::Value*> operand;
    size_t k = 0;
    bool floating = false;
    for (const ir::ArgSpec& a : info.args) {
      if (!a.is_tensor()) continue;
      if (k < n->inputs().size()) {
        operand[a.name] = n->input(k);
        floating |= n->input(k) && ir::is_floating(n->input(k)->dtype());
      }
      ++k;
    }
    std::vector<ir::Value*> in;
    for (const ir::ArgSpec& a : alt->args) {
      if (!a.is_tensor()) continue;
      if (reads.count(a.name))
        in.push_back(
            ir::symbol_value(g_, std::get<ir::Dim>(*n->attr(a.name)), value_dtype(floating), n));
      else
        in.push_back(operand.count(a.name) ? operand[a.name] : nullptr);
    }
    std::vector<ir::NamedAttr> attrs;
    for (const ir::NamedAttr& a : n->attrs())
      if (!reads.count(a.name)) attrs.push_back(a);
    ir::Node* m = g_.insert_before(n, alt->name, std::move(in), std::move(attrs));
    m->set_location(n->location());
    if (!(m->output()->type() == n->output()->type())) {
      // Another result type (a promotion the tensor overload makes differently): keep n, which
      // the padding analysis then refuses to pad.
      g_.erase(m);
      return false;
    }
    finish(n, m->output());
    return true;
  }

  // mean(x, dims) over a dim of an open symbol: sum(x, dims) / count, the count from the run.
  bool mean(ir::Node* n) {
    const ir::Value* x = n->input(0);
    const size_t rank = x->shape().size();
    std::vector<int64_t> dims;
    if (n->attr("dim") && !n->attr_is_none("dim")) dims = n->attr_ints("dim");
    if (dims.empty())
      for (size_t i = 0; i < rank; ++i) dims.push_back(static_cast<int64_t>(i));
    ir::Monomial count;
    bool any_open = false;
    for (int64_t d : dims) {
      const int64_t w = d < 0 ? d + static_cast<int64_t>(rank) : d;
      if (w < 0 || w >= static_cast<int64_t>(rank)) return false;
      const ir::Dim& e = x->shape()[static_cast<size_t>(w)];
      if (e.is_symbolic() && !open(e)) return false;
      any_open |= open(e);
      count *= e;
    }
    if (!any_open || count.coeff == INT64_MAX || !ir::is_floating(n->output()->dtype()))
      return false;
    std::vector<ir::NamedAttr> attrs;
    attrs.push_back({"dim", dims});
    attrs.push_back({"keepdim", n->attr("keepdim") ? n->attr_bool("keepdim") : false});
    if (const ir::Attribute* dt = n->attr("dtype")) attrs.push_back({"dtype", *dt});
    ir::Value* sum = add(n, "aten.sum.dim_IntList", {n->input(0)}, std::move(attrs));
    ir::Value* c = ir::symbol_value(g_, g_.dim_of(count), ir::DType::f32, n);
    ir::Value* v = add(n, "aten.div.Tensor", {sum, c});
    if (!(v->type() == n->output()->type())) {
      // Leave the mean (refused by the padding analysis) and drop what was made for it.
      for (ir::Value* dead : {v, sum})
        if (ir::Node* p = dead->producer(); p && !dead->has_uses()) g_.erase(p);
      return false;
    }
    finish(n, v);
    return true;
  }

  ir::Graph& g_;
  std::set<ir::SymbolId> open_;
  std::vector<const ir::OpInfo*> all_;
};

}  // namespace

bool SymbolValues::run(ir::Graph& g) {
  std::set<ir::SymbolId> open;
  for (const std::string& name : symbols_)
    if (auto id = g.find_symbol(name); id && !g.symbol(*id).is_product()) open.insert(*id);
  if (open.empty()) return false;
  const bool changed = Rewriter(g, std::move(open)).run();
  if (changed) g.erase_unused_constant_inputs();
  return changed;
}

}  // namespace neuronc::passes
