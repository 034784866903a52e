// RMS norm recognition (see the header).
#include "passes/fuse_rms_norm.h"

#include <string>
#include <vector>

#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

using ir::Node;
using ir::Value;

class Matcher {
 public:
  explicit Matcher(ir::Graph& g) : g_(g) {}

  bool run() {
    // The rsqrt nodes first: fusing erases later nodes of the graph (the multiply or cast the
    // norm replaces), never an rsqrt, so this list stays valid while the snapshot would not.
    std::vector<Node*> rsqrts;
    for (Node* n : node_snapshot(g_)) {
      if (n->op() == "aten.rsqrt.default") rsqrts.push_back(n);
    }
    bool changed = false;
    for (Node* n : rsqrts) changed |= fuse(n);
    return changed;
  }

 private:
  // `v` is read by exactly one node and is not a graph output.
  bool private_value(const Value* v) const {
    return v->uses().size() == 1 && !g_.is_graph_output(v);
  }

  static bool is_cast(const Node& n) { return n.op() == "aten._to_copy.default"; }

  // The x of pow(x, 2), mul(x, x) or square(x).
  static Value* squared(const Node& n) {
    if (n.op() == "aten.pow.Tensor_Scalar" && n.attr_float("exponent") == 2.0) return n.input(0);
    if (n.op() == "aten.square.default") return n.input(0);
    if (n.op() == "aten.mul.Tensor" && n.input(0) == n.input(1)) return n.input(0);
    return nullptr;
  }

  bool fuse(Node* rs) {
    // eps + mean: add.Scalar(mean, eps).
    Node* add = rs->input(0)->producer();
    if (add == nullptr || add->op() != "aten.add.Scalar" || !private_value(add->output()) ||
        add->attr_float("alpha") != 1.0)
      return false;
    const double eps = add->attr_float("other");
    Node* mean = add->input(0)->producer();
    if (mean == nullptr || mean->op() != "aten.mean.dim" || !private_value(mean->output()) ||
        !mean->attr_bool("keepdim"))
      return false;
    if (const ir::Attribute* dt = mean->attr("dtype");
        dt != nullptr && !std::holds_alternative<ir::NoneAttr>(*dt))
      return false;
    Node* sq = mean->input(0)->producer();
    if (sq == nullptr || !private_value(sq->output())) return false;
    Value* x = squared(*sq);
    if (x == nullptr || !ir::is_floating(x->dtype()) || x->type().rank() < 1) return false;
    const int64_t rank = x->type().rank();
    const std::vector<int64_t> dims = mean->attr_ints("dim");
    if (dims.size() != 1 || (dims[0] != -1 && dims[0] != rank - 1)) return false;
    const ir::Dim d = x->shape().back();
    if (!d.is_constant()) return false;
    // y = x * rsqrt(...), the only reader of the rsqrt.
    if (!private_value(rs->output())) return false;
    Node* y = rs->output()->uses()[0].node;
    if (y->op() != "aten.mul.Tensor") return false;
    const size_t k = rs->output()->uses()[0].operand;
    if (y->input(1 - k) != x || !(y->output()->type() == x->type())) return false;

    // The bf16 form: x = float32(x0) and y read only by its cast back to x0's dtype. The norm
    // of x0 computes in fp32 and rounds once at the end, as that cast does.
    std::vector<ir::NamedAttr> attrs = {{"normalized_shape", std::vector<int64_t>{d.value()}},
                                        {"eps", eps}};
    if (Node* up = x->producer(); up != nullptr && is_cast(*up) && x->dtype() == ir::DType::f32 &&
                                  ir::is_floating(up->input(0)->dtype()) &&
                                  up->input(0)->dtype() != ir::DType::f32 &&
                                  private_value(y->output())) {
      Node* back = y->output()->uses()[0].node;
      if (is_cast(*back) && back->output()->type() == up->input(0)->type()) {
        replace_node(g_, back, "aten.rms_norm.default", {up->input(0), nullptr}, std::move(attrs));
        return true;
      }
    }

    // z = y * w (either order), w a [D] tensor of y's dtype.
    Node* last = y;
    Value* w = nullptr;
    if (private_value(y->output())) {
      Node* z = y->output()->uses()[0].node;
      const size_t j = y->output()->uses()[0].operand;
      if (z->op() == "aten.mul.Tensor" && z->input(1 - j) != y->output()) {
        Value* c = z->input(1 - j);
        if (c->type().rank() == 1 && c->shape()[0] == d && c->dtype() == x->dtype() &&
            z->output()->type() == x->type()) {
          w = c;
          last = z;
        }
      }
    }
    replace_node(g_, last, "aten.rms_norm.default", {x, w}, std::move(attrs));
    return true;
  }

  ir::Graph& g_;
};

}  // namespace

bool FuseRmsNorm::run(ir::Graph& g) {
  return Matcher(g).run();
}

}  // namespace neuronc::passes
