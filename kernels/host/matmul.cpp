// Host matmul kernels (fallback only; the device runs these normally): mm, bmm, addmm, linear,
// matmul (torch.matmul's vectors and broadcast batch dims), baddbmm.
// Double accumulation, one rounding to the output dtype.
#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

// out[b] = alpha * a[b] @ w[b]^(T if transposed) + beta * bias (broadcast to [M, N]).
Status gemm(const HostOpContext& c, const HostTensor& a, const HostTensor& w, bool w_transposed,
            const HostTensor* bias, double alpha, double beta) {
  const bool batched = a.rank() == 3;
  if ((a.rank() != 2 && !batched) || w.rank() != a.rank())
    return c.error("operands " + shape_str(a.shape) + " and " + shape_str(w.shape) +
                   " are not 2-D (or 3-D batched) matrices");
  const int64_t B = batched ? a.shape[0] : 1;
  const int64_t M = a.shape[a.rank() - 2], K = a.shape[a.rank() - 1];
  const int64_t wk = w_transposed ? w.shape[w.rank() - 1] : w.shape[w.rank() - 2];
  const int64_t N = w_transposed ? w.shape[w.rank() - 2] : w.shape[w.rank() - 1];
  if (wk != K || (batched && w.shape[0] != B))
    return c.error("cannot multiply " + shape_str(a.shape) + " by " + shape_str(w.shape) +
                   (w_transposed ? "^T" : ""));
  std::vector<int64_t> shape = batched ? std::vector<int64_t>{B, M, N} : std::vector<int64_t>{M, N};
  if (bias) {
    const auto& s = bias->shape;
    const bool ok = s.empty() || (s.size() == 1 && (s[0] == N || s[0] == 1)) ||
                    (s.size() == 2 && (s[0] == M || s[0] == 1) && (s[1] == N || s[1] == 1));
    if (!ok)
      return c.error("bias shape " + shape_str(s) + " does not broadcast to " + shape_str(shape));
  }
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, a.dtype, shape));
  if (!dtype_is_float(a.dtype))
    return c.error("matmul of " + dtype_str(a.dtype) + " is not supported");
  if (c.dry_run()) return Status::ok();
  const auto av = to_double(a), wv = to_double(w);
  std::vector<double> bv;
  if (bias) bv = to_double(*bias);
  std::vector<double> out(static_cast<size_t>(B * M * N));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double wvk = w_transposed ? wv[(b * N + n) * K + k] : wv[(b * K + k) * N + n];
          s += av[(b * M + m) * K + k] * wvk;
        }
        double r = alpha * s;
        if (bias) {
          const auto& bs = bias->shape;
          const int64_t bi = bs.empty()       ? 0
                             : bs.size() == 1 ? (bs[0] == 1 ? 0 : n)
                                              : (bs[0] == 1 ? 0 : m) * bs[1] + (bs[1] == 1 ? 0 : n);
          r += beta * bv[static_cast<size_t>(bi)];
        }
        out[static_cast<size_t>((b * M + m) * N + n)] = r;
      }
  from_double(c.output(0), out);
  return Status::ok();
}

Status mm(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* a, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* b, c.required("mat2"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  return gemm(c, *a, *b, false, nullptr, 1, 0);
}

Status addmm(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* bias, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* a, c.required("mat1"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* b, c.required("mat2"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  return gemm(c, *a, *b, false, bias, c.get_float("alpha", 1), c.get_float("beta", 1));
}

// linear(input [.., K], weight [N, K], bias? [N]); leading dims are flattened.
Status linear(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("input"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* w, c.required("weight"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->rank() < 1 || w->rank() != 2)
    return c.error("linear needs input rank >= 1 and a 2-D weight, found " + shape_str(x->shape) +
                   " and " + shape_str(w->shape));
  HostTensor flat = *x;
  const int64_t K = x->shape.back();
  flat.shape = {K ? x->numel() / K : 0, K};
  std::vector<int64_t> oshape = x->shape;
  oshape.back() = w->shape[0];
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, oshape));
  HostTensor& o = c.output(0);
  const std::vector<int64_t> keep = o.shape;
  o.shape = {flat.shape[0], w->shape[0]};
  Status s = gemm(c, flat, *w, true, c.tensor("bias"), 1, 1);
  o.shape = keep;
  return s;
}

// Batched a [batch_a.., M, K] @ b [batch_b.., K, N] with the batch dims broadcast to `batch`.
std::vector<double> batched_product(const std::vector<double>& av, const std::vector<int64_t>& sa,
                                    const std::vector<double>& bv, const std::vector<int64_t>& sb,
                                    const std::vector<int64_t>& batch) {
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  const std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const std::vector<int64_t> ia = broadcast_index(ba, batch), ib = broadcast_index(bb, batch);
  std::vector<double> out(ia.size() * static_cast<size_t>(M * N), 0.0);
  for (size_t t = 0; t < ia.size(); ++t) {
    const double* pa = av.data() + ia[t] * M * K;
    const double* pb = bv.data() + ib[t] * K * N;
    double* po = out.data() + static_cast<int64_t>(t) * M * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        const double x = pa[m * K + k];
        for (int64_t n = 0; n < N; ++n) po[m * N + n] += x * pb[k * N + n];
      }
  }
  return out;
}

// matmul(self, other), torch.matmul: vectors get a unit dim (removed from the result), batch
// dims broadcast.
Status matmul(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* a, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* b, c.required("other"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (a->rank() == 0 || b->rank() == 0)
    return c.error("operands " + shape_str(a->shape) + " and " + shape_str(b->shape) +
                   " must have rank >= 1");
  if (!dtype_is_float(a->dtype) || b->dtype != a->dtype)
    return c.error("operands are " + dtype_str(a->dtype) + " and " + dtype_str(b->dtype) +
                   ", expected one float type");
  std::vector<int64_t> sa = a->shape, sb = b->shape;
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  if (sa.back() != sb[sb.size() - 2])
    return c.error("cannot multiply " + shape_str(a->shape) + " by " + shape_str(b->shape) +
                   ": contraction dims " + std::to_string(sa.back()) + " and " +
                   std::to_string(sb[sb.size() - 2]));
  NEURONC_ASSIGN_OR_RETURN_(
      std::vector<int64_t> batch,
      broadcast_shapes(c, {sa.begin(), sa.end() - 2}, {sb.begin(), sb.end() - 2}));
  std::vector<int64_t> shape = batch;
  if (!a_vec) shape.push_back(sa[sa.size() - 2]);
  if (!b_vec) shape.push_back(sb.back());
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, a->dtype, shape));
  if (c.dry_run()) return Status::ok();
  from_double(c.output(0), batched_product(to_double(*a), sa, to_double(*b), sb, batch));
  return Status::ok();
}

// baddbmm(self, batch1 [B, M, K], batch2 [B, K, N], beta=1, alpha=1): beta * self (broadcast to
// [B, M, N]; ignored when beta is 0, as in PyTorch) + alpha * batch1 @ batch2.
Status baddbmm(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* self, c.required("self"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* a, c.required("batch1"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* b, c.required("batch2"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (a->rank() != 3 || b->rank() != 3 || a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1])
    return c.error("expected batch1 [B, M, K] and batch2 [B, K, N], found " + shape_str(a->shape) +
                   " and " + shape_str(b->shape));
  if (!dtype_is_float(a->dtype) || b->dtype != a->dtype)
    return c.error("batch1 and batch2 are " + dtype_str(a->dtype) + " and " + dtype_str(b->dtype) +
                   ", expected one float type");
  const std::vector<int64_t> shape = {a->shape[0], a->shape[1], b->shape[2]};
  NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> full, broadcast_shapes(c, self->shape, shape));
  if (full != shape)
    return c.error("self " + shape_str(self->shape) + " does not broadcast to " + shape_str(shape));
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, a->dtype, shape));
  if (c.dry_run()) return Status::ok();
  const double alpha = c.get_float("alpha", 1), beta = c.get_float("beta", 1);
  std::vector<double> out =
      batched_product(to_double(*a), a->shape, to_double(*b), b->shape, {shape[0]});
  const std::vector<double> sv = to_double(*self);
  const std::vector<int64_t> si = broadcast_index(self->shape, shape);
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = alpha * out[k] + (beta == 0 ? 0.0 : beta * sv[si[k]]);
  from_double(c.output(0), out);
  return Status::ok();
}

// transformers::grouped_mm_fallback(input [S, K] sorted by expert, weight [E, K, N], offs [E]
// cumulative row counts): rows [offs[e-1], offs[e]) times weight[e]; rows past the last
// offset stay zero, as in transformers' own loop.
Status grouped_mm(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("input"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* w, c.required("weight"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* offs, c.required("offs"));
  if (x->rank() != 2 || w->rank() != 3 || offs->rank() != 1 || x->shape[1] != w->shape[1] ||
      offs->shape[0] != w->shape[0])
    return c.error("expected input [S, K], weight [E, K, N] and offs [E], found " +
                   shape_str(x->shape) + ", " + shape_str(w->shape) + " and " +
                   shape_str(offs->shape));
  const int64_t S = x->shape[0], K = x->shape[1], E = w->shape[0], N = w->shape[2];
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, x->dtype, {S, N}));
  if (c.dry_run()) return Status::ok();
  const std::vector<double> xv = to_double(*x), wv = to_double(*w);
  const std::vector<int64_t> ov = to_int64(*offs);
  std::vector<double> out(static_cast<size_t>(S * N), 0.0);
  int64_t start = 0;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t end = ov[static_cast<size_t>(e)];
    if (end < start || end > S)
      return c.error("offs[" + std::to_string(e) + "] = " + std::to_string(end) +
                     " is not a cumulative row count in [" + std::to_string(start) + ", " +
                     std::to_string(S) + "]");
    for (int64_t r = start; r < end; ++r)
      for (int64_t k = 0; k < K; ++k) {
        const double a = xv[static_cast<size_t>(r * K + k)];
        const double* wr = &wv[static_cast<size_t>((e * K + k) * N)];
        double* o = &out[static_cast<size_t>(r * N)];
        for (int64_t n = 0; n < N; ++n) o[n] += a * wr[n];
      }
    start = end;
  }
  from_double(c.output(0), out);
  return Status::ok();
}

}  // namespace

void register_matmul_kernels(KernelTable& t) {
  t.add("transformers.grouped_mm_fallback.default", grouped_mm);
  t.add("aten.mm.default", mm);
  t.add("aten.bmm.default", mm);
  t.add("aten.addmm.default", addmm);
  t.add("aten.linear.default", linear);
  t.add("aten.matmul.default", matmul);
  t.add("aten.baddbmm.default", baddbmm);
}

}  // namespace neuronc::host
