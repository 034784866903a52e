// Host reduction kernels: sum, mean, amax, amin, argmax, argmin over dim lists, and softmax /
// log_softmax along one dim. Accumulation in double (int64 for integer sums).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

enum class Red { sum, mean, max, min, argmax, argmin };

// Reduced-dim mask from the "dim" argument (all dims when absent or empty).
Result<std::vector<bool>> reduce_mask(const HostOpContext& c, const HostTensor& x) {
  std::vector<bool> mask(x.shape.size(), false);
  std::vector<int64_t> dims = c.get_ints("dim");
  if (dims.empty()) std::fill(mask.begin(), mask.end(), true);
  for (int64_t d : dims) {
    NEURONC_ASSIGN_OR_RETURN_(d, normalize_dim(c, d, x.rank()));
    if (x.rank()) mask[d] = true;
  }
  return mask;
}

// any.dim / all.dim(self, dim, keepdim=False): whether any / every element along dim is set.
template <bool kAll>
Status any_all(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  std::vector<int64_t> oshape;
  for (int64_t i = 0; i < x->rank(); ++i) {
    if (i != d)
      oshape.push_back(x->shape[i]);
    else if (c.get_bool("keepdim", false))
      oshape.push_back(1);
  }
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, TensorDType::boolean, oshape));
  if (c.dry_run()) return Status::ok();
  int64_t outer = 1, inner = 1;
  const int64_t n = x->rank() ? x->shape[d] : 1;
  for (int64_t i = 0; i < d; ++i) outer *= x->shape[i];
  for (int64_t i = d + 1; i < x->rank(); ++i) inner *= x->shape[i];
  const auto v = to_double(*x);
  std::vector<int64_t> out(static_cast<size_t>(outer * inner));
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; ++b) {
      bool acc = kAll;
      for (int64_t k = 0; k < n; ++k) {
        const bool set = v[static_cast<size_t>((a * n + k) * inner + b)] != 0;
        acc = kAll ? acc && set : acc || set;
      }
      out[static_cast<size_t>(a * inner + b)] = acc;
    }
  from_int64(c.output(0), out);
  return Status::ok();
}

template <Red R>
Status reduce(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->dtype == TensorDType::c64) return c.error("complex tensors are not supported here");
  NEURONC_ASSIGN_OR_RETURN_(std::vector<bool> mask, reduce_mask(c, *x));
  const bool keep = c.get_bool("keepdim", false);
  std::vector<int64_t> oshape;
  for (size_t i = 0; i < x->shape.size(); ++i) {
    if (!mask[i])
      oshape.push_back(x->shape[i]);
    else if (keep)
      oshape.push_back(1);
  }
  const HostTensor& o = c.output(0);
  if (o.shape != oshape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(oshape));
  const bool arg = R == Red::argmax || R == Red::argmin;
  if (arg && o.dtype != TensorDType::i64)
    return c.error("output dtype " + dtype_str(o.dtype) + ", expected i64");
  if ((R == Red::max || R == Red::min || arg) && x->numel() == 0)
    return c.error("cannot reduce an empty tensor with max/min");
  if (c.dry_run()) return Status::ok();
  // Output index of every input element.
  const auto xv = to_double(*x);
  std::vector<int64_t> kept_strides(x->shape.size(), 0);
  {
    int64_t s = 1;
    for (int64_t i = x->rank() - 1; i >= 0; --i)
      if (!mask[i]) {
        kept_strides[i] = s;
        s *= x->shape[i];
      }
  }
  const int64_t on = o.numel();
  std::vector<double> acc(static_cast<size_t>(on), R == Red::max || R == Red::argmax   ? -INFINITY
                                                   : R == Red::min || R == Red::argmin ? INFINITY
                                                                                       : 0.0);
  std::vector<int64_t> arg_at(static_cast<size_t>(on), -1), count(static_cast<size_t>(on), 0);
  std::vector<int64_t> pos(x->shape.size(), 0);
  // Position along the reduced dims (flattened), for argmax/argmin.
  for (int64_t k = 0; k < x->numel(); ++k) {
    int64_t oi = 0, ri = 0;
    for (size_t i = 0; i < pos.size(); ++i) {
      oi += pos[i] * kept_strides[i];
      if (mask[i]) ri = ri * x->shape[i] + pos[i];
    }
    const double v = xv[k];
    double& a = acc[oi];
    switch (R) {
      case Red::sum:
      case Red::mean:
        a += v;
        break;
      case Red::max:
        if (std::isnan(v) || v > a) a = std::isnan(a) ? a : v;
        break;
      case Red::min:
        if (std::isnan(v) || v < a) a = std::isnan(a) ? a : v;
        break;
      case Red::argmax:
        if (arg_at[oi] < 0 || (!std::isnan(a) && (std::isnan(v) || v > a))) a = v, arg_at[oi] = ri;
        break;
      case Red::argmin:
        if (arg_at[oi] < 0 || (!std::isnan(a) && (std::isnan(v) || v < a))) a = v, arg_at[oi] = ri;
        break;
    }
    ++count[oi];
    for (int64_t d = static_cast<int64_t>(pos.size()) - 1; d >= 0; --d) {
      if (++pos[d] < x->shape[d]) break;
      pos[d] = 0;
    }
  }
  HostTensor& out = c.output(0);
  if (arg) {
    from_int64(out, arg_at);
    return Status::ok();
  }
  if (R == Red::mean)
    for (int64_t i = 0; i < on; ++i)
      acc[i] = count[i] ? acc[i] / static_cast<double>(count[i]) : NAN;
  if (R == Red::sum && dtype_is_integral(out.dtype) && dtype_is_integral(x->dtype)) {
    const auto iv = to_int64(*x);  // exact integer sums
    std::vector<int64_t> s(static_cast<size_t>(on), 0);
    std::fill(pos.begin(), pos.end(), 0);
    for (int64_t k = 0; k < x->numel(); ++k) {
      int64_t oi = 0;
      for (size_t i = 0; i < pos.size(); ++i) oi += pos[i] * kept_strides[i];
      s[oi] += iv[k];
      for (int64_t d = static_cast<int64_t>(pos.size()) - 1; d >= 0; --d) {
        if (++pos[d] < x->shape[d]) break;
        pos[d] = 0;
      }
    }
    from_int64(out, s);
    return Status::ok();
  }
  from_double(out, acc);
  return Status::ok();
}

template <bool Log>
Status softmax(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", -1), x->rank()));
  HostTensor& o = c.output(0);
  if (o.shape != x->shape || !dtype_is_float(o.dtype) || !dtype_is_float(x->dtype))
    return c.error("output " + dtype_str(o.dtype) + shape_str(o.shape) + ", expected a float " +
                   shape_str(x->shape));
  if (c.dry_run()) return Status::ok();
  const int64_t n = x->rank() ? x->shape[d] : 1;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x->shape[i];
  for (int64_t i = d + 1; i < x->rank(); ++i) inner *= x->shape[i];
  auto v = to_double(*x);
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; ++b) {
      auto at = [&](int64_t i) -> double& { return v[(a * n + i) * inner + b]; };
      double m = -INFINITY;
      for (int64_t i = 0; i < n; ++i) m = std::max(m, at(i));
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(at(i) - m);
      for (int64_t i = 0; i < n; ++i)
        at(i) = Log ? at(i) - m - std::log(s) : std::exp(at(i) - m) / s;
    }
  from_double(o, v);
  return Status::ok();
}

}  // namespace

void register_reduction_kernels(KernelTable& t) {
  t.add("aten.sum.dim_IntList", reduce<Red::sum>);
  t.add("aten.sum.default", reduce<Red::sum>);
  t.add("aten.mean.dim", reduce<Red::mean>);
  t.add("aten.mean.default", reduce<Red::mean>);
  t.add("aten.amax.default", reduce<Red::max>);
  t.add("aten.amin.default", reduce<Red::min>);
  t.add("aten.argmax.default", reduce<Red::argmax>);
  t.add("aten.any.dim", any_all<false>);
  t.add("aten.all.dim", any_all<true>);
  t.add("aten.argmin.default", reduce<Red::argmin>);
  t.add("aten._softmax.default", softmax<false>);
  t.add("aten.softmax.int", softmax<false>);
  t.add("aten._log_softmax.default", softmax<true>);
  t.add("aten.log_softmax.int", softmax<true>);
}

}  // namespace neuronc::host
