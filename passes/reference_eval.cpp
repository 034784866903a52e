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

float bf16_round(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::bit_cast<float>((u | 0x00400000u) & 0xffff0000u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xffff0000u);
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
  switch (t) {
    case ir::DType::f64:
      return v;
    case ir::DType::f32:
      return static_cast<double>(static_cast<float>(v));
    case ir::DType::bf16:
      return static_cast<double>(bf16_round(static_cast<float>(v)));
    case ir::DType::f16:
      return static_cast<double>(static_cast<float>(static_cast<_Float16>(static_cast<float>(v))));
    case ir::DType::boolean:
      return v != 0 ? 1.0 : 0.0;
    case ir::DType::i64:
      return std::isfinite(v) ? std::trunc(v) : 0;
    case ir::DType::i32:
      return static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(std::trunc(v))));
    case ir::DType::i16:
      return static_cast<double>(static_cast<int16_t>(static_cast<int64_t>(std::trunc(v))));
    case ir::DType::i8:
      return static_cast<double>(static_cast<int8_t>(static_cast<int64_t>(std::trunc(v))));
    case ir::DType::u8:
      return static_cast<double>(static_cast<uint8_t>(static_cast<int64_t>(std::trunc(v))));
    default:
      return v;
  }
}

std::optional<HostTensor> read_constant(const ir::Value& v) {
  const ir::ConstantPayload* p = v.payload();
  if (!p) return std::nullopt;
  auto shape = static_shape(v.shape());
  if (!shape) return std::nullopt;
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
    double val = 0;
    switch (v.dtype()) {
      case ir::DType::f64: {
        double x;
        std::memcpy(&x, src, 8);
        val = x;
        break;
      }
      case ir::DType::f32: {
        float x;
        std::memcpy(&x, src, 4);
        val = x;
        break;
      }
      case ir::DType::bf16: {
        uint16_t x;
        std::memcpy(&x, src, 2);
        val = std::bit_cast<float>(static_cast<uint32_t>(x) << 16);
        break;
      }
      case ir::DType::f16: {
        _Float16 x;
        std::memcpy(&x, src, 2);
        val = static_cast<float>(x);
        break;
      }
      case ir::DType::i64: {
        int64_t x;
        std::memcpy(&x, src, 8);
        val = static_cast<double>(x);
        break;
      }
      case ir::DType::i32: {
        int32_t x;
        std::memcpy(&x, src, 4);
        val = x;
        break;
      }
      case ir::DType::i16: {
        int16_t x;
        std::memcpy(&x, src, 2);
        val = x;
        break;
      }
      case ir::DType::i8: {
        int8_t x;
        std::memcpy(&x, src, 1);
        val = x;
        break;
      }
      case ir::DType::u8:
      case ir::DType::boolean: {
        uint8_t x;
        std::memcpy(&x, src, 1);
        val = x;
        break;
      }
      default:
        return std::nullopt;
    }
    h.data[static_cast<size_t>(i)] = val;
  }
  return h;
}

std::vector<std::byte> encode(const HostTensor& t) {
  const size_t es = ir::dtype_size(t.dtype);
  std::vector<std::byte> out(t.data.size() * es);
  for (size_t i = 0; i < t.data.size(); ++i) {
    std::byte* dst = out.data() + i * es;
    const double v = t.data[i];
    switch (t.dtype) {
      case ir::DType::f64:
        std::memcpy(dst, &v, 8);
        break;
      case ir::DType::f32: {
        float x = static_cast<float>(v);
        std::memcpy(dst, &x, 4);
        break;
      }
      case ir::DType::bf16: {
        uint16_t x =
            static_cast<uint16_t>(std::bit_cast<uint32_t>(bf16_round(static_cast<float>(v))) >> 16);
        std::memcpy(dst, &x, 2);
        break;
      }
      case ir::DType::f16: {
        _Float16 x = static_cast<_Float16>(static_cast<float>(v));
        std::memcpy(dst, &x, 2);
        break;
      }
      case ir::DType::i64: {
        int64_t x = static_cast<int64_t>(v);
        std::memcpy(dst, &x, 8);
        break;
      }
      case ir::DType::i32: {
        int32_t x = static_cast<int32_t>(v);
        std::memcpy(dst, &x, 4);
        break;
      }
      case ir::DType::i16: {
        int16_t x = static_cast<int16_t>(v);
        std::memcpy(dst, &x, 2);
        break;
      }
      case ir::DType::i8: {
        int8_t x = static_cast<int8_t>(v);
        std::memcpy(dst, &x, 1);
        break;
      }
      case ir::DType::u8:
      case ir::DType::boolean: {
        uint8_t x = static_cast<uint8_t>(v);
        std::memcpy(dst, &x, 1);
        break;
      }
      default:
        break;
    }
  }
  return out;
}

std::optional<std::vector<HostTensor>> evaluate(const ir::Node& n,
                                                const std::vector<const HostTensor*>& in) {
  const std::string& op = n.op();
  if (n.outputs().size() != 1) return std::nullopt;
  const ir::Value* out_v = n.output();
  auto out_shape_opt = static_shape(out_v->shape());
  if (!out_shape_opt) return std::nullopt;
  const Shape out_shape = *out_shape_opt;
  const ir::DType ot = out_v->dtype();
  if (ir::is_complex(ot) || ot == ir::DType::f8e4m3fn || ot == ir::DType::f8e5m2)
    return std::nullopt;
  for (const HostTensor* t : in) {
    if (t && (ir::is_complex(t->dtype) || t->dtype == ir::DType::f8e4m3fn ||
              t->dtype == ir::DType::f8e5m2))
      return std::nullopt;
  }
  auto one = [](HostTensor t) { return std::vector<HostTensor>{std::move(t)}; };

  // Creation.
  if (op == "aten.arange.default" || op == "aten.arange.start" || op == "aten.arange.start_step") {
    const double start = op == "aten.arange.default" ? 0.0 : scalar_attr(n, "start");
    const double step = op == "aten.arange.start_step" ? scalar_attr(n, "step") : 1.0;
    HostTensor o = make(ot, out_shape);
    for (size_t i = 0; i < o.data.size(); ++i)
      o.data[i] = round_to(ot, start + step * static_cast<double>(i));
    return one(o);
  }
  if (op == "aten.full.default" || op == "aten.new_full.default" ||
      op == "aten.full_like.default" || op == "aten.fill.Scalar") {
    const char* name = op == "aten.fill.Scalar" ? "value" : "fill_value";
    return one(make(ot, out_shape, round_to(ot, scalar_attr(n, name))));
  }
  if (op == "aten.zeros.default" || op == "aten.new_zeros.default" ||
      op == "aten.zeros_like.default")
    return one(make(ot, out_shape, 0));
  if (op == "aten.ones.default" || op == "aten.new_ones.default" || op == "aten.ones_like.default")
    return one(make(ot, out_shape, 1));
  if (op == "aten.scalar_tensor.default") return one(scalar(ot, scalar_attr(n, "s")));

  // Everything else reads its first operand.
  if (in.empty() || !in[0]) return std::nullopt;
  const HostTensor& x = *in[0];

  if (op == "aten._to_copy.default" || op == "aten.clone.default" || op == "aten.alias.default" ||
      op == "aten.lift_fresh_copy.default" || op == "aten.contiguous.default") {
    return one(unary(x, ot, [](double v) { return v; }));
  }
  if (op == "aten.view.default" || op == "aten.reshape.default" ||
      op == "aten._unsafe_view.default" || op == "aten.unsqueeze.default" ||
      op == "aten.squeeze.dim" || op == "aten.squeeze.dims" || op == "aten.flatten.using_ints" ||
      op == "aten.unflatten.int") {
    HostTensor o = x;
    o.shape = out_shape;
    return one(o);
  }
  if (op == "aten.permute.default") {
    const std::vector<int64_t> dims = n.attr_ints("dims");
    const Shape st = strides_of(x.shape);
    Shape ps;
    for (int64_t d : dims) ps.push_back(st[static_cast<size_t>(norm_dim(d, x.shape.size()))]);
    return one(gather_view(x, out_shape, ps, 0));
  }
  if (op == "aten.expand.default") {
    const Shape st = strides_of(x.shape);
    Shape es(out_shape.size(), 0);
    const size_t lead = out_shape.size() - x.shape.size();
    for (size_t k = 0; k < x.shape.size(); ++k) es[lead + k] = x.shape[k] == 1 ? 0 : st[k];
    return one(gather_view(x, out_shape, es, 0));
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
      return one(gather_view(x, out_shape, s2, idx * st[static_cast<size_t>(d)]));
    }
    int64_t start = n.attr_is_none("start") ? 0 : n.attr_int("start");
    if (start < 0) start += size;
    start = std::clamp<int64_t>(start, 0, size);
    Shape s2 = st;
    s2[static_cast<size_t>(d)] *= n.attr_int("step");
    return one(gather_view(x, out_shape, s2, start * st[static_cast<size_t>(d)]));
  }
  if (op == "aten.cat.default") {
    const int64_t d = norm_dim(n.attr_int("dim"), out_shape.size());
    HostTensor o = make(ot, out_shape);
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(d) + 1; k < out_shape.size(); ++k) inner *= out_shape[k];
    int64_t outer = 1;
    for (size_t k = 0; k < static_cast<size_t>(d); ++k) outer *= out_shape[k];
    int64_t at = 0;
    for (const HostTensor* t : in) {
      if (!t || t->shape.size() != out_shape.size()) continue;
      const int64_t td = t->shape[static_cast<size_t>(d)];
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t b = 0; b < td * inner; ++b)
          o.data[static_cast<size_t>(a * out_shape[static_cast<size_t>(d)] * inner + at * inner +
                                     b)] =
              round_to(ot, t->data[static_cast<size_t>(a * td * inner + b)]);
      at += td;
    }
    return one(o);
  }

  // Element-wise.
  auto other = [&](const char* attr) -> std::optional<HostTensor> {
    if (in.size() > 1 && in[1]) return *in[1];
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
  const size_t d1 = op.find('.'), d2 = op.rfind('.');
  const std::string base = op.substr(d1 + 1, d2 - d1 - 1);
  const std::string overload = op.substr(d2 + 1);
  for (const Bin& b : bins) {
    if (base != b.name) continue;
    const char* attr = overload == "Tensor_Scalar" ? "exponent" : "other";
    std::optional<HostTensor> y = other(attr);
    if (!y) return std::nullopt;
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
    return one(binary(x, *y, ot, f));
  }
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
  for (const Un& u : uns) {
    if (base != u.name) continue;
    // Float math is computed in the result's precision (fp32 for f32 results).
    return one(unary(x, ot, [&](double v) {
      return u.f(round_to(ot == ir::DType::f64 ? ot : ir::DType::f32, v));
    }));
  }
  if (op == "aten.clamp.default") {
    // clamp(x, min, max) = min(max(x, min), max); NaN stays NaN; either bound may be None.
    auto bound = [&](const char* name) -> std::optional<double> {
      const ir::Attribute* a = n.attr(name);
      if (!a || std::holds_alternative<ir::NoneAttr>(*a)) return std::nullopt;
      return scalar_attr(n, name);
    };
    const std::optional<double> lo = bound("min"), hi = bound("max");
    return one(unary(x, ot, [&](double v) {
      if (std::isnan(v)) return v;
      if (lo) v = std::max(v, *lo);
      if (hi) v = std::min(v, *hi);
      return v;
    }));
  }
  if (op == "aten.where.self" || op == "aten.where.ScalarOther" || op == "aten.where.ScalarSelf") {
    HostTensor a = op == "aten.where.ScalarSelf" ? scalar(ot, scalar_attr(n, "self")) : *in[1];
    HostTensor b = op == "aten.where.self"          ? *in[2]
                   : op == "aten.where.ScalarOther" ? scalar(ot, scalar_attr(n, "other"))
                                                    : *in[1];
    HostTensor o = make(ot, out_shape);
    for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
      const bool c = at_broadcast(x, out_shape, i) != 0;
      o.data[static_cast<size_t>(i)] =
          round_to(ot, c ? at_broadcast(a, out_shape, i) : at_broadcast(b, out_shape, i));
    }
    return one(o);
  }
  if (op == "aten.masked_fill.Scalar") {
    const double v = scalar_attr(n, "value");
    HostTensor o = make(ot, out_shape);
    for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i)
      o.data[static_cast<size_t>(i)] = round_to(
          ot, at_broadcast(*in[1], out_shape, i) != 0 ? v : x.data[static_cast<size_t>(i)]);
    return one(o);
  }
  if (op == "aten.tril.default" || op == "aten.triu.default") {
    const int64_t diag = n.attr_int("diagonal");
    const int64_t rows = out_shape[out_shape.size() - 2], cols = out_shape.back();
    HostTensor o = x;
    for (size_t i = 0; i < o.data.size(); ++i) {
      const int64_t c = static_cast<int64_t>(i) % cols, r = (static_cast<int64_t>(i) / cols) % rows;
      const bool keep = op == "aten.tril.default" ? c - r <= diag : c - r >= diag;
      if (!keep) o.data[i] = 0;
    }
    return one(o);
  }
  if (op == "aten.index_select.default") {
    const size_t rank = x.shape.size();
    const int64_t d = norm_dim(n.attr_int("dim"), rank);
    const HostTensor& idx = *in[1];
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(d) + 1; k < rank; ++k) inner *= x.shape[k];
    const int64_t len = rank ? x.shape[static_cast<size_t>(d)] : 1;
    const int64_t picks = static_cast<int64_t>(idx.data.size());
    HostTensor o = make(ot, out_shape);
    for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
      const int64_t in_i = i % inner, k = (i / inner) % picks, outer = i / inner / picks;
      int64_t j = static_cast<int64_t>(idx.data[static_cast<size_t>(k)]);
      if (j < 0) j += len;
      if (j < 0 || j >= len) return std::nullopt;  // out of range: leave it to run time
      o.data[static_cast<size_t>(i)] =
          x.data[static_cast<size_t>((outer * len + j) * inner + in_i)];
    }
    return one(o);
  }
  if (op == "aten.sum.dim_IntList" || op == "aten.mean.dim") {
    // Sum (or mean) over `dim` (all dims when empty or None), accumulated in double and rounded
    // once to the result dtype; keepdim keeps the reduced dims as 1.
    const size_t rank = x.shape.size();
    std::vector<bool> reduced(rank, false);
    const ir::Attribute* da = n.attr("dim");
    std::vector<int64_t> dims;
    if (da && !std::holds_alternative<ir::NoneAttr>(*da)) dims = n.attr_ints("dim");
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
    HostTensor o = make(ot, out_shape);
    if (o.data.size() != acc.size()) return std::nullopt;
    for (size_t i = 0; i < acc.size(); ++i)
      o.data[i] =
          round_to(ot, op == "aten.mean.dim" ? acc[i] / static_cast<double>(count) : acc[i]);
    return one(o);
  }
  if (op == "aten.cumsum.default") {
    const int64_t d = norm_dim(n.attr_int("dim"), x.shape.size());
    HostTensor o = make(ot, out_shape);
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(d) + 1; k < x.shape.size(); ++k) inner *= x.shape[k];
    const int64_t len = x.shape.empty() ? 1 : x.shape[static_cast<size_t>(d)];
    for (int64_t i = 0; i < static_cast<int64_t>(o.data.size()); ++i) {
      const int64_t pos = (i / inner) % len;
      o.data[static_cast<size_t>(i)] =
          round_to(ot, x.data[static_cast<size_t>(i)] +
                           (pos > 0 ? o.data[static_cast<size_t>(i - inner)] : 0.0));
    }
    return one(o);
  }
  if (op == "aten.diff.default") {
    // Concatenate prepend/x/append along dim, then take n forward differences.
    const int64_t d = norm_dim(n.attr_int("dim"), x.shape.size());
    std::vector<const HostTensor*> parts;
    if (in.size() > 1 && in[1]) parts.push_back(in[1]);
    parts.push_back(&x);
    if (in.size() > 2 && in[2]) parts.push_back(in[2]);
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
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t b = 0; b < pd * inner; ++b)
          cur.data[static_cast<size_t>(a * len * inner + at * inner + b)] =
              p->data[static_cast<size_t>(a * pd * inner + b)];
      at += pd;
    }
    for (int64_t step = 0; step < n.attr_int("n"); ++step) {
      Shape s2 = cur.shape;
      const int64_t l = s2[static_cast<size_t>(d)];
      if (l == 0) break;
      s2[static_cast<size_t>(d)] = l - 1;
      HostTensor next = make(ot, s2);
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t i = 0; i < l - 1; ++i)
          for (int64_t b = 0; b < inner; ++b) {
            const double hi = cur.data[static_cast<size_t>((a * l + i + 1) * inner + b)];
            const double lo = cur.data[static_cast<size_t>((a * l + i) * inner + b)];
            next.data[static_cast<size_t>((a * (l - 1) + i) * inner + b)] =
                ot == ir::DType::boolean ? double(hi != lo) : round_to(ot, hi - lo);
          }
      cur = std::move(next);
    }
    if (cur.shape != out_shape) return std::nullopt;
    return one(cur);
  }
  if (op == "aten.index.Tensor") {
    // Advanced indexing with adjacent index tensors (the form exported masks use).
    std::vector<const HostTensor*> idx(in.begin() + 1, in.end());
    int first = -1, last = -1;
    Shape bshape;
    for (size_t i = 0; i < idx.size(); ++i) {
      if (!idx[i]) continue;
      if (first < 0) first = static_cast<int>(i);
      last = static_cast<int>(i);
      bshape =
          first == static_cast<int>(i) ? idx[i]->shape : broadcast_shape(bshape, idx[i]->shape);
    }
    if (first < 0) return std::nullopt;
    for (int i = first; i <= last; ++i)
      if (!idx[static_cast<size_t>(i)]) return std::nullopt;
    const Shape st = strides_of(x.shape);
    HostTensor o = make(ot, out_shape);
    const size_t nb = bshape.size();
    const int64_t bcount = count(bshape);
    int64_t before = 1, after = 1;
    for (int k = 0; k < first; ++k) before *= x.shape[static_cast<size_t>(k)];
    for (size_t k = static_cast<size_t>(last) + 1; k < x.shape.size(); ++k) after *= x.shape[k];
    (void)nb;
    for (int64_t a = 0; a < before; ++a)
      for (int64_t b = 0; b < bcount; ++b)
        for (int64_t c = 0; c < after; ++c) {
          int64_t off = 0, rem_a = a;
          for (int k = first - 1; k >= 0; --k) {
            off += (rem_a % x.shape[static_cast<size_t>(k)]) * st[static_cast<size_t>(k)];
            rem_a /= x.shape[static_cast<size_t>(k)];
          }
          for (int k = first; k <= last; ++k) {
            int64_t v = static_cast<int64_t>(at_broadcast(*idx[static_cast<size_t>(k)], bshape, b));
            const int64_t dim = x.shape[static_cast<size_t>(k)];
            if (v < 0) v += dim;
            if (v < 0 || v >= dim) return std::nullopt;
            off += v * st[static_cast<size_t>(k)];
          }
          int64_t rem_c = c;
          for (size_t k = x.shape.size(); k-- > static_cast<size_t>(last) + 1;) {
            off += (rem_c % x.shape[k]) * st[k];
            rem_c /= x.shape[k];
          }
          o.data[static_cast<size_t>((a * bcount + b) * after + c)] =
              x.data[static_cast<size_t>(off)];
        }
    return one(o);
  }
  if (op == "aten.any.dim" || op == "aten.all.dim") {
    const int64_t d = norm_dim(n.attr_int("dim"), x.shape.size());
    int64_t inner = 1;
    for (size_t k = static_cast<size_t>(d) + 1; k < x.shape.size(); ++k) inner *= x.shape[k];
    const int64_t len = x.shape[static_cast<size_t>(d)];
    HostTensor o = make(ot, out_shape, op == "aten.all.dim" ? 1 : 0);
    for (int64_t i = 0; i < static_cast<int64_t>(x.data.size()); ++i) {
      const int64_t oi = (i / (inner * len)) * inner + i % inner;
      const bool v = x.data[static_cast<size_t>(i)] != 0;
      double& r = o.data[static_cast<size_t>(oi)];
      r = op == "aten.any.dim" ? double(r != 0 || v) : double(r != 0 && v);
    }
    return one(o);
  }
  return std::nullopt;
}

}  // namespace neuronc::passes
