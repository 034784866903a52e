// ExpandComposites (see the header).
#include "passes/expand_composites.h"

#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "ir/einsum.h"
#include "ir/op_registry.h"
#include "ir/symbol_value.h"
#include "passes/rewrite.h"

namespace neuronc::passes {
namespace {

using ir::Node;
using ir::Value;

int64_t static_dim(const Node* n, const Value* x, int64_t d, const char* what) {
  const ir::Dim& dim = x->shape().at(static_cast<size_t>(d));
  if (!dim.is_constant())
    throw ir::Error(n->describe() + ": the " + what + " must be static, found a symbolic size");
  return dim.value();
}

class Expander : NodeExpander {
 public:
  explicit Expander(ir::Graph& g) : NodeExpander(g, "expanding") {}

  bool run() {
    bool changed = false;
    for (Node* n : node_snapshot(g_)) changed |= visit(n);
    return changed;
  }

 private:
  bool visit(Node* n) {
    const std::string& op = n->op();
    if (op == "aten.min.other" || op == "aten.max.other") {
      replace_node(g_, n, op == "aten.min.other" ? "aten.minimum.default" : "aten.maximum.default",
                   n->inputs(), {});
      return true;
    }
    if (op == "aten.repeat.default") return repeat(n);
    if (op == "aten.repeat_interleave.self_int") return repeat_interleave(n);
    if (op == "aten.roll.default") return roll(n);
    if (op == "aten.linalg_vector_norm.default") return vector_norm(n);
    if (op == "aten.upsample_nearest2d.vec" || op == "aten.upsample_bilinear2d.vec")
      return upsample(n);
    if (op == "aten.einsum.default") return einsum(n);
    if (op == "aten.adaptive_avg_pool3d.default" || op == "aten._adaptive_avg_pool3d.default")
      return adaptive_avg_pool3d(n);
    if (op == "aten.max.dim" || op == "aten.min.dim") return max_min_dim(n);
    if (op == "aten.tensor_split.indices" || op == "aten.tensor_split.sections")
      return tensor_split(n);
    if (op == "aten.max_pool3d.default" || op == "aten.max_pool3d_with_indices.default")
      return pool3d(n, /*average=*/false);
    if (op == "aten.avg_pool3d.default") return pool3d(n, /*average=*/true);
    if (op == "aten.var.correction" || op == "aten.var.dim") return var(n);
    return false;
  }

  // max.dim / min.dim: the values are amax / amin over the dim and the indices argmax / argmin
  // (PyTorch's first occurrence, as both compute it); indices nobody reads are not computed.
  bool max_min_dim(Node* n) {
    const bool is_max = n->op() == "aten.max.dim";
    Value* x = n->input(0);
    const int64_t dim = n->attr_int("dim");
    const bool keep = n->attr("keepdim") && n->attr_bool("keepdim");
    Value* values = add(n, is_max ? "aten.amax.default" : "aten.amin.default", {x},
                        {{"dim", std::vector<int64_t>{dim}}, {"keepdim", keep}});
    Value* indices = read(g_, n->outputs()[1])
                         ? add(n, is_max ? "aten.argmax.default" : "aten.argmin.default", {x},
                               {{"dim", dim}, {"keepdim", keep}})
                         : nullptr;
    finish_all(n, {values, indices});
    return true;
  }

  // Redirects each result of the multi-result `n` to `now` (same types), keeping the names users
  // see, and erases `n`. A null entry is a result nobody reads.
  void finish_all(Node* n, const std::vector<Value*>& now) {
    const std::string node = n->name();
    std::vector<std::string> names;
    for (size_t i = 0; i < now.size(); ++i) {  // every type first: nothing changes on an error
      const Value* old = n->outputs()[i];
      names.push_back(old->name());
      if (now[i] && !(now[i]->type() == old->type()))
        throw ir::Error("expanding " + n->describe() + ": result type " +
                        g_.type_to_string(now[i]->type()) + " differs from " +
                        g_.type_to_string(old->type()));
    }
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i]) n->outputs()[i]->replace_all_uses_with(now[i]);
    g_.erase(n);
    // The first result's node keeps the node's name (as finish() does), the others their value's.
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i]) g_.rename(now[i]->producer(), i == 0 ? node : names[i], {names[i]});
  }

  static bool read(const ir::Graph& g, const Value* v) {
    return v->has_uses() || g.is_graph_output(v);
  }

  // tensor_split: each part is the slice of its [start, end) (ir::tensor_split_ranges).
  bool tensor_split(Node* n) {
    Value* x = n->input(0);
    const int64_t rank = x->type().rank();
    int64_t dim = n->attr_int("dim");
    if (dim < 0) dim += rank;
    const int64_t size = static_dim(n, x, dim, "split dim");
    const std::vector<int64_t> points =
        n->op() == "aten.tensor_split.sections"
            ? ir::tensor_split_section_points(size, n->attr_int("sections"))
            : n->attr_ints("indices");
    std::vector<Value*> parts;
    for (const auto& [s, e] : ir::tensor_split_ranges(size, points)) {
      Value* out = n->outputs()[parts.size()];
      parts.push_back(
          read(g_, out) ? add(n, "aten.slice.Tensor", {x}, {{"dim", dim}, {"start", s}, {"end", e}})
                        : nullptr);
    }
    finish_all(n, parts);
    return true;
  }

  // max_pool3d / avg_pool3d: both are separable, so the 3-D window is a 2-D pool over (H, W)
  // of every depth slice, then a (kd x 1) pool over (D, H*W): [.., C, D, H, W] ->
  // [.., C*D, H, W] -> pool -> [.., C, D, Ho*Wo] -> pool -> [.., C, Do, Ho, Wo]. Padding,
  // dilation, strides and ceil_mode act per dim, so the result is the same values: for the
  // average, PyTorch's divisor is the product of the window's per-dim lengths (clipped to the
  // padded input, or to the input without count_include_pad), so it factors too. A
  // divisor_override does not factor and is refused. The indices of max_pool3d_with_indices
  // are not computed; a model that reads them is refused.
  bool pool3d(Node* n, bool average) {
    if (n->outputs().size() > 1 && read(g_, n->outputs()[1])) return false;
    if (average && n->attr("divisor_override") && !n->attr_is_none("divisor_override"))
      return false;
    Value* x = n->input(0);
    const ir::Shape& xs = x->shape();
    const size_t r = xs.size();
    if (r != 4 && r != 5) return false;
    auto triple = [&](const char* name, int64_t def) {
      std::vector<int64_t> v =
          n->attr(name) && !n->attr_is_none(name) ? n->attr_ints(name) : std::vector<int64_t>{};
      if (v.empty()) return std::vector<int64_t>(3, def);
      if (v.size() == 1) v.assign(3, v[0]);
      return v;
    };
    const std::vector<int64_t> k = triple("kernel_size", 1);
    std::vector<int64_t> st = triple("stride", 0);
    if (st[0] == 0) st = k;
    const std::vector<int64_t> pad = triple("padding", 0), dil = triple("dilation", 1);
    const bool ceil = n->attr("ceil_mode") && n->attr_bool("ceil_mode");
    std::vector<int64_t> lead;
    for (size_t i = 0; i + 3 < r; ++i)
      lead.push_back(static_dim(n, x, static_cast<int64_t>(i), "batch or channel dim"));
    const int64_t d = static_dim(n, x, static_cast<int64_t>(r) - 3, "depth");
    const int64_t h = static_dim(n, x, static_cast<int64_t>(r) - 2, "height");
    const int64_t w = static_dim(n, x, static_cast<int64_t>(r) - 1, "width");
    const bool include_pad = !n->attr("count_include_pad") || n->attr_bool("count_include_pad");
    auto pool2 = [&](Value* in, int64_t i, int64_t j) {
      std::vector<ir::NamedAttr> a = {
          {"kernel_size", std::vector<int64_t>{k[i], j < 0 ? 1 : k[j]}},
          {"stride", std::vector<int64_t>{st[i], j < 0 ? 1 : st[j]}},
          {"padding", std::vector<int64_t>{pad[i], j < 0 ? 0 : pad[j]}}};
      if (average) {
        a.push_back({"ceil_mode", ceil});
        a.push_back({"count_include_pad", include_pad});
        return add(n, "aten.avg_pool2d.default", {in}, a);
      }
      a.push_back({"dilation", std::vector<int64_t>{dil[i], j < 0 ? 1 : dil[j]}});
      a.push_back({"ceil_mode", ceil});
      return add(n, "aten.max_pool2d.default", {in}, a);
    };
    auto dims = [&](std::initializer_list<int64_t> tail) {
      std::vector<int64_t> s = lead;
      s.insert(s.end(), tail);
      return s;
    };
    int64_t planes = d;
    std::vector<int64_t> flat = lead;
    if (!flat.empty()) planes *= flat.back(), flat.pop_back();
    flat.insert(flat.end(), {planes, h, w});
    Value* hw = pool2(add(n, "aten.view.default", {x}, {{"size", flat}}), 1, 2);
    const int64_t ho = hw->shape()[hw->shape().size() - 2].value();
    const int64_t wo = hw->shape().back().value();
    Value* dv = pool2(add(n, "aten.view.default", {hw}, {{"size", dims({d, ho * wo})}}), 0, -1);
    const int64_t dout = dv->shape()[dv->shape().size() - 2].value();
    Value* out = add(n, "aten.view.default", {dv}, {{"size", dims({dout, ho, wo})}});
    std::vector<Value*> results = {out};
    if (n->outputs().size() > 1) results.push_back(nullptr);
    finish_all(n, results);
    return true;
  }

  // var.correction: sum((x - mean)^2) / (N - correction) over the dims (all when none), as
  // PyTorch's two-pass CPU kernel computes it; N - correction <= 0 gives inf or nan as there.
  // var.dim's `unbiased` is correction 1 (true) or 0.
  bool var(Node* n) {
    Value* x = n->input(0);
    if (!ir::is_floating(x->dtype())) return false;
    const int64_t rank = x->type().rank();
    std::vector<int64_t> dims;
    if (!n->attr_is_none("dim")) dims = n->attr_ints("dim");
    if (dims.empty()) {
      dims.resize(static_cast<size_t>(rank));
      std::iota(dims.begin(), dims.end(), 0);
    }
    // N: a constant, or (a dynamic dim's) the run's size.
    ir::Monomial count;
    for (int64_t d : dims) count *= x->shape().at(static_cast<size_t>(d < 0 ? d + rank : d));
    if (count.coeff == INT64_MAX) return false;
    double correction = 1.0;
    if (n->op() == "aten.var.dim")
      correction = n->attr("unbiased") && !n->attr_bool("unbiased") ? 0.0 : 1.0;
    else if (n->attr("correction") && !n->attr_is_none("correction"))
      correction = n->attr_float("correction");
    const bool keep = n->attr("keepdim") && n->attr_bool("keepdim");
    Value* mean = add(n, "aten.mean.dim", {x}, {{"dim", dims}, {"keepdim", true}});
    Value* centred = add(n, "aten.sub.Tensor", {x, mean}, {});
    Value* sq = add(n, "aten.mul.Tensor", {centred, centred}, {});
    Value* sum = add(n, "aten.sum.dim_IntList", {sq}, {{"dim", dims}, {"keepdim", keep}});
    if (count.is_constant()) {
      const double denom = static_cast<double>(count.coeff) - correction;
      return finish(n, add(n, "aten.div.Scalar", {sum}, {{"other", denom}}));
    }
    Value* denom = ir::symbol_value(g_, g_.dim_of(count), ir::DType::f32, n);
    if (correction != 0) denom = add(n, "aten.sub.Scalar", {denom}, {{"other", correction}});
    return finish(n, add(n, "aten.div.Tensor", {sum, denom}, {}));
  }

  // Even windows (each output cell averages a k_d x k_h x k_w block): [..., D, H, W] viewed as
  // [..., Do, kd, Ho, kh, Wo, kw] and averaged over the three window dims. Uneven windows stay
  // (and are refused with the op's name).
  bool adaptive_avg_pool3d(Node* n) {
    Value* x = n->input(0);
    const int64_t r = x->type().rank();
    if (r < 4 || !ir::is_floating(x->dtype())) return false;
    ir::Shape split(x->shape().begin(), x->shape().end() - 3);
    std::vector<int64_t> window_dims;
    for (int64_t i = 0; i < 3; ++i) {
      const ir::Dim in = x->shape()[static_cast<size_t>(r - 3 + i)];
      const ir::Dim out = n->output()->shape()[static_cast<size_t>(r - 3 + i)];
      if (!in.is_constant() || !out.is_constant() || out.value() < 1 ||
          in.value() % out.value() != 0)
        return false;
      split.push_back(out);
      split.push_back(ir::Dim::constant(in.value() / out.value()));
      window_dims.push_back(static_cast<int64_t>(split.size()) - 1);
    }
    Value* m =
        add(n, "aten.mean.dim", {view(n, x, split)}, {{"dim", window_dims}, {"keepdim", false}});
    return finish(n, m);
  }

  Value* view(Node* at, Value* x, const ir::Shape& s) {
    if (x->shape() == s) return x;
    return add(at, "aten.view.default", {x}, {{"size", shape_attr(s)}});
  }

  Value* permute(Node* at, Value* x, const std::vector<int64_t>& perm) {
    std::vector<int64_t> id(perm.size());
    std::iota(id.begin(), id.end(), 0);
    if (perm == id) return x;
    return add(at, "aten.permute.default", {x}, {{"dims", perm}});
  }

  bool repeat(Node* n) {
    Value* x = n->input(0);
    const std::vector<int64_t> r = n->attr_ints("repeats");
    const size_t lead = r.size() - x->shape().size();
    ir::Shape with_ones, expanded, out;
    for (size_t i = 0; i < r.size(); ++i) {
      const ir::Dim d = i < lead ? ir::Dim::constant(1) : x->shape()[i - lead];
      with_ones.push_back(ir::Dim::constant(1));
      with_ones.push_back(d);
      expanded.push_back(ir::Dim::constant(r[i]));
      expanded.push_back(d);
    }
    Value* v = view(n, x, with_ones);
    if (!(expanded == with_ones))
      v = add(n, "aten.expand.default", {v}, {{"size", shape_attr(expanded)}});
    return finish(n, view(n, v, n->output()->shape()));
  }

  // Each element k times along dim: a size-1 dim after it, expanded to k, merged back.
  bool repeat_interleave(Node* n) {
    Value* x = n->input(0);
    const int64_t k = n->attr_int("repeats");
    if (n->attr_is_none("dim")) x = view(n, x, {g_.dim_of(*ir::numel(x->shape()))});
    const int64_t rank = x->type().rank();
    int64_t d = n->attr_is_none("dim") ? 0 : n->attr_int("dim");
    if (d < 0) d += rank;
    ir::Shape with_one = x->shape(), expanded = x->shape();
    with_one.insert(with_one.begin() + d + 1, ir::Dim::constant(1));
    expanded.insert(expanded.begin() + d + 1, ir::Dim::constant(k));
    Value* v =
        add(n, "aten.expand.default", {view(n, x, with_one)}, {{"size", shape_attr(expanded)}});
    return finish(n, view(n, v, n->output()->shape()));
  }

  bool roll(Node* n) {
    Value* x = n->input(0);
    const std::vector<int64_t> shifts = n->attr_ints("shifts");
    std::vector<int64_t> dims = n->attr_ints("dims");
    const ir::Shape shape = x->shape();
    Value* v = x;
    if (dims.empty()) {  // the flattened tensor
      std::optional<ir::Monomial> count = ir::numel(shape);
      v = view(n, v, {g_.dim_of(*count)});
      dims = {0};
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      const int64_t rank = v->type().rank();
      const int64_t d = dims[i] < 0 ? dims[i] + rank : dims[i];
      const int64_t size = static_dim(n, v, d, "rolled dim");
      if (size == 0) continue;
      const int64_t s = ((shifts.at(i) % size) + size) % size;
      if (s == 0) continue;
      Value* tail =
          add(n, "aten.slice.Tensor", {v}, {{"dim", d}, {"start", size - s}, {"end", size}});
      Value* head =
          add(n, "aten.slice.Tensor", {v}, {{"dim", d}, {"start", int64_t{0}}, {"end", size - s}});
      v = add(n, "aten.cat.default", {tail, head}, {{"dim", d}});
    }
    return finish(n, view(n, v, shape));
  }

  bool vector_norm(Node* n) {
    Value* x = n->input(0);
    const double ord = n->attr("ord") ? n->attr_float("ord") : 2.0;
    std::vector<int64_t> dims;
    if (!n->attr_is_none("dim")) dims = n->attr_ints("dim");
    if (dims.empty()) {
      dims.resize(static_cast<size_t>(x->type().rank()));
      std::iota(dims.begin(), dims.end(), 0);
    }
    const bool keep = n->attr("keepdim") && n->attr_bool("keepdim");
    if (!n->attr_is_none("dtype") || !ir::is_floating(x->dtype())) return false;
    const std::vector<ir::NamedAttr> red = {{"dim", dims}, {"keepdim", keep}};
    Value* a = ord == 2.0 ? x : add(n, "aten.abs.default", {x}, {});
    Value* r = nullptr;
    if (ord == 2.0) {
      r = add(n, "aten.sqrt.default",
              {add(n, "aten.sum.dim_IntList", {add(n, "aten.mul.Tensor", {x, x}, {})}, red)}, {});
    } else if (ord == 1.0) {
      r = add(n, "aten.sum.dim_IntList", {a}, red);
    } else if (std::isinf(ord)) {
      r = add(n, ord > 0 ? "aten.amax.default" : "aten.amin.default", {a}, red);
    } else if (ord == 0.0) {
      Value* nz = add(n, "aten.ne.Scalar", {x}, {{"other", int64_t{0}}});
      nz = add(n, "aten._to_copy.default", {nz}, {{"dtype", x->dtype()}});
      r = add(n, "aten.sum.dim_IntList", {nz}, red);
    } else {
      Value* p = add(n, "aten.pow.Tensor_Scalar", {a}, {{"exponent", ord}});
      r = add(n, "aten.pow.Tensor_Scalar", {add(n, "aten.sum.dim_IntList", {p}, red)},
              {{"exponent", 1.0 / ord}});
    }
    return finish(n, r);
  }

  // The [out, in] matrix that interpolates one spatial dim as PyTorch does (float math,
  // aten/src/ATen/native/UpSample.h: area_pixel_compute_source_index and nearest_idx).
  static std::vector<double> interpolation(bool bilinear, bool align_corners, int64_t in,
                                           int64_t out, std::optional<double> factor) {
    std::vector<double> w(static_cast<size_t>(out * in), 0.0);
    float scale;
    if (bilinear && align_corners)
      scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    else
      scale = factor && *factor > 0 ? static_cast<float>(1.0 / *factor)
                                    : static_cast<float>(in) / static_cast<float>(out);
    for (int64_t o = 0; o < out; ++o) {
      double* row = &w[static_cast<size_t>(o * in)];
      if (!bilinear) {
        const int64_t src = std::min(static_cast<int64_t>(std::floor(o * scale)), in - 1);
        row[src] = 1.0;
        continue;
      }
      float src = align_corners ? scale * static_cast<float>(o)
                                : std::max(scale * (static_cast<float>(o) + 0.5f) - 0.5f, 0.0f);
      const int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
      const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
      const float l1 = std::min(std::max(src - static_cast<float>(i0), 0.0f), 1.0f);
      row[i0] += 1.0f - l1;
      row[i1] += l1;
    }
    return w;
  }

  bool upsample(Node* n) {
    Value* x = n->input(0);
    const bool bilinear = n->op() == "aten.upsample_bilinear2d.vec";
    const bool corners = bilinear && n->attr_bool("align_corners");
    std::vector<double> factors;
    if (const auto* f = n->attr("scale_factors"))
      if (const auto* v = std::get_if<std::vector<double>>(f)) factors = *v;
    const ir::Shape& in = x->shape();
    const ir::Shape& out = n->output()->shape();
    // Nearest by an integer factor: each source pixel repeated (exact).
    if (!bilinear) {
      bool integral = true;
      for (int i = 2; i < 4; ++i) {
        const int64_t a = static_dim(n, x, i, "spatial dim"), b = out[i].value();
        integral &= b % a == 0 && (factors.empty() || factors[i - 2] == double(b / a));
      }
      if (integral) {
        const ir::Dim one = ir::Dim::constant(1);
        const ir::Dim kh = ir::Dim::constant(out[2].value() / in[2].value());
        const ir::Dim kw = ir::Dim::constant(out[3].value() / in[3].value());
        Value* v = view(n, x, {in[0], in[1], in[2], one, in[3], one});
        v = add(n, "aten.expand.default", {v},
                {{"size", shape_attr({in[0], in[1], in[2], kh, in[3], kw})}});
        return finish(n, view(n, v, out));
      }
    }
    // One linear per spatial dim: W, then (transposed) H.
    Value* v = x;
    for (int i : {3, 2}) {
      const int64_t a = static_dim(n, x, i, "spatial dim"), b = out[i].value();
      HostTensor m;
      m.dtype = x->dtype();
      m.shape = {b, a};
      m.data = interpolation(bilinear, corners, a, b,
                             factors.empty() ? std::nullopt : std::optional(factors[i - 2]));
      Value* w = add_constant_input(g_, n->name() + (i == 3 ? "_w" : "_h"),
                                    "upsample." + n->name() + (i == 3 ? ".w" : ".h"), m);
      v = add(n, "aten.linear.default", {v, w, nullptr}, {});
      v = permute(n, v, {0, 1, 3, 2});
    }
    return finish(n, v);
  }

  // --- einsum ------------------------------------------------------------------------------
  struct Term {
    Value* v;
    std::string letters;
  };

  // Sums the letters of `t` that are in neither `keep` nor `other`.
  Term sum_private(Node* n, Term t, const std::string& keep, const std::string& other) {
    std::vector<int64_t> dims;
    std::string rest;
    for (size_t k = 0; k < t.letters.size(); ++k) {
      const char c = t.letters[k];
      if (keep.find(c) == std::string::npos && other.find(c) == std::string::npos)
        dims.push_back(static_cast<int64_t>(k));
      else
        rest += c;
    }
    if (dims.empty()) return t;
    return {add(n, "aten.sum.dim_IntList", {t.v}, {{"dim", dims}, {"keepdim", false}}), rest};
  }

  ir::Shape sizes(const Term& t, const std::string& letters) {
    ir::Shape s;
    for (char c : letters) s.push_back(t.v->shape()[t.letters.find(c)]);
    return s;
  }

  ir::Dim product(const ir::Shape& s) { return g_.dim_of(*ir::numel(s)); }

  std::vector<int64_t> order(const Term& t, const std::string& letters) {
    std::vector<int64_t> p;
    for (char c : letters) p.push_back(static_cast<int64_t>(t.letters.find(c)));
    return p;
  }

  // a × b over their shared letters, keeping the letters `keep` needs.
  Term contract(Node* n, Term a, Term b, const std::string& keep) {
    a = sum_private(n, a, keep, b.letters);
    b = sum_private(n, b, keep, a.letters);
    std::string batch, ka, kb, con;
    for (char c : a.letters) {
      const bool in_b = b.letters.find(c) != std::string::npos;
      const bool kept = keep.find(c) != std::string::npos;
      (in_b ? (kept ? batch : con) : ka) += c;
    }
    for (char c : b.letters)
      if (a.letters.find(c) == std::string::npos) kb += c;
    const ir::Shape sb = sizes(a, batch), sa = sizes(a, ka), sk = sizes(a, con), sn = sizes(b, kb);
    Value* A = permute(n, a.v, order(a, batch + ka + con));
    A = view(n, A, {product(sb), product(sa), product(sk)});
    Value* B = permute(n, b.v, order(b, batch + con + kb));
    B = view(n, B, {product(sb), product(sk), product(sn)});
    Value* r = add(n, "aten.bmm.default", {A, B}, {});
    ir::Shape rs = sb;
    rs.insert(rs.end(), sa.begin(), sa.end());
    rs.insert(rs.end(), sn.begin(), sn.end());
    return {view(n, r, rs), batch + ka + kb};
  }

  bool einsum(Node* n) {
    const std::vector<Value*>& xs = n->inputs();
    const ir::EinsumEquation e = ir::parse_einsum(n->attr_string("equation"), xs.size());
    Term t{xs.at(0), e.operands[0]};
    for (size_t i = 1; i < xs.size(); ++i) {
      // Letters a later operand or the output still needs stay.
      std::string keep = e.output;
      for (size_t j = i + 1; j < xs.size(); ++j) keep += e.operands[j];
      t = contract(n, t, {xs[i], e.operands[i]}, keep);
    }
    t = sum_private(n, t, e.output, "");
    return finish(n, permute(n, t.v, order(t, e.output)));
  }
};

}  // namespace

bool ExpandComposites::run(ir::Graph& g) {
  return Expander(g).run();
}

}  // namespace neuronc::passes
