// Reference evaluator for constant folding (see the header).
#include "passes/reference_eval.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>

#include "ir/op_registry.h"
#include "kernels/numerics.h"

namespace neuronc::passes {
namespace {

using Shape = std::vector<int64_t>;

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::optional<Shape> static_shape(const ir::Shape& s) {
  Shape out;
  for (const ir::Dim& d : s) {
    if (!d.is_constant()) return std::nullopt;
    out.push_back(d.value());
  }
  return out;
}

HostTensor make(ir::DType t, Shape s, double fill = 0) {
  HostTensor h;
  h.dtype = t;
  h.shape = std::move(s);
  h.data.assign(static_cast<size_t>(count(h.shape)), fill);
  return h;
}

// Element i of `t` broadcast to `out` shape.
double at_broadcast(const HostTensor& t, const Shape& out, int64_t i) {
  const size_t r = out.size(), tr = t.shape.size();
  int64_t off = 0, stride = 1;
  for (size_t k = 0; k < r; ++k) {
    const size_t od = r - 1 - k;
    const int64_t idx = i % out[od];
    i /= out[od];
    if (k < tr) {
      const int64_t td = t.shape[tr - 1 - k];
      off += (td == 1 ? 0 : idx) * stride;
      stride *= td;
    }
  }
  return t.data[static_cast<size_t>(off)];
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    out[out.size() - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

HostTensor binary(const HostTensor& a, const HostTensor& b, ir::DType out_t,
                  const std::function<double(double, double)>& f) {
  HostTensor o = make(out_t, broadcast_shape(a.shape, b.shape));
  for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
    o.data[static_cast<size_t>(i)] =
        round_to(out_t, f(at_broadcast(a, o.shape, i), at_broadcast(b, o.shape, i)));
  }
  return o;
}

HostTensor unary(const HostTensor& a, ir::DType out_t, const std::function<double(double)>& f) {
  HostTensor o = make(out_t, a.shape);
  for (size_t i = 0; i < o.data.size(); ++i) o.data[i] = round_to(out_t, f(a.data[i]));
  return o;
}

HostTensor scalar(ir::DType t, double v) {
  HostTensor h = make(t, {}, round_to(t, v));
  return h;
}

// General strided gather: out[i] = in[offset + sum(idx_k * stride_k)].
HostTensor gather_view(const HostTensor& in, const Shape& out_shape, const Shape& in_strides,
                       int64_t offset) {
  HostTensor o = make(in.dtype, out_shape);
  for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
    int64_t rem = i, off = offset;
    for (size_t k = out_shape.size(); k-- > 0;) {
      off += (rem % out_shape[k]) * in_strides[k];
      rem /= out_shape[k];
    }
    o.data[static_cast<size_t>(i)] = in.data[static_cast<size_t>(off)];
  }
  return o;
}

double scalar_attr(const ir::Node& n, const char* name) {
  return n.attr_float(name);
}

int64_t norm_dim(int64_t d, size_t rank) {
  return d < 0 ? d + static_cast<int64_t>(std::max<size_t>(rank, 1)) : d;
}

}  // namespace

double round_to(ir::DType t, double v) {
  return kernels::round_to(ir::element_type(t), v);
}

std::optional<HostTensor> read_constant(const ir::Value& v) {
  const ir::ConstantPayload* p = v.payload();
  if (!p) return std::nullopt;
  auto shape = static_shape(v.shape());
  if (!shape) return std::nullopt;
  if (ir::is_complex(v.dtype())) return std::nullopt;
  HostTensor h = make(v.dtype(), *shape);
  const Shape st =
      p->strides.empty() ? strides_of(*shape) : Shape(p->strides.begin(), p->strides.end());
  const size_t es = ir::dtype_size(v.dtype());
  for (int64_t i = 0; i < static_cast<int64_t>(h.data.size()); ++i) {
    int64_t rem = i, off = p->storage_offset;
    for (size_t k = shape->size(); k-- > 0;) {
      off += (rem % (*shape)[k]) * st[k];
      rem /= (*shape)[k];
    }
    const size_t byte = static_cast<size_t>(off) * es;
    if (byte + es > p->nbytes) return std::nullopt;
    const std::byte* src = p->data + byte;
    const double val = kernels::load_double(src, ir::element_type(v.dtype()));
    h.data[static_cast<size_t>(i)] = val;
  }
  return h;
}

std::vector<std::byte> encode(const HostTensor& t) {
  const ::neuronc::DType et = ir::element_type(t.dtype);
  const size_t es = ::neuronc::dtype_size(et);
  std::vector<std::byte> out(t.data.size() * es);
  for (size_t i = 0; i < t.data.size(); ++i)
    kernels::store_double(out.data() + i * es, et, t.data[i]);
  return out;
}

namespace {

// One node to evaluate: its op, operands (null entries for absent optional tensors) and static
// result type, as the dispatcher (evaluate) checked them.
struct EvalArgs {
  const ir::Node& n;
  const std::string& op;
  const std::vector<const HostTensor*>& in;
  const Shape& out_shape;
  ir::DType ot;
};

// What a family's evaluator returns: whether the op is one of the family's, and then its
// result, or nullopt when this node cannot be folded (left to run time).
struct Folded {
  bool matched = false;
  std::optional<HostTensor> value;
};

// "namespace.base.overload" -> "base", and -> "overload".
std::string op_base(const std::string& op) {
  const size_t d1 = op.find('.'), d2 = op.rfind('.');
  return op.substr(d1 + 1, d2 - d1 - 1);
}
std::string op_overload(const std::string& op) {
  return op.substr(op.rfind('.') + 1);
}

Folded not_mine() {
  return {};
}
Folded folded(HostTensor t) {
  return {true, std::move(t)};
}
Folded unfoldable() {
  return {true, std::nullopt};
}

// arange, full, zeros, ones, scalar_tensor: no operands.
Folded eval_creation(const EvalArgs& e) {
  const std::string& op = e.op;
  const ir::DType ot = e.ot;
  if (op == "aten.arange.default" || op == "aten.arange.start" || op == "aten.arange.start_step") {
    const double start = op == "aten.arange.default" ? 0.0 : scalar_attr(e.n, "start");
    const double step = op == "aten.arange.start_step" ? scalar_attr(e.n, "step") : 1.0;
    HostTensor o = make(ot, e.out_shape);
    for (size_t i = 0; i < o.data.size(); ++i)
      o.data[i] = round_to(ot, start + step * static_cast<double>(i));
    return folded(o);
  }
  if (op == "aten.full.default" || op == "aten.new_full.default" ||
      op == "aten.full_like.default" || op == "aten.fill.Scalar") {
    const char* name = op == "aten.fill.Scalar" ? "value" : "fill_value";
    return folded(make(ot, e.out_shape, round_to(ot, scalar_attr(e.n, name))));
  }
  if (op == "aten.zeros.default" || op == "aten.new_zeros.default" ||
      op == "aten.zeros_like.default")
    return folded(make(ot, e.out_shape, 0));
  if (op == "aten.ones.default" || op == "aten.new_ones.default" || op == "aten.ones_like.default")
    return folded(make(ot, e.out_shape, 1));
  if (op == "aten.scalar_tensor.default") return folded(scalar(ot, scalar_attr(e.n, "s")));
  return not_mine();
}

// Copies, views and data movement: clone/_to_copy, view/reshape/squeeze/..., permute, expand,
// slice, select, cat.
Folded eval_data_movement(const EvalArgs& e, const HostTensor& x) {
  const std::string& op = e.op;
  const ir::Node& n = e.n;
  const Shape& out_shape = e.out_shape;
  if (op == "aten._to_copy.default" || op == "aten.clone.default" || op == "aten.alias.default" ||
      op == "aten.lift_fresh_copy.default" || op == "aten.contiguous.default") {
    return folded(unary(x, e.ot, [](double v) { return v; }));
  }
  if (op == "aten.view.default" || op == "aten.reshape.default" ||
      op == "aten._unsafe_view.default" || op == "aten.unsqueeze.default" ||
      op == "aten.squeeze.dim" || op == "aten.squeeze.dims" || op == "aten.flatten.using_ints" ||
      op == "aten.unflatten.int") {
    HostTensor o = x;
    o.shape = out_shape;
    return folded(o);
  }
  if (op == "aten.permute.default") {
    const std::vector<int64_t> dims = n.attr_ints("dims");
    const Shape st = strides_of(x.shape);
    Shape ps;
    for (int64_t d : dims) ps.push_back(st[static_cast<size_t>(norm_dim(d, x.shape.size()))]);
    return folded(gather_view(x, out_shape, ps, 0));
  }
  if (op == "aten.expand.default") {
    const Shape st = strides_of(x.shape);
    Shape es(out_shape.size(), 0);
    const size_t lead = out_shape.size() - x.shape.size();
    for (size_t k = 0; k < x.shape.size(); ++k) es[lead + k] = x.shape[k] == 1 ? 0 : st[k];
    return folded(gather_view(x, out_shape, es, 0));
  }
  if (op == "aten.slice.Tensor" || op == "aten.select.int") {
    const int64_t d = norm_dim(n.attr_int("dim"), x.shape.size());
    const Shape st = strides_of(x.shape);
    const int64_t size = x.shape[static_cast<size_t>(d)];
    if (op == "aten.select.int") {
      int64_t idx = n.attr_int("index");
      if (idx < 0) idx += size;
      Shape s2;
      for (size_t k = 0; k < st.size(); ++k)
        if (static_cast<int64_t>(k) != d) s2.push_back(st[k]);
      return folded(gather_view(x, out_shape, s2, idx * st[static_cast<size_t>(d)]));
    }
    int64_t start = n.attr_is_none("start") ? 0 : n.attr_int("start");
    if (start < 0) start += size;
    start = std::clamp<int64_t>(start, 0, size);
    Shape s2 = st;
    s2[static_cast<size_t>(d)] *= n.attr_int("step");
    return folded(gather_view(x, out_shape, s2, start * st[static_cast<size_t>(d)]));
  }
  if (op == "aten.cat.default") {
    const int64_t d = norm_dim(n.attr_int("dim"), out_shape.size());
    HostTensor o = make(e.ot, out_shape);
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(d) + 1; k < out_shape.size(); ++k) inner *= out_shape[k];
    int64_t outer = 1;
    for (size_t k = 0; k < static_cast<size_t>(d); ++k) outer *= out_shape[k];
    int64_t at = 0;
    for (const HostTensor* t : e.in) {
      if (!t || t->shape.size() != out_shape.size()) continue;
      const int64_t td = t->shape[static_cast<size_t>(d)];
      for (int64_t i = 0; i < outer; ++i)
        for (int64_t b = 0; b < td * inner; ++b)
          o.data[static_cast<size_t>(i * out_shape[static_cast<size_t>(d)] * inner + at * inner +
                                     b)] =
              round_to(e.ot, t->data[static_cast<size_t>(i * td * inner + b)]);
      at += td;
    }
    return folded(o);
  }
  return not_mine();
}

// Binary element-wise ops (any overload: Tensor, Scalar, Tensor_Scalar, Tensor_mode) with
// broadcasting; the second operand is a tensor or a scalar attribute.
Folded eval_binary(const EvalArgs& e, const HostTensor& x) {
  const ir::Node& n = e.n;
  auto other = [&](const char* attr) -> std::optional<HostTensor> {
    if (e.in.size() > 1 && e.in[1]) return *e.in[1];
    if (n.attr(attr)) return scalar(ir::DType::f64, scalar_attr(n, attr));
    return std::nullopt;
  };
  struct Bin {
    const char* name;
    std::function<double(double, double)> f;
  };
  static const Bin bins[] = {
      {"add", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }},
      {"rsub", [](double a, double b) { return b - a; }},
      {"eq", [](double a, double b) { return double(a == b); }},
      {"ne", [](double a, double b) { return double(a != b); }},
      {"lt", [](double a, double b) { return double(a < b); }},
      {"le", [](double a, double b) { return double(a <= b); }},
      {"gt", [](double a, double b) { return double(a > b); }},
      {"ge", [](double a, double b) { return double(a >= b); }},
      {"logical_and", [](double a, double b) { return double(a != 0 && b != 0); }},
      {"logical_or", [](double a, double b) { return double(a != 0 || b != 0); }},
      {"bitwise_and", [](double a, double b) { return double(int64_t(a) & int64_t(b)); }},
      {"__and__", [](double a, double b) { return double(int64_t(a) & int64_t(b)); }},
      {"bitwise_or", [](double a, double b) { return double(int64_t(a) | int64_t(b)); }},
      {"__or__", [](double a, double b) { return double(int64_t(a) | int64_t(b)); }},
      {"maximum", [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](double a, double b) { return std::min(a, b); }},
      {"pow", [](double a, double b) { return std::pow(a, b); }},
  };
  const std::string base = op_base(e.op), overload = op_overload(e.op);
  for (const Bin& b : bins) {
    if (base != b.name) continue;
    const char* attr = overload == "Tensor_Scalar" ? "exponent" : "other";
    std::optional<HostTensor> y = other(attr);
    if (!y) return unfoldable();
    double alpha = 1.0;
    if (n.attr("alpha")) alpha = n.attr_float("alpha");
    auto f = b.f;
    if (alpha != 1.0 && (base == "add" || base == "sub" || base == "rsub")) {
      if (base == "rsub")
        f = [alpha](double a, double c) { return c - alpha * a; };
      else
        f = [f, alpha](double a, double c) { return f(a, alpha * c); };
    }
    if (base == "div" && overload == "Tensor_mode" && !n.attr_is_none("rounding_mode")) {
      const std::string mode = n.attr_string("rounding_mode");
      f = mode == "floor" ? std::function<double(double, double)>(
                                [](double a, double c) { return std::floor(a / c); })
                          : std::function<double(double, double)>(
                                [](double a, double c) { return std::trunc(a / c); });
    }
    return folded(binary(x, *y, e.ot, f));
  }
  return not_mine();
}

// Unary element-wise ops and clamp.
Folded eval_unary(const EvalArgs& e, const HostTensor& x) {
  const ir::DType ot = e.ot;
  struct Un {
    const char* name;
    double (*f)(double);
  };
  static const Un uns[] = {
      {"neg", [](double a) { return -a; }},
      {"abs", [](double a) { return std::fabs(a); }},
      {"exp", [](double a) { return std::exp(a); }},
      {"log", [](double a) { return std::log(a); }},
      {"sin", [](double a) { return std::sin(a); }},
      {"cos", [](double a) { return std::cos(a); }},
      {"sqrt", [](double a) { return std::sqrt(a); }},
      {"rsqrt", [](double a) { return 1.0 / std::sqrt(a); }},
      {"reciprocal", [](double a) { return 1.0 / a; }},
      {"logical_not", [](double a) { return double(a == 0); }},
      {"bitwise_not",
       [](double a) { return a == 0 || a == 1 ? double(a == 0) : double(~int64_t(a)); }},
      {"relu", [](double a) { return a > 0 ? a : 0.0; }},
  };
  const std::string base = op_base(e.op);
  for (const Un& u : uns) {
    if (base != u.name) continue;
    // Float math is computed in the result's precision (fp32 for f32 results).
    return folded(unary(x, ot, [&](double v) {
      return u.f(round_to(ot == ir::DType::f64 ? ot : ir::DType::f32, v));
    }));
  }
  if (e.op == "aten.clamp.default") {
    // clamp(x, min, max) = min(max(x, min), max); NaN stays NaN; either bound may be None.
    auto bound = [&](const char* name) -> std::optional<double> {
      const ir::Attribute* at = e.n.attr(name);
      if (!at || std::holds_alternative<ir::NoneAttr>(*at)) return std::nullopt;
      return scalar_attr(e.n, name);
    };
    const std::optional<double> lo = bound("min"), hi = bound("max");
    return folded(unary(x, ot, [&](double v) {
      if (std::isnan(v)) return v;
      if (lo) v = std::max(v, *lo);
      if (hi) v = std::min(v, *hi);
      return v;
    }));
  }
  return not_mine();
}

// Selections by a condition or position: where, masked_fill, tril, triu.
Folded eval_selection(const EvalArgs& e, const HostTensor& x) {
  const std::string& op = e.op;
  const ir::DType ot = e.ot;
  const Shape& out_shape = e.out_shape;
  if (op == "aten.where.self" || op == "aten.where.ScalarOther" || op == "aten.where.ScalarSelf") {
    HostTensor t = op == "aten.where.ScalarSelf" ? scalar(ot, scalar_attr(e.n, "self")) : *e.in[1];
    HostTensor f = op == "aten.where.self"          ? *e.in[2]
                   : op == "aten.where.ScalarOther" ? scalar(ot, scalar_attr(e.n, "other"))
                                                    : *e.in[1];
    HostTensor o = make(ot, out_shape);
    for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
      const bool c = at_broadcast(x, out_shape, i) != 0;
      o.data[static_cast<size_t>(i)] =
          round_to(ot, c ? at_broadcast(t, out_shape, i) : at_broadcast(f, out_shape, i));
    }
    return folded(o);
  }
  if (op == "aten.masked_fill.Scalar") {
    const double v = scalar_attr(e.n, "value");
    HostTensor o = make(ot, out_shape);
    for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i)
      o.data[static_cast<size_t>(i)] = round_to(
          ot, at_broadcast(*e.in[1], out_shape, i) != 0 ? v : x.data[static_cast<size_t>(i)]);
    return folded(o);
  }
  if (op == "aten.tril.default" || op == "aten.triu.default") {
    const int64_t diag = e.n.attr_int("diagonal");
    const int64_t rows = out_shape[out_shape.size() - 2], cols = out_shape.back();
    HostTensor o = x;
    for (size_t i = 0; i < o.data.size(); ++i) {
      const int64_t c = static_cast<int64_t>(i) % cols, r = (static_cast<int64_t>(i) / cols) % rows;
      const bool keep = op == "aten.tril.default" ? c - r <= diag : c - r >= diag;
      if (!keep) o.data[i] = 0;
    }
    return folded(o);
  }
  return not_mine();
}

// index_select along one dim.
Folded eval_index_select(const EvalArgs& e, const HostTensor& x) {
  const size_t rank = x.shape.size();
  const int64_t d = norm_dim(e.n.attr_int("dim"), rank);
  const HostTensor& idx = *e.in[1];
  int64_t inner = 1;
  for (size_t k = static_cast<size_t>(d) + 1; k < rank; ++k) inner *= x.shape[k];
  const int64_t len = rank ? x.shape[static_cast<size_t>(d)] : 1;
  const int64_t picks = static_cast<int64_t>(idx.data.size());
  HostTensor o = make(e.ot, e.out_shape);
  for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
    const int64_t in_i = i % inner, k = (i / inner) % picks, outer = i / inner / picks;
    int64_t j = static_cast<int64_t>(idx.data[static_cast<size_t>(k)]);
    if (j < 0) j += len;
    if (j < 0 || j >= len) return unfoldable();  // out of range: leave it to run time
    o.data[static_cast<size_t>(i)] = x.data[static_cast<size_t>((outer * len + j) * inner + in_i)];
  }
  return folded(o);
}

// Advanced indexing with adjacent index tensors (the form exported masks use).
Folded eval_index_tensor(const EvalArgs& e, const HostTensor& x) {
  std::vector<const HostTensor*> idx(e.in.begin() + 1, e.in.end());
  int first = -1, last = -1;
  Shape bshape;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (!idx[i]) continue;
    if (first < 0) first = static_cast<int>(i);
    last = static_cast<int>(i);
    bshape = first == static_cast<int>(i) ? idx[i]->shape : broadcast_shape(bshape, idx[i]->shape);
  }
  if (first < 0) return unfoldable();
  for (int i = first; i <= last; ++i)
    if (!idx[static_cast<size_t>(i)]) return unfoldable();
  const Shape st = strides_of(x.shape);
  HostTensor o = make(e.ot, e.out_shape);
  const int64_t bcount = count(bshape);
  int64_t before = 1, after = 1;
  for (int k = 0; k < first; ++k) before *= x.shape[static_cast<size_t>(k)];
  for (size_t k = static_cast<size_t>(last) + 1; k < x.shape.size(); ++k) after *= x.shape[k];
  for (int64_t i = 0; i < before; ++i)
    for (int64_t b = 0; b < bcount; ++b)
      for (int64_t c = 0; c < after; ++c) {
        int64_t off = 0, rem_a = i;
        for (int k = first - 1; k >= 0; --k) {
          off += (rem_a % x.shape[static_cast<size_t>(k)]) * st[static_cast<size_t>(k)];
          rem_a /= x.shape[static_cast<size_t>(k)];
        }
        for (int k = first; k <= last; ++k) {
          int64_t v = static_cast<int64_t>(at_broadcast(*idx[static_cast<size_t>(k)], bshape, b));
          const int64_t dim = x.shape[static_cast<size_t>(k)];
          if (v < 0) v += dim;
          if (v < 0 || v >= dim) return unfoldable();
          off += v * st[static_cast<size_t>(k)];
        }
        int64_t rem_c = c;
        for (size_t k = x.shape.size(); k-- > static_cast<size_t>(last) + 1;) {
          off += (rem_c % x.shape[k]) * st[k];
          rem_c /= x.shape[k];
        }
        o.data[static_cast<size_t>((i * bcount + b) * after + c)] =
            x.data[static_cast<size_t>(off)];
      }
  return folded(o);
}

// Gathers by index tensors: index_select, index.Tensor.
Folded eval_indexing(const EvalArgs& e, const HostTensor& x) {
  if (e.op == "aten.index_select.default") return eval_index_select(e, x);
  if (e.op == "aten.index.Tensor") return eval_index_tensor(e, x);
  return not_mine();
}

// Sum (or mean) over `dim` (all dims when empty or None), accumulated in double and rounded
// once to the result dtype; keepdim keeps the reduced dims as 1.
Folded eval_sum(const EvalArgs& e, const HostTensor& x) {
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, false);
  const ir::Attribute* da = e.n.attr("dim");
  std::vector<int64_t> dims;
  if (da && !std::holds_alternative<ir::NoneAttr>(*da)) dims = e.n.attr_ints("dim");
  if (dims.empty())
    reduced.assign(rank, true);
  else
    for (int64_t d : dims) reduced[static_cast<size_t>(norm_dim(d, rank))] = true;
  std::vector<int64_t> kept;  // result shape with reduced dims as 1
  int64_t count = 1;
  for (size_t k = 0; k < rank; ++k) {
    kept.push_back(reduced[k] ? 1 : x.shape[k]);
    if (reduced[k]) count *= x.shape[k];
  }
  int64_t total = 1;
  for (int64_t d : kept) total *= d;
  std::vector<double> acc(static_cast<size_t>(total), 0.0);
  for (size_t i = 0; i < x.data.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0, stride = 1;
    for (size_t k = rank; k-- > 0;) {
      const int64_t c = rem % x.shape[k];
      rem /= x.shape[k];
      if (!reduced[k]) o += c * stride;
      stride *= kept[k];
    }
    acc[static_cast<size_t>(o)] += x.data[i];
  }
  HostTensor o = make(e.ot, e.out_shape);
  if (o.data.size() != acc.size()) return unfoldable();
  for (size_t i = 0; i < acc.size(); ++i)
    o.data[i] =
        round_to(e.ot, e.op == "aten.mean.dim" ? acc[i] / static_cast<double>(count) : acc[i]);
  return folded(o);
}

Folded eval_cumsum(const EvalArgs& e, const HostTensor& x) {
  const int64_t d = norm_dim(e.n.attr_int("dim"), x.shape.size());
  HostTensor o = make(e.ot, e.out_shape);
  int64_t inner = 1;
  for (size_t k = static_cast<size_t>(d) + 1; k < x.shape.size(); ++k) inner *= x.shape[k];
  const int64_t len = x.shape.empty() ? 1 : x.shape[static_cast<size_t>(d)];
  for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
    const int64_t pos = (i / inner) % len;
    o.data[static_cast<size_t>(i)] =
        round_to(e.ot, x.data[static_cast<size_t>(i)] +
                           (pos > 0 ? o.data[static_cast<size_t>(i - inner)] : 0.0));
  }
  return folded(o);
}

// Concatenate prepend/x/append along dim, then take n forward differences.
Folded eval_diff(const EvalArgs& e, const HostTensor& x) {
  const ir::DType ot = e.ot;
  const int64_t d = norm_dim(e.n.attr_int("dim"), x.shape.size());
  std::vector<const HostTensor*> parts;
  if (e.in.size() > 1 && e.in[1]) parts.push_back(e.in[1]);
  parts.push_back(&x);
  if (e.in.size() > 2 && e.in[2]) parts.push_back(e.in[2]);
  Shape cat_shape = x.shape;
  int64_t len = 0;
  for (const HostTensor* p : parts) len += p->shape[static_cast<size_t>(d)];
  cat_shape[static_cast<size_t>(d)] = len;
  int64_t inner = 1, outer = 1;
  for (size_t k = static_cast<size_t>(d) + 1; k < x.shape.size(); ++k) inner *= x.shape[k];
  for (size_t k = 0; k < static_cast<size_t>(d); ++k) outer *= x.shape[k];
  HostTensor cur = make(x.dtype, cat_shape);
  int64_t at = 0;
  for (const HostTensor* p : parts) {
    const int64_t pd = p->shape[static_cast<size_t>(d)];
    for (int64_t i = 0; i < outer; ++i)
      for (int64_t b = 0; b < pd * inner; ++b)
        cur.data[static_cast<size_t>(i * len * inner + at * inner + b)] =
            p->data[static_cast<size_t>(i * pd * inner + b)];
    at += pd;
  }
  for (int64_t step = 0; step < e.n.attr_int("n"); ++step) {
    Shape s2 = cur.shape;
    const int64_t l = s2[static_cast<size_t>(d)];
    if (l == 0) break;
    s2[static_cast<size_t>(d)] = l - 1;
    HostTensor next = make(ot, s2);
    for (int64_t j = 0; j < outer; ++j)
      for (int64_t i = 0; i < l - 1; ++i)
        for (int64_t b = 0; b < inner; ++b) {
          const double hi = cur.data[static_cast<size_t>((j * l + i + 1) * inner + b)];
          const double lo = cur.data[static_cast<size_t>((j * l + i) * inner + b)];
          next.data[static_cast<size_t>((j * (l - 1) + i) * inner + b)] =
              ot == ir::DType::boolean ? double(hi != lo) : round_to(ot, hi - lo);
        }
    cur = std::move(next);
  }
  if (cur.shape != e.out_shape) return unfoldable();
  return folded(cur);
}

Folded eval_any_all(const EvalArgs& e, const HostTensor& x) {
  const int64_t d = norm_dim(e.n.attr_int("dim"), x.shape.size());
  int64_t inner = 1;
  for (size_t k = static_cast<size_t>(d) + 1; k < x.shape.size(); ++k) inner *= x.shape[k];
  const int64_t len = x.shape[static_cast<size_t>(d)];
  HostTensor o = make(e.ot, e.out_shape, e.op == "aten.all.dim" ? 1 : 0);
  for (int64_t i = 0; i < static_cast<int64_t>(x.data.size()); ++i) {
    const int64_t oi = (i / (inner * len)) * inner + i % inner;
    const bool v = x.data[static_cast<size_t>(i)] != 0;
    double& r = o.data[static_cast<size_t>(oi)];
    r = e.op == "aten.any.dim" ? double(r != 0 || v) : double(r != 0 && v);
  }
  return folded(o);
}

// Reductions and scans along dims: sum, mean, cumsum, diff, any, all.
Folded eval_reduction(const EvalArgs& e, const HostTensor& x) {
  const std::string& op = e.op;
  if (op == "aten.sum.dim_IntList" || op == "aten.mean.dim") return eval_sum(e, x);
  if (op == "aten.cumsum.default") return eval_cumsum(e, x);
  if (op == "aten.diff.default") return eval_diff(e, x);
  if (op == "aten.any.dim" || op == "aten.all.dim") return eval_any_all(e, x);
  return not_mine();
}

bool is_unsupported_dtype(ir::DType t) {
  return ir::is_complex(t) || t == ir::DType::f8e4m3fn || t == ir::DType::f8e5m2;
}

}  // namespace

// Dispatches to the family evaluators; each op belongs to at most one family.
std::optional<std::vector<HostTensor>> evaluate(const ir::Node& n,
                                                const std::vector<const HostTensor*>& in) {
  if (n.outputs().size() != 1) return std::nullopt;
  const ir::Value* out_v = n.output();
  auto out_shape = static_shape(out_v->shape());
  if (!out_shape) return std::nullopt;
  const ir::DType ot = out_v->dtype();
  if (is_unsupported_dtype(ot)) return std::nullopt;
  for (const HostTensor* t : in)
    if (t && is_unsupported_dtype(t->dtype)) return std::nullopt;
  const EvalArgs args{n, n.op(), in, *out_shape, ot};
  Folded f = eval_creation(args);
  if (!f.matched) {
    // Everything else reads its first operand.
    if (in.empty() || !in[0]) return std::nullopt;
    for (auto* family : {&eval_data_movement, &eval_binary, &eval_unary, &eval_selection,
                         &eval_indexing, &eval_reduction}) {
      f = family(args, *in[0]);
      if (f.matched) break;
    }
  }
  if (!f.value) return std::nullopt;
  return std::vector<HostTensor>{std::move(*f.value)};
}

}  // namespace neuronc::passes
