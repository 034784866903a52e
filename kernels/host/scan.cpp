// Host scan kernels: cumsum, cumprod (int64 math for integer outputs, double otherwise) and
// diff (n-th forward difference with optional prepend/append; logical xor for bool).
#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

template <bool Prod>
Status cumulative(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", 0), x->rank()));
  HostTensor& o = c.output(0);
  if (o.shape != x->shape)
    return c.error("output shape " + shape_str(o.shape) + ", expected " + shape_str(x->shape));
  NEURONC_RETURN_IF_ERROR_(c.expect_dtype_arg(o));
  if (o.dtype == TensorDType::c64 || x->dtype == TensorDType::c64)
    return c.error("complex tensors are not supported here");
  if (c.dry_run()) return Status::ok();
  int64_t outer = 1, inner = 1;
  const int64_t n = x->rank() ? x->shape[d] : 1;
  for (int64_t i = 0; i < d; ++i) outer *= x->shape[i];
  for (int64_t i = d + 1; i < x->rank(); ++i) inner *= x->shape[i];
  if (dtype_is_integral(o.dtype)) {
    auto v = to_int64(*x);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t b = 0; b < inner; ++b) {
        int64_t acc = Prod ? 1 : 0;
        for (int64_t k = 0; k < n; ++k) {
          int64_t& e = v[(a * n + k) * inner + b];
          acc = Prod ? acc * e : acc + e;
          e = acc;
        }
      }
    from_int64(o, v);
  } else {
    auto v = to_double(*x);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t b = 0; b < inner; ++b) {
        double acc = Prod ? 1 : 0;
        for (int64_t k = 0; k < n; ++k) {
          double& e = v[(a * n + k) * inner + b];
          acc = Prod ? acc * e : acc + e;
          e = acc;
        }
      }
    from_double(o, v);
  }
  return Status::ok();
}

// diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)
Status diff(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->rank() == 0) return c.error("diff needs rank >= 1");
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", -1), x->rank()));
  const int64_t n = c.get_int("n", 1);
  if (n < 0) return c.error("n is " + std::to_string(n) + ", expected >= 0");
  std::vector<const HostTensor*> parts;
  for (const char* name : {"prepend", "self", "append"})
    if (const HostTensor* t = c.tensor(name)) {
      if (t->rank() != x->rank() || t->dtype != x->dtype)
        return c.error(std::string(name) + " is " + dtype_str(t->dtype) + shape_str(t->shape) +
                       ", expected " + dtype_str(x->dtype) + " of rank " +
                       std::to_string(x->rank()));
      for (int64_t i = 0; i < x->rank(); ++i)
        if (i != d && t->shape[i] != x->shape[i])
          return c.error(std::string(name) + " shape " + shape_str(t->shape) + " differs from " +
                         shape_str(x->shape) + " outside dim " + std::to_string(d));
      parts.push_back(t);
    }
  int64_t len = 0;
  for (const HostTensor* t : parts) len += t->shape[d];
  std::vector<int64_t> shape = x->shape;
  shape[d] = std::max<int64_t>(len - n, 0);
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, shape));
  if (c.dry_run()) return Status::ok();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x->shape[i];
  for (int64_t i = d + 1; i < x->rank(); ++i) inner *= x->shape[i];
  const bool integral = dtype_is_integral(x->dtype);
  const bool boolean = x->dtype == TensorDType::boolean;
  // Concatenate along d into [outer, len, inner].
  std::vector<double> fv;
  std::vector<int64_t> iv;
  if (integral)
    iv.resize(outer * len * inner);
  else
    fv.resize(outer * len * inner);
  int64_t at = 0;
  for (const HostTensor* t : parts) {
    const int64_t m = t->shape[d];
    std::vector<double> tf;
    std::vector<int64_t> ti;
    if (integral)
      ti = to_int64(*t);
    else
      tf = to_double(*t);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t k = 0; k < m; ++k)
        for (int64_t b = 0; b < inner; ++b) {
          const int64_t src = (a * m + k) * inner + b, dst = (a * len + at + k) * inner + b;
          if (integral)
            iv[dst] = ti[src];
          else
            fv[dst] = tf[src];
        }
    at += m;
  }
  int64_t cur = len;
  for (int64_t step = 0; step < n && cur > 0; ++step) {
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t k = 0; k + 1 < cur; ++k)
        for (int64_t b = 0; b < inner; ++b) {
          const int64_t i0 = (a * len + k) * inner + b, i1 = i0 + inner;
          if (boolean)
            iv[i0] = (iv[i1] != 0) != (iv[i0] != 0);
          else if (integral)
            iv[i0] = iv[i1] - iv[i0];
          else
            fv[i0] = fv[i1] - fv[i0];
        }
    --cur;
  }
  // Compact [outer, len, inner] -> [outer, shape[d], inner].
  const int64_t m = shape[d];
  std::vector<double> of;
  std::vector<int64_t> oi;
  if (integral)
    oi.resize(outer * m * inner);
  else
    of.resize(outer * m * inner);
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t k = 0; k < m; ++k)
      for (int64_t b = 0; b < inner; ++b) {
        const int64_t src = (a * len + k) * inner + b, dst = (a * m + k) * inner + b;
        if (integral)
          oi[dst] = iv[src];
        else
          of[dst] = fv[src];
      }
  if (integral)
    from_int64(c.output(0), oi);
  else
    from_double(c.output(0), of);
  return Status::ok();
}

}  // namespace

void register_scan_kernels(KernelTable& t) {
  t.add("aten.cumsum.default", cumulative<false>);
  t.add("aten.cumprod.default", cumulative<true>);
  t.add("aten.diff.default", diff);
}

}  // namespace neuronc::host
