// Host attention: aten.scaled_dot_product_attention as PyTorch's math backend computes it:
// softmax(q k^T * scale + mask) v over the last two dims, batch dims of key, value and mask
// broadcast to the query's, a bool mask keeping where true, is_causal keeping j <= i (top-left
// aligned), enable_gqa sharing each key/value head among Hq / Hk query heads, and a row whose
// every score is -inf giving zeros (ATen's _safe_softmax). In double, one rounding at the end.
#include <cmath>
#include <limits>

#include "kernels/host_kernel.h"

namespace neuronc::host {
namespace {

// For each flat index over `lead` (the query's batch dims), the flat batch index of a tensor
// whose batch dims are `dims` (each equal, 1, or with GQA a head count dividing the query's at
// `heads`).
std::vector<int64_t> lead_index(const std::vector<int64_t>& lead, const std::vector<int64_t>& dims,
                                int64_t heads) {
  int64_t n = 1;
  for (int64_t d : lead) n *= d;
  std::vector<int64_t> out(static_cast<size_t>(n));
  const std::vector<int64_t> st = contiguous_strides(dims);
  for (int64_t t = 0; t < n; ++t) {
    int64_t rem = t, off = 0;
    for (int64_t d = static_cast<int64_t>(lead.size()) - 1; d >= 0; --d) {
      const int64_t i = rem % lead[d];
      rem /= lead[d];
      if (dims[d] == 1) continue;
      off += (d == heads && dims[d] != lead[d] ? i / (lead[d] / dims[d]) : i) * st[d];
    }
    out[static_cast<size_t>(t)] = off;
  }
  return out;
}

// scaled_dot_product_attention(query [.., L, E], key [.., S, E], value [.., S, Ev],
//   attn_mask? (broadcast to [.., L, S]), dropout_p=0, is_causal=False, scale?, enable_gqa=False)
//   -> [.., L, Ev]
Status sdpa(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* q, c.required("query"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* k, c.required("key"));
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* v, c.required("value"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  const HostTensor* mask = c.tensor("attn_mask");
  const int64_t r = q->rank();
  if (r < 2 || k->rank() != r || v->rank() != r)
    return c.error("query, key and value " + shape_str(q->shape) + ", " + shape_str(k->shape) +
                   ", " + shape_str(v->shape) + ": expected one rank >= 2");
  if (!dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
    return c.error("query, key and value are " + dtype_str(q->dtype) + ", " + dtype_str(k->dtype) +
                   ", " + dtype_str(v->dtype) + ": expected one float type");
  const int64_t L = q->shape[r - 2], E = q->shape[r - 1], S = k->shape[r - 2], Ev = v->shape[r - 1];
  if (k->shape[r - 1] != E || v->shape[r - 2] != S)
    return c.error("key " + shape_str(k->shape) + " and value " + shape_str(v->shape) +
                   " do not fit query " + shape_str(q->shape) +
                   ": expected key [.., S, E] and value [.., S, Ev] with E " + std::to_string(E));
  const bool gqa = c.get_bool("enable_gqa", false);
  const std::vector<int64_t> lead(q->shape.begin(), q->shape.end() - 2);
  const int64_t heads = r - 3;  // the heads dim, when there is one
  for (const HostTensor* t : {k, v})
    for (int64_t d = 0; d < r - 2; ++d) {
      const int64_t qd = lead[d], td = t->shape[d];
      if (td == qd || td == 1) continue;
      if (d == heads && gqa && td > 0 && qd % td == 0) continue;
      return c.error("key/value " + shape_str(t->shape) + " does not fit query " +
                     shape_str(q->shape) + " at dim " + std::to_string(d) + ": " +
                     std::to_string(td) + " vs " + std::to_string(qd) +
                     (d == heads && !gqa ? " (differing heads need enable_gqa)" : ""));
    }
  std::vector<int64_t> scores = lead;
  scores.push_back(L);
  scores.push_back(S);
  if (mask) {
    if (mask->dtype != TensorDType::boolean && !dtype_is_float(mask->dtype))
      return c.error("attn_mask is " + dtype_str(mask->dtype) + ", expected bool or a float type");
    NEURONC_ASSIGN_OR_RETURN_(std::vector<int64_t> full, broadcast_shapes(c, mask->shape, scores));
    if (full != scores)
      return c.error("attn_mask " + shape_str(mask->shape) + " does not broadcast to " +
                     shape_str(scores));
  }
  const bool causal = c.get_bool("is_causal", false);
  if (causal && mask) return c.error("attn_mask and is_causal are both set, expected one");
  const double dropout = c.get_float("dropout_p", 0);
  if (dropout != 0)
    return c.error("dropout_p is " + std::to_string(dropout) + ", expected 0 (inference)");
  std::vector<int64_t> oshape = lead;
  oshape.push_back(L);
  oshape.push_back(Ev);
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, q->dtype, oshape));
  if (c.dry_run()) return Status::ok();

  const double scale = c.get_float("scale", 1 / std::sqrt(static_cast<double>(E)));
  const double kInf = std::numeric_limits<double>::infinity();
  const std::vector<double> qv = to_double(*q), kv = to_double(*k), vv = to_double(*v);
  const std::vector<int64_t> ki = lead_index(lead, {k->shape.begin(), k->shape.end() - 2}, heads);
  const std::vector<int64_t> vi = lead_index(lead, {v->shape.begin(), v->shape.end() - 2}, heads);
  std::vector<double> mv;
  std::vector<int64_t> mi;
  if (mask) mv = to_double(*mask), mi = broadcast_index(mask->shape, scores);
  std::vector<double> out(static_cast<size_t>(static_cast<int64_t>(ki.size()) * L * Ev), 0.0);
  std::vector<double> s(static_cast<size_t>(S));
  for (size_t t = 0; t < ki.size(); ++t) {
    const double* kb = kv.data() + ki[t] * S * E;
    const double* vb = vv.data() + vi[t] * S * Ev;
    for (int64_t i = 0; i < L; ++i) {
      const double* qr = qv.data() + (static_cast<int64_t>(t) * L + i) * E;
      const int64_t row = static_cast<int64_t>(t) * L + i;
      double m = -kInf;
      bool all_masked = true;
      for (int64_t j = 0; j < S; ++j) {
        double acc = 0;
        for (int64_t e = 0; e < E; ++e) acc += qr[e] * kb[j * E + e];
        acc *= scale;
        if (mask) {
          const double w = mv[static_cast<size_t>(mi[static_cast<size_t>(row * S + j)])];
          acc = mask->dtype == TensorDType::boolean ? (w != 0 ? acc : -kInf) : acc + w;
        }
        if (causal && j > i) acc = -kInf;
        s[j] = acc;
        if (acc > m) m = acc;
        all_masked = all_masked && acc == -kInf;
      }
      double* o = out.data() + row * Ev;
      if (all_masked) continue;  // zeros
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - m));
      for (int64_t j = 0; j < S; ++j) {
        const double p = s[j] / sum;
        for (int64_t e = 0; e < Ev; ++e) o[e] += p * vb[j * Ev + e];
      }
    }
  }
  from_double(c.output(0), out);
  return Status::ok();
}

}  // namespace

void register_attention_kernels(KernelTable& t) {
  t.add("aten.scaled_dot_product_attention.default", sdpa);
}

}  // namespace neuronc::host
