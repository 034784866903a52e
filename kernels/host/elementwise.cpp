// Host element-wise kernels: unary math and activations, binary arithmetic and comparison with
// PyTorch broadcasting, where, masked_fill, clamp, casts. Float math runs in double and rounds once
// to the output dtype; integer/bool outputs of integer inputs run in int64.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

using Unary = double (*)(double);

double fabs_(double x) {
  return std::fabs(x);
}

double gelu_erf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double sign(double x) {
  return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
}

template <Unary F>
Status unary(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const HostTensor& o = c.output(0);
  if (o.shape != x->shape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(x->shape));
  if (x->dtype == TensorDType::c64 || o.dtype == TensorDType::c64)
    return c.error("complex tensors are not supported here");
  if (c.dry_run()) return Status::ok();
  std::vector<double> v = to_double(*x);
  for (double& e : v) e = F(e);
  from_double(c.output(0), v);
  return Status::ok();
}

// abs: real -> real; complex64 -> its magnitude as f32 (torch.abs of a complex tensor).
Status abs_kernel(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->dtype != TensorDType::c64) return unary<fabs_>(c);
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, TensorDType::f32, x->shape));
  if (c.dry_run()) return Status::ok();
  const float* z = x->as<const float>();
  float* o = c.output(0).as<float>();
  for (int64_t i = 0; i < x->numel(); ++i) o[i] = std::hypot(z[2 * i], z[2 * i + 1]);
  return Status::ok();
}

Status gelu(const HostOpContext& c) {
  const auto approx = c.get_string("approximate").value_or("none");
  if (approx == "tanh") return unary<gelu_tanh>(c);
  if (approx != "none") return c.error("approximate is '" + approx + "', expected none or tanh");
  return unary<gelu_erf>(c);
}

enum class BinOp {
  add,
  sub,
  rsub,
  mul,
  div,
  max,
  min,
  pow,
  rem,
  fmod,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  land,
  lor,
  lxor
};

bool is_compare(BinOp op) {
  return op >= BinOp::eq;
}

template <BinOp Op>
Status binary(const HostOpContext& c) {
  // pow's schemas name the second operand `exponent`; every other binary op's is `other`.
  constexpr std::string_view kOther = Op == BinOp::pow ? "exponent" : "other";
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* a, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const HostTensor* b = c.tensor(kOther);
  const double scalar = c.get_float(kOther, 0.0);
  const double alpha = c.get_float("alpha", 1.0);
  std::vector<int64_t> shape = a->shape;
  if (b) {
    NEURONC_ASSIGN_OR_RETURN_(shape, broadcast_shapes(c, a->shape, b->shape));
  } else if (!c.has(kOther)) {
    return c.error("argument '" + std::string(kOther) + "' is missing");
  }
  HostTensor& o = c.output(0);
  if (o.shape != shape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(shape));
  if (is_compare(Op) && o.dtype != TensorDType::boolean)
    return c.error("output dtype " + dtype_str(o.dtype) + ", expected bool");
  if (a->dtype == TensorDType::c64 || (b && b->dtype == TensorDType::c64) ||
      o.dtype == TensorDType::c64)
    return c.error("complex tensors are not supported here");
  const auto mode = c.get_string("rounding_mode");
  if (mode && *mode != "trunc" && *mode != "floor")
    return c.error("rounding_mode is '" + *mode + "', expected trunc or floor");
  if (c.dry_run()) return Status::ok();
  const std::vector<double> av = to_double(*a);
  std::vector<double> bv;
  std::vector<int64_t> ai = broadcast_index(a->shape, shape), bi;
  if (b) {
    bv = to_double(*b);
    bi = broadcast_index(b->shape, shape);
  }
  // Integer semantics when nothing is floating.
  const bool integral = dtype_is_integral(o.dtype) && dtype_is_integral(a->dtype) &&
                        (!b || dtype_is_integral(b->dtype));
  std::vector<double> out(ai.size());
  for (size_t k = 0; k < ai.size(); ++k) {
    const double x = av[ai[k]];
    const double y = b ? bv[bi[k]] : scalar;
    double r = 0;
    switch (Op) {
      case BinOp::add:
        r = x + alpha * y;
        break;
      case BinOp::sub:
        r = x - alpha * y;
        break;
      case BinOp::rsub:  // other - alpha * self
        r = y - alpha * x;
        break;
      case BinOp::mul:
        r = x * y;
        break;
      case BinOp::div:
        r = x / y;
        if (mode == "trunc") r = std::trunc(r);
        if (mode == "floor") r = std::floor(r);
        break;
      case BinOp::max:
        r = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
        break;
      case BinOp::min:
        r = std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
        break;
      case BinOp::pow:
        r = std::pow(x, y);
        break;
      case BinOp::rem:  // Python's %: the divisor's sign (PyTorch: fmod, then shift by y)
        if (integral && y == 0) return c.error("integer remainder by zero");
        r = std::fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        break;
      case BinOp::fmod:  // C's fmod: the dividend's sign; exact
        if (integral && y == 0) return c.error("integer fmod by zero");
        r = std::fmod(x, y);
        break;
      case BinOp::eq:
        r = x == y;
        break;
      case BinOp::ne:
        r = x != y;
        break;
      case BinOp::lt:
        r = x < y;
        break;
      case BinOp::le:
        r = x <= y;
        break;
      case BinOp::gt:
        r = x > y;
        break;
      case BinOp::ge:
        r = x >= y;
        break;
      case BinOp::land:
        r = (x != 0) && (y != 0);
        break;
      case BinOp::lor:
        r = (x != 0) || (y != 0);
        break;
      case BinOp::lxor:
        r = (x != 0) != (y != 0);
        break;
    }
    if (integral && Op == BinOp::div && !mode) r = x / y;  // true division of ints is float
    out[k] = r;
  }
  from_double(o, out);
  return Status::ok();
}

enum class BitOp { and_, or_, xor_ };

// bitwise_and / bitwise_or / bitwise_xor (and Python's & | ^) on bool or integer tensors, with
// broadcasting; PyTorch refuses floating operands, and so does this.
template <BitOp Op>
Status bitwise(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* a, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* b, c.required("other"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> shape, broadcast_shapes(c, a->shape, b->shape));
  HostTensor& o = c.output(0);
  if (o.shape != shape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(shape));
  for (const HostTensor* t : {a, b, static_cast<const HostTensor*>(&o)})
    if (!dtype_is_integral(t->dtype))
      return c.error("bitwise operands are bool or integer tensors, found " + dtype_str(t->dtype));
  if (c.dry_run()) return Status::ok();
  const std::vector<int64_t> av = to_int64(*a), bv = to_int64(*b);
  const std::vector<int64_t> ai = broadcast_index(a->shape, shape),
                             bi = broadcast_index(b->shape, shape);
  std::vector<int64_t> out(ai.size());
  for (size_t k = 0; k < ai.size(); ++k) {
    const int64_t x = av[ai[k]], y = bv[bi[k]];
    out[k] = Op == BitOp::and_ ? (x & y) : Op == BitOp::or_ ? (x | y) : (x ^ y);
  }
  from_int64(o, out);
  return Status::ok();
}

// bitwise_not: logical not of a bool tensor, two's-complement not of an integer one.
Status bitwise_not(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  if (!dtype_is_integral(x->dtype))
    return c.error("bitwise_not takes a bool or integer tensor, found " + dtype_str(x->dtype));
  if (c.dry_run()) return Status::ok();
  std::vector<int64_t> v = to_int64(*x);
  for (int64_t& e : v) e = x->dtype == TensorDType::boolean ? int64_t{e == 0} : ~e;
  from_int64(c.output(0), v);
  return Status::ok();
}

// masked_fill.Scalar(self, mask, value) and masked_fill.Tensor (value a 0-dim tensor): value
// where the mask (broadcast to self) is set.
Status masked_fill(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* mask, c.required("mask"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const HostTensor* value = c.tensor("value");
  if (c.op_name() == "aten.masked_fill.Tensor" && (!value || value->rank() != 0))
    return c.error("value must be a 0-dim tensor, found " +
                   (value ? shape_str(value->shape) : std::string("none")));
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> shape, broadcast_shapes(c, x->shape, mask->shape));
  if (shape != x->shape)
    return c.error("mask " + shape_str(mask->shape) + " does not broadcast to self " +
                   shape_str(x->shape));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  if (x->dtype == TensorDType::c64) return c.error("complex tensors are not supported here");
  if (c.dry_run()) return Status::ok();
  HostTensor& o = c.output(0);
  const auto mv = to_double(*mask);
  const auto mi = broadcast_index(mask->shape, shape);
  if (dtype_is_integral(o.dtype)) {
    auto v = to_int64(*x);
    const std::optional<int64_t> iv =
        value ? std::optional(to_int64(*value)[0]) : c.opt_int("value");
    const int64_t fill = iv ? *iv : kernels::double_to_int64(c.get_float("value", 0));
    for (size_t k = 0; k < v.size(); ++k)
      if (mv[mi[k]] != 0) v[k] = fill;
    from_int64(o, v);
  } else {
    auto v = to_double(*x);
    const double fill = value ? to_double(*value)[0] : c.get_float("value", 0);
    for (size_t k = 0; k < v.size(); ++k)
      if (mv[mi[k]] != 0) v[k] = fill;
    from_double(o, v);
  }
  return Status::ok();
}

Status where(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* cond, c.required("condition"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const HostTensor* a = c.tensor("self");
  const HostTensor* b = c.tensor("other");
  std::vector<int64_t> shape = cond->shape;
  if (a) {
    NEURONC_ASSIGN_OR_RETURN_(shape, broadcast_shapes(c, shape, a->shape));
  }
  if (b) {
    NEURONC_ASSIGN_OR_RETURN_(shape, broadcast_shapes(c, shape, b->shape));
  }
  HostTensor& o = c.output(0);
  if (o.shape != shape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(shape));
  if (o.dtype == TensorDType::c64) return c.error("complex tensors are not supported here");
  if (c.dry_run()) return Status::ok();
  const auto cv = to_double(*cond);
  const auto ci = broadcast_index(cond->shape, shape);
  std::vector<double> av, bv;
  std::vector<int64_t> ai, bi;
  if (a) av = to_double(*a), ai = broadcast_index(a->shape, shape);
  if (b) bv = to_double(*b), bi = broadcast_index(b->shape, shape);
  const double as = c.get_float("self", 0), bs = c.get_float("other", 0);
  std::vector<double> out(ci.size());
  for (size_t k = 0; k < ci.size(); ++k)
    out[k] = cv[ci[k]] != 0 ? (a ? av[ai[k]] : as) : (b ? bv[bi[k]] : bs);
  from_double(o, out);
  return Status::ok();
}

Status clamp(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  if (c.dry_run()) return Status::ok();
  const bool has_lo = c.has("min"), has_hi = c.has("max");
  const double lo = c.get_float("min", 0), hi = c.get_float("max", 0);
  auto v = to_double(*x);
  for (double& e : v) {
    if (std::isnan(e)) continue;
    if (has_lo) e = std::max(e, lo);
    if (has_hi) e = std::min(e, hi);
  }
  from_double(c.output(0), v);
  return Status::ok();
}

// _to_copy / to.dtype / type conversions: same shape, output dtype from the plan.
Status cast(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  HostTensor& o = c.output(0);
  if (o.shape != x->shape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(x->shape));
  NEURONC_RETURN_IF_ERROR_(c.expect_dtype_arg(o));
  if (c.dry_run()) return Status::ok();
  if (o.dtype == TensorDType::c64 && x->dtype != TensorDType::c64) {
    // Real to complex, as PyTorch: the value is the real part, the imaginary part 0 (FNet's core
    // IR casts its input before _fft_c2c).
    const std::vector<double> v = to_double(*x);
    float* out = o.as<float>();
    for (size_t k = 0; k < v.size(); ++k) {
      out[2 * k] = static_cast<float>(v[k]);
      out[2 * k + 1] = 0;
    }
  } else if (x->dtype == TensorDType::c64 && o.dtype != TensorDType::c64) {
    // Complex to real keeps the real part (PyTorch warns that it discards the imaginary one).
    std::vector<double> v(static_cast<size_t>(x->numel()));
    const float* p = x->as<float>();
    for (size_t k = 0; k < v.size(); ++k) v[k] = p[2 * k];
    from_double(o, v);
  } else if (x->dtype == o.dtype) {
    if (x->nbytes()) std::memcpy(o.data, x->data, x->nbytes());
  } else if (dtype_is_integral(x->dtype) && dtype_is_integral(o.dtype)) {
    from_int64(o, to_int64(*x));
  } else if (x->dtype == TensorDType::f32 && dtype_is_float(o.dtype) &&
             o.dtype != TensorDType::f64) {
    // The common weight cast (f32 -> bf16 under --auto-cast), in one pass: the same rounding
    // as through double, since an f32 value is exact there.
    kernels::store_f32_n(o.data, o.dtype, x->as<const float>(), static_cast<size_t>(x->numel()));
  } else {
    from_double(o, to_double(*x));
  }
  return Status::ok();
}

double relu(double x) {
  return x > 0 ? x : (std::isnan(x) ? x : 0.0);
}
double neg(double x) {
  return -x;
}
double silu(double x) {
  return x * sigmoid(x);
}
double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
double reciprocal(double x) {
  return 1.0 / x;
}
double logical_not(double x) {
  return x == 0 ? 1.0 : 0.0;
}
double square(double x) {
  return x * x;
}
double round_even(double x) {
  return std::nearbyint(x);
}
double tanh_(double x) {
  return std::tanh(x);
}
double ceil_(double x) {
  return std::ceil(x);
}
double cos_(double x) {
  return std::cos(x);
}
double erf_(double x) {
  return std::erf(x);
}
double exp_(double x) {
  return std::exp(x);
}
double expm1_(double x) {
  return std::expm1(x);
}
double floor_(double x) {
  return std::floor(x);
}
double log_(double x) {
  return std::log(x);
}
double log1p_(double x) {
  return std::log1p(x);
}
double sin_(double x) {
  return std::sin(x);
}
double acos_(double x) {
  return std::acos(x);
}
double asin_(double x) {
  return std::asin(x);
}
double atan_(double x) {
  return std::atan(x);
}
double sinh_(double x) {
  return std::sinh(x);
}
double cosh_(double x) {
  return std::cosh(x);
}
double tan_(double x) {
  return std::tan(x);
}
double sqrt_(double x) {
  return std::sqrt(x);
}
double trunc_(double x) {
  return std::trunc(x);
}
// PyTorch's hard activations; NaN propagates through the clamps as in PyTorch.
double clamp_nan(double x, double lo, double hi) {
  return std::isnan(x) ? x : std::min(std::max(x, lo), hi);
}
double relu6(double x) {
  return clamp_nan(x, 0, 6);
}
double hardsigmoid(double x) {
  return clamp_nan(x + 3, 0, 6) / 6;
}
double hardswish(double x) {
  return x * clamp_nan(x + 3, 0, 6) / 6;
}

// hardtanh(self, min_val=-1, max_val=1): clamp to [min_val, max_val].
Status hardtanh(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  const double lo = c.get_float("min_val", -1), hi = c.get_float("max_val", 1);
  if (lo > hi)
    return c.error("min_val " + std::to_string(lo) + " is above max_val " + std::to_string(hi));
  if (c.dry_run()) return Status::ok();
  std::vector<double> v = to_double(*x);
  for (double& e : v) e = clamp_nan(e, lo, hi);
  from_double(c.output(0), v);
  return Status::ok();
}

// softplus(x, beta, threshold) = log1p(exp(beta x)) / beta, or x where beta x > threshold.
Status softplus(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, c.output(0).dtype, x->shape));
  if (!dtype_is_float(x->dtype)) return c.error("softplus needs a floating input");
  const double beta = c.get_float("beta", 1.0), threshold = c.get_float("threshold", 20.0);
  if (c.dry_run()) return Status::ok();
  std::vector<double> v = to_double(*x);
  for (double& e : v) e = e * beta > threshold ? e : std::log1p(std::exp(e * beta)) / beta;
  from_double(c.output(0), v);
  return Status::ok();
}

// histc(x, bins, min, max): equal-width bins over [min, max] (the data's range when min ==
// max); values outside are dropped, max itself falls in the last bin, NaN is ignored. The
// bin of a value is computed in float, as PyTorch's CPU kernel does for a float input.
Status histc(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  const int64_t bins = c.get_int("bins", 100);
  if (bins <= 0) return c.error("bins must be positive, found " + std::to_string(bins));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, {bins}));
  if (c.dry_run()) return Status::ok();
  const std::vector<double> v = to_double(*x);
  double lo = c.get_float("min", 0.0), hi = c.get_float("max", 0.0);
  if (lo == hi && !v.empty()) {
    lo = hi = v[0];
    for (double e : v)
      if (!std::isnan(e)) lo = std::min(lo, e), hi = std::max(hi, e);
  }
  if (lo == hi) lo -= 1, hi += 1;
  if (!(lo < hi)) return c.error("histc: max must be larger than min");
  std::vector<double> count(static_cast<size_t>(bins), 0.0);
  const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
  for (double e : v) {
    if (std::isnan(e) || e < lo || e > hi) continue;
    int64_t b = static_cast<int64_t>((static_cast<float>(e) - flo) / (fhi - flo) *
                                     static_cast<float>(bins));
    b = std::clamp<int64_t>(b, 0, bins - 1);
    count[static_cast<size_t>(b)] += 1;
  }
  from_double(c.output(0), count);
  return Status::ok();
}

}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  t.add("aten.softplus.default", softplus);
  t.add("aten.histc.default", histc);
  t.add("aten.abs.default", abs_kernel);
  t.add("aten.neg.default", unary<neg>);
  t.add("aten.relu.default", unary<relu>);
  t.add("aten.sigmoid.default", unary<sigmoid>);
  t.add("aten.tanh.default", unary<tanh_>);
  t.add("aten.exp.default", unary<exp_>);
  t.add("aten.log.default", unary<log_>);
  t.add("aten.log1p.default", unary<log1p_>);
  t.add("aten.expm1.default", unary<expm1_>);
  t.add("aten.sqrt.default", unary<sqrt_>);
  t.add("aten.rsqrt.default", unary<rsqrt>);
  t.add("aten.reciprocal.default", unary<reciprocal>);
  t.add("aten.sin.default", unary<sin_>);
  t.add("aten.acos.default", unary<acos_>);
  t.add("aten.asin.default", unary<asin_>);
  t.add("aten.atan.default", unary<atan_>);
  t.add("aten.sinh.default", unary<sinh_>);
  t.add("aten.cosh.default", unary<cosh_>);
  t.add("aten.tan.default", unary<tan_>);
  t.add("aten.cos.default", unary<cos_>);
  t.add("aten.erf.default", unary<erf_>);
  t.add("aten.sign.default", unary<sign>);
  t.add("aten.floor.default", unary<floor_>);
  t.add("aten.ceil.default", unary<ceil_>);
  t.add("aten.round.default", unary<round_even>);
  t.add("aten.trunc.default", unary<trunc_>);
  t.add("aten.square.default", unary<square>);
  t.add("aten.silu.default", unary<silu>);
  t.add("aten.gelu.default", gelu);
  t.add("aten.logical_not.default", unary<logical_not>);
  t.add("aten.relu6.default", unary<relu6>);
  t.add("aten.hardsigmoid.default", unary<hardsigmoid>);
  t.add("aten.hardswish.default", unary<hardswish>);
  t.add("aten.hardtanh.default", hardtanh);
  for (const char* s : {"Tensor", "Scalar"}) {
    const std::string suf = std::string(".") + s;
    t.add("aten.add" + suf, binary<BinOp::add>);
    t.add("aten.sub" + suf, binary<BinOp::sub>);
    t.add("aten.rsub" + suf, binary<BinOp::rsub>);
    t.add("aten.mul" + suf, binary<BinOp::mul>);
    t.add("aten.div" + suf, binary<BinOp::div>);
    t.add("aten.div" + suf + "_mode", binary<BinOp::div>);
    t.add("aten.pow.Tensor_" + std::string(s), binary<BinOp::pow>);
    t.add("aten.remainder" + suf, binary<BinOp::rem>);
    t.add("aten.fmod" + suf, binary<BinOp::fmod>);
    t.add("aten.eq" + suf, binary<BinOp::eq>);
    t.add("aten.ne" + suf, binary<BinOp::ne>);
    t.add("aten.lt" + suf, binary<BinOp::lt>);
    t.add("aten.le" + suf, binary<BinOp::le>);
    t.add("aten.gt" + suf, binary<BinOp::gt>);
    t.add("aten.ge" + suf, binary<BinOp::ge>);
  }
  t.add("aten.maximum.default", binary<BinOp::max>);
  t.add("aten.minimum.default", binary<BinOp::min>);
  t.add("aten.logical_and.default", binary<BinOp::land>);
  t.add("aten.logical_or.default", binary<BinOp::lor>);
  t.add("aten.logical_xor.default", binary<BinOp::lxor>);
  for (const char* op : {"aten.bitwise_and.Tensor", "aten.__and__.Tensor"})
    t.add(op, bitwise<BitOp::and_>);
  for (const char* op : {"aten.bitwise_or.Tensor", "aten.__or__.Tensor"})
    t.add(op, bitwise<BitOp::or_>);
  for (const char* op : {"aten.bitwise_xor.Tensor", "aten.__xor__.Tensor"})
    t.add(op, bitwise<BitOp::xor_>);
  t.add("aten.bitwise_not.default", bitwise_not);
  t.add("aten.masked_fill.Scalar", masked_fill);
  t.add("aten.masked_fill.Tensor", masked_fill);
  t.add("aten.where.self", where);
  t.add("aten.where.ScalarSelf", where);
  t.add("aten.where.ScalarOther", where);
  t.add("aten.clamp.default", clamp);
  t.add("aten._to_copy.default", cast);
  t.add("aten.to.dtype", cast);
  t.add("aten.clone.default", cast);
  t.add("aten.contiguous.default", cast);
  t.add("aten.alias.default", cast);
  t.add("aten.detach.default", cast);
}

}  // namespace neuronc::host
