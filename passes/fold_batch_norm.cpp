// Batch-norm folding (see the header).
#include "passes/fold_batch_norm.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "kernels/zeroed_bytes.h"
#include "passes/host_eval.h"
#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

bool is_conv(const std::string& op) {
  return op == "aten.conv2d.default" || op == "aten.conv1d.default" ||
         op == "aten.convolution.default";
}

class Folder {
 public:
  explicit Folder(ir::Graph& g) : g_(g) {
    for (const ir::GraphOutput& o : g.outputs())
      if (o.role == ir::OutputRole::buffer_mutation) mutated_.insert(o.target);
  }

  bool run() {
    bool changed = false;
    for (ir::Node* n : node_snapshot(g_)) {
      if (n->op() != "aten.batch_norm.default" || n->attr_bool("training")) continue;
      changed |= fold(n);
    }
    if (changed) g_.erase_unused_constant_inputs();
    return changed;
  }

 private:
  // The constant behind `v` (a parameter/buffer/constant input with a payload that the graph
  // does not mutate), or nullopt.
  bool is_constant(const ir::Value* v) const {
    if (!v || v->producer() || !v->payload()) return false;
    for (const ir::GraphInput& in : g_.inputs()) {
      if (in.value != v) continue;
      if (in.role == ir::InputRole::user_input || mutated_.count(in.target)) return false;
    }
    return true;
  }
  std::optional<HostTensor> constant(const ir::Value* v) const {
    if (!is_constant(v)) return std::nullopt;
    return read_constant(*v);
  }

  ir::Value* add_constant(const std::string& base, const std::string& target, HostTensor t) {
    return add_constant_input(g_, base, target, t);
  }

  bool fold(ir::Node* bn) {
    ir::Value* x = bn->input(0);
    const ir::Value* mean_v = bn->input(3);
    const ir::Value* var_v = bn->input(4);
    if (!mean_v || !var_v || x->type().rank() < 2 || !x->type().shape[1].is_constant())
      return false;
    const int64_t C = x->type().shape[1].value();
    auto mean = constant(mean_v), var = constant(var_v);
    if (!mean || !var) return false;
    std::optional<HostTensor> gamma, beta;
    if (bn->input(1) && !(gamma = constant(bn->input(1)))) return false;
    if (bn->input(2) && !(beta = constant(bn->input(2)))) return false;
    const double eps = bn->attr_float("eps");
    std::vector<double> s(static_cast<size_t>(C)), t(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      s[c] = (gamma ? gamma->data[c] : 1.0) / std::sqrt(var->data[c] + eps);
      t[c] = (beta ? beta->data[c] : 0.0) - mean->data[c] * s[c];
    }
    const std::string target = "folded." + bn->name();
    if (fold_into_conv(bn, s, t, target)) return true;

    // Standalone: x * s + t with s, t shaped [C, 1, ...] (broadcast over the spatial dims).
    HostTensor st{x->dtype(), {C}, s}, tt{x->dtype(), {C}, t};
    for (int64_t d = 2; d < x->type().rank(); ++d) {
      st.shape.push_back(1);
      tt.shape.push_back(1);
    }
    for (double& v : st.data) v = round_to(x->dtype(), v);
    for (double& v : tt.data) v = round_to(x->dtype(), v);
    ir::Value* sc = add_constant(bn->output()->name() + "_scale", target + ".scale", st);
    ir::Value* sh = add_constant(bn->output()->name() + "_shift", target + ".shift", tt);
    ir::Node* mul = g_.insert_before(bn, "aten.mul.Tensor", {x, sc});
    mul->set_location(bn->location());
    replace_node(g_, bn, "aten.add.Tensor", {mul->output(), sh}, {{"alpha", int64_t{1}}});
    return true;
  }

  bool fold_into_conv(ir::Node* bn, const std::vector<double>& s, const std::vector<double>& t,
                      const std::string& target) {
    ir::Value* y = bn->input(0);
    ir::Node* conv = y->producer();
    if (!conv || !is_conv(conv->op()) || y->uses().size() != 1 || g_.is_graph_output(y))
      return false;
    if (conv->attr("transposed") && conv->attr_bool("transposed")) return false;
    const int64_t O = static_cast<int64_t>(s.size());
    const ir::Value* bias_v = conv->inputs().size() > 2 ? conv->input(2) : nullptr;
    std::optional<HostTensor> b;
    if (bias_v && !(b = constant(bias_v))) return false;
    // The folded conv: weight `wv`, bias b * s + t in `dtype`.
    auto fold_with = [&](ir::Value* wv, ir::DType dtype) {
      HostTensor b2{dtype, {O}, std::vector<double>(static_cast<size_t>(O))};
      for (int64_t o = 0; o < O; ++o)
        b2.data[o] = round_to(b2.dtype, (b ? b->data[o] : 0.0) * s[o] + t[o]);
      ir::Value* bv = add_constant(y->name() + "_bias", target + ".bias", std::move(b2));
      return replace_conv(bn, conv, wv, bv);
    };
    // An f32 weight (the usual one) whose storage is exactly its row-major elements keeps its
    // bytes: the folded weight shares them with a deferred scale per output channel
    // (ir::ConstantPayload::row_scale, covering every stored element), so it is computed where
    // it is consumed (codegen lays it out straight into the artifact), with the rounding written
    // below, and never held beside the weight.
    if (const ir::Value* w = conv->input(1); w->dtype() == ir::DType::f32 && is_constant(w)) {
      const ir::ConstantPayload& p = *w->payload();
      std::vector<int64_t> shape;
      int64_t count = 1;
      for (const ir::Dim& d : w->shape()) {
        if (!d.is_constant()) count = -1;
        shape.push_back(d.is_constant() ? d.value() : 0);
        if (count >= 0) count *= shape.back();
      }
      if (!p.absent && !p.deferred() && p.storage_offset == 0 && p.row_major(shape) &&
          !shape.empty() && shape[0] == O && O > 0 && count > 0 &&
          static_cast<size_t>(count) * 4 == p.nbytes) {
        ir::ConstantPayload scaled = p;
        scaled.row_scale = std::make_shared<const std::vector<double>>(s);
        scaled.row_scale_pitch = count / O;
        return fold_with(add_constant_input(g_, y->name() + "_weight", target + ".weight",
                                            ir::DType::f32, shape, std::move(scaled)),
                         ir::DType::f32);
      }
    }
    // Otherwise an f32 weight scales in one pass over its bytes: the same rounding as through
    // double (w * s is computed in double and rounded once to f32 either way).
    if (conv->input(1)->dtype() == ir::DType::f32 && is_constant(conv->input(1))) {
      std::optional<DenseTensor> d = dense_constant(*conv->input(1));
      if (d && !d->shape.empty() && d->shape[0] == O) {
        const size_t n = d->nbytes() / 4, per = n / static_cast<size_t>(O);
        // From the pass's arena (huge pages: kernels/zeroed_bytes.h): no zero fill before it is
        // overwritten, and a small weight is not faulted in 4 KiB at a time.
        const std::shared_ptr<std::byte> bytes = arena_.take(d->nbytes());
        float* out = reinterpret_cast<float*>(bytes.get());
        // Memory-bound (the weight read, the new block faulted in): output channels in parallel,
        // each element computed alone, so the bytes do not depend on the split.
        const size_t grain = std::max<size_t>(1, (size_t{1} << 16) / std::max<size_t>(per, 1));
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, O, static_cast<int64_t>(grain)),
                          [&](const tbb::blocked_range<int64_t>& r) {
                            for (int64_t o = r.begin(); o < r.end(); ++o)
                              for (size_t k = 0; k < per; ++k) {
                                float v;
                                std::memcpy(&v, d->data + (o * per + k) * 4, 4);
                                out[o * per + k] =
                                    static_cast<float>(static_cast<double>(v) * s[o]);
                              }
                          });
        return fold_with(add_constant_input(
                             g_, y->name() + "_weight", target + ".weight", ir::DType::f32,
                             d->shape, ir::ConstantPayload{bytes.get(), d->nbytes(), 0, {}, bytes}),
                         ir::DType::f32);
      }
    }
    auto w = constant(conv->input(1));
    if (!w) return false;
    if (w->shape.empty() || w->shape[0] != O) return false;
    const int64_t per = static_cast<int64_t>(w->data.size()) / O;
    HostTensor w2 = *w;
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < per; ++k) {
        double& v = w2.data[o * per + k];
        v = round_to(w2.dtype, v * s[o]);
      }
    const ir::DType dtype = w->dtype;
    return fold_with(add_constant(y->name() + "_weight", target + ".weight", std::move(w2)), dtype);
  }

  // `bn` becomes `conv` with weight `wv` and bias `bv`.
  bool replace_conv(ir::Node* bn, ir::Node* conv, ir::Value* wv, ir::Value* bv) {
    std::vector<ir::Value*> in = conv->inputs();
    in.resize(std::max<size_t>(in.size(), 3));
    in[1] = wv;
    in[2] = bv;
    ir::Node* folded = replace_node(g_, bn, conv->op(), in, conv->attrs());
    folded->set_location(conv->location());
    g_.erase(conv);
    return true;
  }

  ir::Graph& g_;
  std::set<std::string> mutated_;
  kernels::ZeroedArena arena_;
};

}  // namespace

bool FoldBatchNorm::run(ir::Graph& g) {
  return Folder(g).run();
}

}  // namespace neuronc::passes
