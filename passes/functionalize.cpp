// Functionalize (see the header for the algorithm).
#include "passes/functionalize.h"

#include <map>
#include <numeric>
#include <set>

#include "ir/op_registry.h"
#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

using ir::Node;
using ir::Value;

// How a view's result relates to its input, for replaying it and for writing through it.
enum class ViewKind { none, identity, slice, select, reshape, permute, split, unbind, opaque };

bool is_reshape(const std::string& op) {
  return op == "aten.view.default" || op == "aten.reshape.default" ||
         op == "aten._unsafe_view.default" || op == "aten.flatten.using_ints" ||
         op == "aten.unflatten.int" || op == "aten.squeeze.dim" || op == "aten.squeeze.dims" ||
         op == "aten.squeeze.default" || op == "aten.unsqueeze.default";
}

ViewKind view_kind(const Node& n) {
  const std::string& op = n.op();
  if (op == "aten.slice.Tensor" || op == "aten.narrow.default") return ViewKind::slice;
  if (op == "aten.select.int") return ViewKind::select;
  if (is_reshape(op)) return ViewKind::reshape;
  if (op == "aten.permute.default" || op == "aten.transpose.int" || op == "aten.t.default")
    return ViewKind::permute;
  if (op == "aten.split.Tensor" || op == "aten.split_with_sizes.default" ||
      op == "aten.chunk.default" || op == "aten.tensor_split.indices" ||
      op == "aten.tensor_split.sections")
    return ViewKind::split;
  if (op == "aten.unbind.int") return ViewKind::unbind;
  if (op == "aten.alias.default" || op == "aten.detach.default" || op == "aten.detach_.default" ||
      op == "aten.contiguous.default")
    return ViewKind::identity;
  // `to` returns self when nothing changes, else a copy; _to_copy and lift_fresh_copy always
  // copy.
  if (op == "aten.to.dtype" || op == "aten.to.dtype_layout" || op == "aten.to.device" ||
      op == "aten.type_as.default") {
    const bool same = !n.inputs().empty() && n.output()->dtype() == n.input(0)->dtype() &&
                      !(n.attr("copy") && n.attr_bool("copy"));
    return same ? ViewKind::identity : ViewKind::none;
  }
  // Any other op whose schema returns an alias of its input (expand, as_strided, diagonal,
  // unfold, view_as_real, ...): readable, but a write through it cannot be inverted here.
  if (n.info() && !n.info()->inplace && n.info()->schema.find("-> Tensor(a") != std::string::npos)
    return ViewKind::opaque;
  return ViewKind::none;
}

// Ops that carry a write annotation but write nothing a later reader sees.
bool writes_nothing(const std::string& op) {
  return op == "aten.detach_.default" || op == "aten.dropout_.default";
}

int64_t normalized_dim(const Node& n, const char* attr, int64_t rank) {
  int64_t d = n.attr_int(attr);
  if (d < 0) d += rank;
  if (d < 0 || d >= rank) {
    throw ir::Error(n.describe() + ": " + attr + " " + std::to_string(n.attr_int(attr)) +
                    " is out of range for rank " + std::to_string(rank));
  }
  return d;
}

int64_t constant_dim(const Node& n, const ir::Shape& s, int64_t d, const char* what) {
  const ir::Dim& dim = s.at(static_cast<size_t>(d));
  if (!dim.is_constant()) {
    throw ir::Error(n.describe() + ": an in-place write through it needs a static " + what +
                    ", found a symbolic size");
  }
  return dim.value();
}

class Functionalizer {
 public:
  explicit Functionalizer(ir::Graph& g) : g_(g) {}

  bool run() {
    for (Node* n : node_snapshot(g_)) visit(n);
    finish_outputs();
    return changed_;
  }

 private:
  struct View {
    Value* parent = nullptr;
    Node* node = nullptr;  // the view op, kept in the graph (replayed by copying it)
    size_t output = 0;
  };
  struct Fresh {
    int version = 0;
    Value* value = nullptr;
  };

  void visit(Node* n) {
    const std::vector<Value*> original = n->inputs();
    for (size_t i = 0; i < original.size(); ++i) {
      if (!original[i]) continue;
      if (Value* f = read(original[i], n); f != original[i]) {
        n->set_input(i, f);
        changed_ = true;
      }
    }
    if (n->info() && n->info()->inplace && !writes_nothing(n->op())) {
      write(n, original.at(0));
      return;
    }
    if (train_batch_norm(n, original)) return;
    if (original.empty() || !original[0]) return;
    if (view_kind(*n) == ViewKind::none) return;
    for (size_t j = 0; j < n->outputs().size(); ++j) {
      views_[n->output(j)] = {original[0], n, j};
      created_[n->output(j)] = version(root_of(original[0]));
    }
  }

  Value* root_of(Value* v) const {
    for (auto it = views_.find(v); it != views_.end(); it = views_.find(v)) v = it->second.parent;
    return v;
  }

  int version(Value* root) const {
    auto it = versions_.find(root);
    return it == versions_.end() ? 0 : it->second;
  }

  // `v` as a reader at `pos` (null: the graph's end) must see it: itself if its root has not
  // been written since `v` was made, else its view chain replayed on the root's content.
  Value* read(Value* v, Node* pos) {
    Value* root = root_of(v);
    const int ver = version(root);
    auto c = created_.find(v);
    if (ver == (c == created_.end() ? 0 : c->second)) return v;
    if (auto f = fresh_.find(v); f != fresh_.end() && f->second.version == ver)
      return f->second.value;
    Value* out = current_.at(root);
    if (auto it = views_.find(v); it != views_.end()) {
      const View& s = it->second;
      Value* parent = read(s.parent, pos);
      std::vector<Value*> in = s.node->inputs();
      in[0] = parent;
      out = emit(pos, s.node->op(), in, s.node->attrs())->output(s.output);
    }
    fresh_[v] = {ver, out};
    return out;
  }

  Node* emit(Node* pos, std::string op, std::vector<Value*> in, std::vector<ir::NamedAttr> attrs) {
    Node* n = pos ? g_.insert_before(pos, std::move(op), std::move(in), std::move(attrs))
                  : g_.append(std::move(op), std::move(in), std::move(attrs));
    if (pos) n->set_location(pos->location());
    return n;
  }

  // The functional form of in-place `n` (inputs already read), cast to self's dtype.
  Value* functional(Node* n) {
    const std::string& op = n->op();
    Value* self = n->input(0);
    Node* f = nullptr;
    if (op == "aten.copy_.default" || op == "aten.fill_.Tensor") {
      f = emit(n, "aten.copy.default", {self, n->input(1)}, {});
    } else if (op == "aten.zero_.default") {
      f = emit(n, "aten.fill.Scalar", {self}, {{"value", int64_t{0}}});
    } else {
      std::string name = op;
      const size_t p = name.rfind("_.");
      if (p == std::string::npos || !ir::OpRegistry::global().find(name.erase(p, 1))) {
        throw ir::Error(n->describe() + ": expected an in-place op with a functional form, found " +
                        "none for " + op);
      }
      f = emit(n, name, n->inputs(), n->attrs());
    }
    Value* r = f->output();
    if (r->dtype() != self->dtype())
      r = emit(n, "aten._to_copy.default", {r}, {{"dtype", self->dtype()}})->output();
    if (!(r->shape() == self->shape())) {
      throw ir::Error(n->describe() + ": the in-place result " + g_.shape_to_string(r->shape()) +
                      " differs from self " + g_.shape_to_string(self->shape()));
    }
    return r;
  }

  void write(Node* n, Value* self) {
    // An operator outside the registry may return a view of its input: a write through its
    // result might have to reach that input, and nothing here knows how.
    for (Value* v = self;;) {
      const Node* p = v->producer();
      if (p && !p->info())
        throw ir::Error(n->describe() + " writes in place into the result of " + p->describe() +
                        ", an operator neuronc does not know: expected a known operator, whose "
                        "aliasing (view or copy) is known");
      auto it = views_.find(v);
      if (it == views_.end()) break;
      v = it->second.parent;
    }
    const std::string name = n->output()->name();
    const std::string node_name = n->name();
    Value* r = functional(n);
    assign(self, r, n);
    n->output()->replace_all_uses_with(self);  // its result is self: later reads go through read()
    g_.erase(n);
    if (Node* p = r->producer()) g_.rename(p, node_name, {name});
  }

  // Gives `self` (a root or a view) the value `r` before `pos`: r is scattered up self's view
  // chain into its root, whose version moves on.
  void assign(Value* self, Value* r, Node* pos) {
    Value* root = root_of(self);
    Value* content = r;
    for (Value* v = self; views_.count(v); v = views_.at(v).parent)
      content = write_through(views_.at(v), read(views_.at(v).parent, pos), content, pos);
    if (!written_.count(root)) order_.push_back(root);
    written_.insert(root);
    current_[root] = content;
    fresh_[self] = {++versions_[root], r};
    changed_ = true;
  }

  // Train-mode batch_norm updates its running statistics in place (they are not its first
  // argument): it becomes _native_batch_norm_legit_functional, whose last two results are the
  // new statistics.
  bool train_batch_norm(Node* n, const std::vector<Value*>& original) {
    if (n->op() != "aten.batch_norm.default" || !n->attr_bool("training") || !original.at(3) ||
        !original.at(4))
      return false;
    const std::vector<Value*> in(n->inputs().begin(), n->inputs().begin() + 5);
    Node* f = emit(n, "aten._native_batch_norm_legit_functional.default", in,
                   {{"training", true},
                    {"momentum", n->attr_float("momentum")},
                    {"eps", n->attr_float("eps")}});
    assign(original[3], f->output(3), n);
    assign(original[4], f->output(4), n);
    const std::string name = n->output()->name();
    const std::string node_name = n->name();
    n->output()->replace_all_uses_with(f->output(0));
    g_.erase(n);
    g_.rename(f, node_name, {name});
    return true;
  }

  // The parent's content after writing `value` into the view `s` of `base` (the parent's
  // content before the write).
  Value* write_through(const View& s, Value* base, Value* value, Node* pos) {
    const Node& v = *s.node;
    const int64_t rank = base->type().rank();
    switch (view_kind(v)) {
      case ViewKind::identity:
        return value;
      case ViewKind::slice:
        return emit(pos, "aten.slice_scatter.default", {base, value},
                    v.op() == "aten.narrow.default" ? narrow_as_slice(v) : v.attrs())
            ->output();
      case ViewKind::select: {
        const int64_t d = normalized_dim(v, "dim", rank);
        int64_t i = v.attr_int("index");
        if (i < 0) i += constant_dim(v, base->shape(), d, "selected dim");
        return scatter_row(base, value, d, i, pos);
      }
      case ViewKind::unbind:
        return scatter_row(base, value, normalized_dim(v, "dim", rank),
                           static_cast<int64_t>(s.output), pos);
      case ViewKind::split: {
        const int64_t d = normalized_dim(v, "dim", rank);
        int64_t start = 0;
        if (v.op() == "aten.tensor_split.indices" || v.op() == "aten.tensor_split.sections") {
          // Parts may overlap or be empty: each starts where its slice does.
          const int64_t n = constant_dim(v, v.input(0)->shape(), d, "split dim");
          const std::vector<int64_t> points =
              v.op() == "aten.tensor_split.sections"
                  ? ir::tensor_split_section_points(n, v.attr_int("sections"))
                  : v.attr_ints("indices");
          start = ir::tensor_split_ranges(n, points)[s.output].first;
        } else {
          for (size_t j = 0; j < s.output; ++j)
            start += constant_dim(v, v.output(j)->shape(), d, "split dim");
        }
        const int64_t len = constant_dim(v, v.output(s.output)->shape(), d, "split dim");
        return emit(pos, "aten.slice_scatter.default", {base, value},
                    {{"dim", d}, {"start", start}, {"end", start + len}})
            ->output();
      }
      case ViewKind::reshape:
        return emit(pos, "aten.view.default", {value}, {{"size", shape_attr(base->shape())}})
            ->output();
      case ViewKind::permute:
        return emit(pos, "aten.permute.default", {value}, {{"dims", inverse_permutation(v, rank)}})
            ->output();
      case ViewKind::none:
      case ViewKind::opaque:
        break;
    }
    throw ir::Error(pos->describe() + " writes in place through " + v.describe() +
                    ": expected a write through slice, select, view/reshape, permute/transpose, "
                    "split or unbind, whose effect on the base is known, found " +
                    v.op());
  }

  Value* scatter_row(Value* base, Value* value, int64_t d, int64_t i, Node* pos) {
    Value* u = emit(pos, "aten.unsqueeze.default", {value}, {{"dim", d}})->output();
    return emit(pos, "aten.slice_scatter.default", {base, u},
                {{"dim", d}, {"start", i}, {"end", i + 1}})
        ->output();
  }

  // The permutation that undoes permute / transpose / t `v` on a rank-`rank` input.
  static std::vector<int64_t> inverse_permutation(const Node& v, int64_t rank) {
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    if (v.op() == "aten.permute.default") {
      perm = v.attr_ints("dims");
      for (int64_t& d : perm)
        if (d < 0) d += rank;
    } else if (rank >= 2) {
      const bool t = v.op() == "aten.t.default";
      const int64_t a = t ? rank - 2 : normalized_dim(v, "dim0", rank);
      const int64_t b = t ? rank - 1 : normalized_dim(v, "dim1", rank);
      std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
    }
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = int64_t(i);
    return inv;
  }

  // Outputs read the final versions; a written input with no output recording it gets one.
  void finish_outputs() {
    std::set<std::string> recorded;
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      const ir::GraphOutput& o = g_.outputs()[i];
      // A mutation output records its whole root's final content.
      Value* v = o.value;
      if (o.role != ir::OutputRole::user_output) {
        recorded.insert(o.target);
        if (written_.count(root_of(v))) v = root_of(v);
      }
      if (Value* f = read(v, nullptr); f != o.value) {
        g_.set_output_value(i, f);
        changed_ = true;
      }
    }
    for (Value* root : order_) {
      const ir::GraphInput* in = graph_input(root);
      if (!in || in->role == ir::InputRole::constant) continue;
      const bool user = in->role == ir::InputRole::user_input;
      const std::string target = user ? root->name() : in->target;
      if (recorded.count(target)) continue;
      g_.add_output(read(root, nullptr),
                    user ? ir::OutputRole::user_input_mutation : ir::OutputRole::buffer_mutation,
                    target);
    }
  }

  const ir::GraphInput* graph_input(const Value* v) const {
    for (const ir::GraphInput& in : g_.inputs())
      if (in.value == v) return &in;
    return nullptr;
  }

  ir::Graph& g_;
  std::map<Value*, View> views_;
  std::map<Value*, int> created_;   // the root's version when a view was made
  std::map<Value*, int> versions_;  // writes to each root so far
  std::map<Value*, Value*> current_;
  std::map<Value*, Fresh> fresh_;
  std::set<Value*> written_;
  std::vector<Value*> order_;  // written roots, in the order of their first write
  bool changed_ = false;
};

}  // namespace

bool Functionalize::run(ir::Graph& g) {
  return Functionalizer(g).run();
}

}  // namespace neuronc::passes
