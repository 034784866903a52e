// Canonicalize (see the header for the rules).
#include "passes/canonicalize.h"

#include <map>
#include <numeric>

#include "ir/op_registry.h"
#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

using ir::Node;
using ir::Value;

// PyTorch's alias spellings of arithmetic (torch.multiply, torch.subtract, torch.divide,
// torch.true_divide): the same schema under another name.
const std::string* alias_of(const std::string& op) {
  static const std::map<std::string, std::string> m = {
      {"aten.multiply.Tensor", "aten.mul.Tensor"},
      {"aten.multiply.Scalar", "aten.mul.Scalar"},
      {"aten.subtract.Tensor", "aten.sub.Tensor"},
      {"aten.subtract.Scalar", "aten.sub.Scalar"},
      {"aten.divide.Tensor", "aten.div.Tensor"},
      {"aten.divide.Scalar", "aten.div.Scalar"},
      {"aten.true_divide.Tensor", "aten.div.Tensor"},
      {"aten.true_divide.Scalar", "aten.div.Scalar"},
  };
  auto it = m.find(op);
  return it == m.end() ? nullptr : &it->second;
}

bool is_identity_op(const std::string& op) {
  return op == "aten.alias.default" || op == "aten.detach.default" ||
         op == "aten.detach_.default" || op == "aten.clone.default" ||
         op == "aten.contiguous.default" || op == "aten.lift_fresh_copy.default";
}

bool is_reshape_op(const std::string& op) {
  return op == "aten.reshape.default" || op == "aten._unsafe_view.default" ||
         op == "aten.flatten.using_ints" || op == "aten.unflatten.int" ||
         op == "aten.squeeze.dim" || op == "aten.squeeze.dims" || op == "aten.squeeze.default" ||
         op == "aten.unsqueeze.default";
}

bool is_conversion_op(const std::string& op) {
  return op == "aten.to.dtype" || op == "aten.to.dtype_layout" || op == "aten.to.device" ||
         op == "aten.type_as.default" || op == "aten._to_copy.default";
}

class Canonicalizer {
 public:
  explicit Canonicalizer(ir::Graph& g) : g_(g) {}

  bool run() {
    for (Node* n : node_snapshot(g_)) changed_ |= visit(n);
    return changed_;
  }

 private:
  bool visit(Node* n) {
    const std::string op = n->op();
    if (const std::string* to = alias_of(op)) {
      replace_node(g_, n, *to, n->inputs(), n->attrs());
      return true;
    }
    if (op == "aten.swapaxes.default" || op == "aten.swapdims.default") {  // transpose
      const char* a = op == "aten.swapaxes.default" ? "axis0" : "dim0";
      const char* b = op == "aten.swapaxes.default" ? "axis1" : "dim1";
      return to_permute(replace_node(g_, n, "aten.transpose.int", {n->input(0)},
                                     {{"dim0", n->attr_int(a)}, {"dim1", n->attr_int(b)}}));
    }
    if (op == "aten.reshape_as.default" || op == "aten.view_as.default" ||
        op == "aten.expand_as.default") {  // the other tensor only gives the shape
      const bool expand = op == "aten.expand_as.default";
      Node* r = replace_node(g_, n, expand ? "aten.expand.default" : "aten.view.default",
                             {n->input(0)}, {{"size", shape_attr(n->input(1)->shape())}});
      if (!expand) reshape(r);
      return true;
    }
    if (op == "aten.floor_divide.default" || op == "aten.floor_divide.Scalar") {
      // torch's //: division rounded toward -inf (a Python number divisor is an attribute)
      const bool scalar = n->inputs().size() < 2 || !n->input(1);
      std::vector<ir::NamedAttr> attrs = {{"rounding_mode", std::string("floor")}};
      if (scalar) {
        if (!n->attr("other")) throw ir::Error(n->describe() + ": expected a divisor, found none");
        attrs.insert(attrs.begin(), {"other", *n->attr("other")});
      }
      const std::vector<Value*> in = scalar ? std::vector<Value*>{n->input(0)} : n->inputs();
      replace_node(g_, n, scalar ? "aten.div.Scalar_mode" : "aten.div.Tensor_mode", in, attrs);
      return true;
    }
    if (is_identity_op(op)) {
      forward_to(g_, n, n->input(0));
      return true;
    }
    if (op == "aten.dropout.default" || op == "aten.dropout_.default") {
      forward_to(g_, n, n->input(0));  // shape rule refuses training-mode dropout
      return true;
    }
    if (op == "aten._assert_tensor_metadata.default") {
      g_.erase(n);  // its shape rule has checked the assertion against the static types
      return true;
    }
    if (is_conversion_op(op)) return conversion(n);
    if (is_reshape_op(op) || op == "aten.view.default") return reshape(n);
    if (op == "aten.expand.default" && n->output()->type() == n->input(0)->type()) {
      forward_to(g_, n, n->input(0));
      return true;
    }
    if (op == "aten.narrow.default") {
      replace_node(g_, n, "aten.slice.Tensor", {n->input(0)}, narrow_as_slice(*n));
      return true;
    }
    if (op == "aten.t.default" || op == "aten.transpose.int") return to_permute(n);
    if (op == "aten.movedim.int") return movedim(n);
    if (op == "aten.numpy_T.default") {
      std::vector<int64_t> perm(n->input(0)->shape().size());
      std::iota(perm.rbegin(), perm.rend(), 0);
      permute(replace_node(g_, n, "aten.permute.default", {n->input(0)}, {{"dims", perm}}));
      return true;
    }
    if (op == "aten.scaled_dot_product_attention.default") return broadcast_key_value(n);
    if (op == "aten.permute.default") return permute(n);
    if (op == "aten.softmax.int" || op == "aten.log_softmax.int") return softmax(n);
    if (op == "aten.native_layer_norm.default") return native_layer_norm(n);
    if (op == "aten._native_batch_norm_legit_no_training.default") return native_batch_norm(n);
    return false;
  }

  bool conversion(Node* n) {
    Value* x = n->input(0);
    const ir::DType to = n->output()->dtype();
    if (to == x->dtype()) {
      forward_to(g_, n, x);
      return true;
    }
    if (n->op() == "aten._to_copy.default" && n->attrs().size() == 1 &&
        n->attrs()[0].name == "dtype")
      return false;  // already canonical
    replace_node(g_, n, "aten._to_copy.default", {x}, {{"dtype", to}});
    return true;
  }

  bool reshape(Node* n) {
    Value* x = n->input(0);
    const ir::Shape& out = n->output()->shape();
    if (out == x->shape()) {
      forward_to(g_, n, x);
      return true;
    }
    // A view of a view is a view of the first one's input (row-major order either way).
    if (Node* p = x->producer(); p && p->op() == "aten.view.default") {
      reshape(replace_node(g_, n, "aten.view.default", {p->input(0)}, {{"size", shape_attr(out)}}));
      return true;
    }
    // A view that keeps the last dim moves into the linear producing its input, read only
    // here: linear(view(a)) computes the same rows, and the linear's result then has the shape
    // its consumers read, so a residual add after it fuses into its kernel (ViT's attention
    // output: linear -> view [S, 1, D] -> transpose(0, 1) -> add).
    if (Node* p = x->producer(); p && p->op() == "aten.linear.default" && x->uses().size() == 1 &&
                                 !g_.is_graph_output(x) && !out.empty() &&
                                 out.back() == x->shape().back()) {
      Value* a = p->input(0);
      ir::Shape a_shape(out.begin(), out.end() - 1);
      a_shape.push_back(a->shape().back());
      if (Node* av = a->producer(); av && av->op() == "aten.view.default") a = av->input(0);
      Value* va = a->shape() == a_shape ? a
                                        : g_.insert_before(n, "aten.view.default", {a},
                                                           {{"size", shape_attr(a_shape)}})
                                              ->output();
      std::vector<Value*> in = p->inputs();
      in[0] = va;
      Node* l = replace_node(g_, n, "aten.linear.default", in, p->attrs());
      l->set_location(p->location());
      g_.erase(p);
      return true;
    }
    if (n->op() == "aten.view.default") {
      // Canonical form: the size attribute is exactly the result shape (no -1).
      const ir::Attribute want = shape_attr(out);
      if (n->attr("size") && *n->attr("size") == want) return false;
      n->set_attr("size", want);
      return true;
    }
    replace_node(g_, n, "aten.view.default", {x}, {{"size", shape_attr(out)}});
    return true;
  }

  bool to_permute(Node* n) {
    Value* x = n->input(0);
    const int64_t rank = x->type().rank();
    if (rank < 2) {
      forward_to(g_, n, x);
      return true;
    }
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    int64_t a = rank - 2, b = rank - 1;
    if (n->op() == "aten.transpose.int") {
      a = n->attr_int("dim0");
      b = n->attr_int("dim1");
      if (a < 0) a += rank;
      if (b < 0) b += rank;
    }
    if (a == b) {
      forward_to(g_, n, x);
      return true;
    }
    std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
    permute(replace_node(g_, n, "aten.permute.default", {x}, {{"dims", perm}}));
    return true;
  }

  bool movedim(Node* n) {
    Value* x = n->input(0);
    const int64_t rank = static_cast<int64_t>(x->shape().size());
    if (rank == 0) {
      forward_to(g_, n, x);
      return true;
    }
    int64_t from = n->attr_int("source"), to = n->attr_int("destination");
    if (from < 0) from += rank;
    if (to < 0) to += rank;
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != from) perm.push_back(i);
    }
    perm.insert(perm.begin() + to, from);
    permute(replace_node(g_, n, "aten.permute.default", {x}, {{"dims", perm}}));
    return true;
  }

  // PyTorch's attention broadcasts the batch dims of key and value against the query's (Falcon's
  // multi-query attention passes one key head for all query heads). The kernels take equal batch
  // dims, or GQA's head groups: a size-1 dim that is neither is expanded here.
  bool broadcast_key_value(Node* n) {
    const ir::Shape& q = n->input(0)->shape();
    bool changed = false;
    for (size_t k = 1; k <= 2; ++k) {
      Value* x = n->input(k);
      const ir::Shape& s = x->shape();
      if (s.size() != q.size() || q.size() < 3) continue;
      ir::Shape want = s;
      const bool gqa = n->attr_bool("enable_gqa");
      for (size_t i = 0; i + 2 < q.size(); ++i) {
        const bool group = gqa && i == 1 && q.size() == 4;
        if (s[i] == ir::Dim::constant(1) && !(q[i] == s[i]) && !group) want[i] = q[i];
      }
      if (want == s) continue;
      Node* e = g_.insert_before(n, "aten.expand.default", {x}, {{"size", shape_attr(want)}});
      n->set_input(k, e->output());
      changed = true;
    }
    return changed;
  }

  // A permute that moves only size-1 dims keeps the row-major order: a view.
  bool permute(Node* n) {
    Value* x = n->input(0);
    const ir::Shape& in = x->shape();
    std::vector<int64_t> perm = n->attr_ints("dims");
    int64_t last = -1;
    for (int64_t d : perm) {
      if (d < 0) d += static_cast<int64_t>(in.size());
      if (d < 0 || d >= static_cast<int64_t>(in.size())) return false;
      if (in[static_cast<size_t>(d)] == ir::Dim::constant(1)) continue;
      if (d < last) return false;
      last = d;
    }
    reshape(replace_node(g_, n, "aten.view.default", {x},
                         {{"size", shape_attr(n->output()->shape())}}));
    return true;
  }

  bool softmax(Node* n) {
    Value* x = n->input(0);
    if (n->output()->dtype() != x->dtype()) return false;  // dtype= upcast: keep as written
    const bool log = n->op() == "aten.log_softmax.int";
    replace_node(g_, n, log ? "aten._log_softmax.default" : "aten._softmax.default", {x},
                 {{"dim", n->attr_int("dim")}, {"half_to_float", false}});
    return true;
  }

  bool native_layer_norm(Node* n) {
    if (n->output(1)->has_uses() || n->output(2)->has_uses() || g_.is_graph_output(n->output(1)) ||
        g_.is_graph_output(n->output(2)))
      return false;
    std::vector<Value*> in = n->inputs();
    ir::Node* ln = g_.insert_before(
        n, "aten.layer_norm.default", in,
        {{"normalized_shape", *n->attr("normalized_shape")}, {"eps", n->attr_float("eps")}});
    const std::string name = n->output(0)->name();
    n->output(0)->replace_all_uses_with(ln->output());
    ln->set_location(n->location());
    const std::string node_name = n->name();
    g_.erase(n);
    g_.rename(ln, node_name, {name});
    return true;
  }

  bool native_batch_norm(Node* n) {
    if (n->output(1)->has_uses() || n->output(2)->has_uses() || g_.is_graph_output(n->output(1)) ||
        g_.is_graph_output(n->output(2)))
      return false;
    std::vector<Value*> in = n->inputs();
    ir::Node* bn = g_.insert_before(n, "aten.batch_norm.default", in,
                                    {{"training", false},
                                     {"momentum", n->attr_float("momentum")},
                                     {"eps", n->attr_float("eps")},
                                     {"cudnn_enabled", false}});
    const std::string name = n->output(0)->name();
    n->output(0)->replace_all_uses_with(bn->output());
    bn->set_location(n->location());
    const std::string node_name = n->name();
    g_.erase(n);
    g_.rename(bn, node_name, {name});
    return true;
  }

  ir::Graph& g_;
  bool changed_ = false;
};

}  // namespace

bool Canonicalize::run(ir::Graph& g) {
  return Canonicalizer(g).run();
}

}  // namespace neuronc::passes
