// Host sorting kernels: sort, argsort, topk. Stable, with NaN ordered above every number (as
// PyTorch does), so results are deterministic even with ties. Indices are int64.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

// Sorts each line along `d`; writes the first `k` entries of each line.
Status sort_lines(const HostOpContext& c, const HostTensor& x, int64_t d, bool descending,
                  int64_t k, HostTensor* values, HostTensor* indices) {
  if (c.dry_run()) return Status::ok();
  const int64_t n = x.rank() ? x.shape[d] : 1;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x.shape[i];
  for (int64_t i = d + 1; i < x.rank(); ++i) inner *= x.shape[i];
  const std::vector<double> xv = to_double(x);
  std::vector<double> ov(static_cast<size_t>(outer * k * inner));
  std::vector<int64_t> oi(ov.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  auto less = [](double a, double b) {  // NaN is the largest
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
    return a < b;
  };
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; ++b) {
      auto at = [&](int64_t i) { return xv[(a * n + i) * inner + b]; };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        return descending ? less(at(j), at(i)) : less(at(i), at(j));
      });
      for (int64_t r = 0; r < k; ++r) {
        const size_t o = static_cast<size_t>((a * k + r) * inner + b);
        ov[o] = at(order[r]);
        oi[o] = order[r];
      }
    }
  if (values) {
    if (dtype_is_integral(values->dtype)) {
      std::vector<int64_t> iv(ov.begin(), ov.end());
      from_int64(*values, iv);
    } else {
      from_double(*values, ov);
    }
  }
  if (indices) from_int64(*indices, oi);
  return Status::ok();
}

// sort(self, dim=-1, descending=False) / sort.stable(self, *, stable, dim=-1, descending=False)
Status sort(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(2));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", -1), x->rank()));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, x->shape));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(1, TensorDType::i64, x->shape));
  if (x->dtype == TensorDType::c64) return c.error("complex tensors cannot be sorted");
  const int64_t n = x->rank() ? x->shape[d] : 1;
  return sort_lines(c, *x, d, c.get_bool("descending", false), n, &c.output(0), &c.output(1));
}

Status argsort(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", -1), x->rank()));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, TensorDType::i64, x->shape));
  if (x->dtype == TensorDType::c64) return c.error("complex tensors cannot be sorted");
  const int64_t n = x->rank() ? x->shape[d] : 1;
  return sort_lines(c, *x, d, c.get_bool("descending", false), n, nullptr, &c.output(0));
}

// topk(self, k, dim=-1, largest=True, sorted=True)
Status topk(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(2));
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", -1), x->rank()));
  const int64_t n = x->rank() ? x->shape[d] : 1;
  const int64_t k = c.get_int("k", 1);
  if (k < 0 || k > n)
    return c.error("k is " + std::to_string(k) + ", expected 0.." + std::to_string(n));
  std::vector<int64_t> shape = x->shape;
  if (!shape.empty()) shape[d] = k;
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, shape));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(1, TensorDType::i64, shape));
  if (x->dtype == TensorDType::c64) return c.error("complex tensors cannot be sorted");
  return sort_lines(c, *x, d, c.get_bool("largest", true), k, &c.output(0), &c.output(1));
}

}  // namespace

void register_sort_kernels(KernelTable& t) {
  t.add("aten.sort.default", sort);
  t.add("aten.sort.stable", sort);
  t.add("aten.argsort.default", argsort);
  t.add("aten.argsort.stable", argsort);
  t.add("aten.topk.default", topk);
}

}  // namespace neuronc::host
