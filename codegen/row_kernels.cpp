// Row kernels: ops that reduce along some dimensions — sum/mean/amax/amin/any, _softmax,
// _log_softmax, layer_norm, rms_norm. The reduced dimensions become the free axis of an SBUF
// tile (the DMA access pattern gathers them, so any `dim` works, not only the last); the kept
// dimensions are rows, 128 per tile. Per tile:
//   reduce     TensorReduce (VectorE) -> [rows, 1], mean scales on the way out;
//   softmax    -max (TensorReduce negate), exp(x - max) with the row sum accumulated for free
//              (ScalarE Activation accumulate), 1/sum (ScalarE), scale (VectorE);
//   layer_norm mean (TensorReduce), centre (VectorE), sum of squares (ScalarE square with
//              accumulate), rsqrt(var + eps) (VectorE + ScalarE), scale, then * gamma + beta
//              with gamma/beta loaded once, broadcast over partitions;
//   rms_norm   sum of squares (ScalarE accumulate), rsqrt, scale, * gamma.
// A layer norm over more than 12288 elements goes to the group-norm kernel instead
// (group_norm_kernel.cpp: statistics over partitions x chunks).
// Tiles are double-buffered so the next tile's load overlaps this tile's compute.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::ActivationFunction;
using device::AluOp;
using device::DType;
using device::Engine;
using device::MemRef;

enum class RowOp { sum, mean, amax, amin, any, softmax, log_softmax, layer_norm, rms_norm };

struct Layout {
  // Row (kept) dims and free (reduced) dims, coalesced, with per-operand strides:
  // operand 0 = x, 1 = out, 2 = gamma, 3 = beta.
  std::vector<int64_t> row_sizes, free_sizes;
  std::vector<std::vector<int64_t>> row_strides, free_strides;
  int64_t free_total = 1;
};

RowOp row_op(const std::string& op) {
  if (op == "aten.sum.dim_IntList" || op == "aten.sum.default") return RowOp::sum;
  if (op == "aten.mean.dim" || op == "aten.mean.default") return RowOp::mean;
  if (op == "aten.amax.default" || op == "aten.max.default") return RowOp::amax;
  if (op == "aten.amin.default" || op == "aten.min.default") return RowOp::amin;
  if (op == "aten.any.dim" || op == "aten.any.dims" || op == "aten.any.default") return RowOp::any;
  if (op == "aten._softmax.default" || op == "aten.softmax.int") return RowOp::softmax;
  if (op == "aten._log_softmax.default" || op == "aten.log_softmax.int") return RowOp::log_softmax;
  if (op == "aten.layer_norm.default") return RowOp::layer_norm;
  return RowOp::rms_norm;
}

bool is_norm(RowOp k) {
  return k == RowOp::layer_norm || k == RowOp::rms_norm;
}
// The result has the input's shape (no dims reduced away).
bool keeps_shape(RowOp k) {
  return k == RowOp::softmax || k == RowOp::log_softmax || is_norm(k);
}

// Which of the input's `r` dims node `n` reduces (empty for a 0-d input: the "reduction" is a
// copy, or the softmax of one element).
std::vector<bool> reduced_dims(const ir::Node& n, RowOp kind, int64_t r) {
  std::vector<bool> reduced(static_cast<size_t>(r), false);
  auto mark = [&](int64_t d) { reduced[static_cast<size_t>((d % r + r) % r)] = true; };
  if (kind == RowOp::softmax || kind == RowOp::log_softmax) {
    if (r > 0) mark(n.attr_int("dim"));
  } else if (is_norm(kind)) {
    const int64_t k = static_cast<int64_t>(n.attr_ints("normalized_shape").size());
    for (int64_t d = r - k; d < r; ++d) mark(d);
  } else if (n.op() == "aten.any.dim") {
    mark(n.attr_int("dim"));
  } else if (n.attr("dim") && !n.attr_is_none("dim") && !n.attr_ints("dim").empty()) {
    for (int64_t d : n.attr_ints("dim")) mark(d);
  } else {
    for (int64_t d = 0; d < r; ++d) mark(d);
  }
  if (r == 0) reduced.clear();
  return reduced;
}

// One row tile holds the whole reduced extent (chunked reductions are not written yet); a layer
// norm over more goes to the group-norm kernel.
constexpr int64_t kMaxRowExtent = 12288;
// Norms over at most this many rows of at least kLongNormRow elements spread each row over the
// partitions (the group-norm kernel's layout) instead of putting it on one.
constexpr int64_t kFewNormRows = 16;
constexpr int64_t kLongNormRow = 1024;
// The longest row a norm's fused epilogue multiply takes (its weight row and rounded result stay
// in SBUF beside the norm's tiles).
constexpr int64_t kMaxEpilogueRow = 8192;

uint64_t aligned(uint64_t bytes) {
  return (bytes + 63) / 64 * 64;
}
// SBUF bytes per partition the row kernel allocates for a reduced extent R over `rows` rows:
// two slots of input, fp32 work and output tiles and three columns, plus a broadcast gamma /
// beta (the row, its copy on every partition and a ones column each).
uint64_t row_sbuf_bytes(RowOp kind, int64_t R, uint32_t es_in, uint32_t es_out, int64_t rows,
                        uint32_t es_gamma, uint32_t es_beta) {
  const bool same = keeps_shape(kind);
  const uint64_t slot = aligned(R * es_in) + (same ? aligned(R * 4) : 0) +
                        aligned((same ? R : 1) * es_out) + 3 * aligned(4);
  uint64_t params = 0;
  for (uint32_t es : {es_gamma, es_beta})
    if (es) params += aligned(R * es) + (rows > 1 ? aligned(R * es) + aligned(rows * es) : 0);
  return 2 * slot + params;
}

// Why the row kernel cannot lower `n` on `t`: a reduced extent over one row tile, or tiles that
// do not fit the target's SBUF partition.
std::optional<std::string> refuse_row(const ir::Node& n, const device::Target& t) {
  const RowOp kind = row_op(n.op());
  const ir::Value* x = n.input(0);
  for (const ir::Dim& d : x->shape())
    if (d.is_symbolic()) return std::nullopt;  // placed by the common symbolic-dim check
  const std::vector<int64_t> shape = static_shape(x);
  const std::vector<bool> reduced = reduced_dims(n, kind, static_cast<int64_t>(shape.size()));
  int64_t R = 1, rows = 1;
  for (size_t d = 0; d < reduced.size(); ++d) (reduced[d] ? R : rows) *= shape[d];
  if (is_norm(kind) && R > kMaxRowExtent) return std::nullopt;  // group-norm kernel
  if (R > kMaxRowExtent)
    return "reduced extent " + std::to_string(R) + " exceeds the " + std::to_string(kMaxRowExtent) +
           " elements one SBUF row tile holds (chunked reductions are not implemented yet)";
  auto es_of = [&](size_t i) -> uint32_t {
    return n.inputs().size() > i && n.input(i)
               ? device::dtype_size(device_dtype(n.input(i)->dtype()))
               : 0;
  };
  const uint64_t need =
      row_sbuf_bytes(kind, R, es_of(0), device::dtype_size(device_dtype(n.output()->dtype())),
                     std::min<int64_t>(rows, t.partitions), is_norm(kind) ? es_of(1) : 0,
                     kind == RowOp::layer_norm ? es_of(2) : 0);
  if (need > t.sbuf_partition_bytes)
    return "rows of " + std::to_string(R) + " elements need " + std::to_string(need) +
           " SBUF bytes per partition but " + std::string(t.name) + " has " +
           std::to_string(t.sbuf_partition_bytes) + " (chunked reductions are not implemented yet)";
  return std::nullopt;
}

// sum / mean over a group of dims with kept, contiguous dims inside it (x [outer, S, inner],
// reducing S: mean pooling over a sequence, a one-hot selection of positions). Rows of the row
// kernel would gather their S elements one by one, `inner` apart; instead each [S, inner] slab
// loads as contiguous rows, S on the partitions, and a ones matmul on TensorE sums over the
// partitions: out[1, w] = sum_s ones[s] * x[s, w] (products by one are exact; the sum is fp32
// in PSUM). Returns false, emitting nothing, when the layout is not that.
bool lower_middle_sum(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx, RowOp kind,
                      const std::vector<bool>& reduced) {
  if (kind != RowOp::sum && kind != RowOp::mean) return false;
  const HbmView& x = ctx.view(n.input(0));
  const HbmView& out = ctx.view(n.output());
  if (!device::dtype_is_float(x.dtype) || !device::dtype_is_float(out.dtype)) return false;
  const int64_t r = x.rank();
  int64_t a = 0;
  while (a < r && !reduced[a]) ++a;
  int64_t b = a;
  while (b < r && reduced[b]) ++b;
  for (int64_t d = b; d < r; ++d)
    if (reduced[d]) return false;      // one reduced group
  if (a == r || b == r) return false;  // nothing reduced, or no kept dims inside it
  // The reduced group as one (count, stride) level of x; the inner kept dims contiguous in x.
  int64_t S = 1, inner = 1;
  for (int64_t d = b; d < r; ++d) inner *= x.shape[d];
  int64_t want = 1;
  for (int64_t d = r - 1; d >= b; --d) {
    if (x.shape[d] != 1 && x.strides[d] != want) return false;
    want *= x.shape[d];
  }
  const int64_t s_stride = x.strides[b - 1];
  for (int64_t d = b - 1; d >= a; --d) {
    if (x.shape[d] != 1 && x.strides[d] != s_stride * S) return false;
    S *= x.shape[d];
  }
  if (S < 2 || inner < 2) return false;
  // The result: the kept dims, row-major and contiguous inside.
  std::vector<int64_t> kept_shape;
  for (int64_t d = 0; d < r; ++d)
    if (!reduced[d]) kept_shape.push_back(x.shape[d]);
  const std::optional<HbmView> o = out.reshape(kept_shape);
  if (!o) return false;
  const int64_t kept_rank = static_cast<int64_t>(kept_shape.size()), inner_rank = r - b;
  int64_t want_o = 1;
  for (int64_t d = kept_rank - 1; d >= kept_rank - inner_rank; --d) {
    if (o->shape[d] != 1 && o->strides[d] != want_o) return false;
    want_o *= o->shape[d];
  }
  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  const int64_t W = std::min<int64_t>(
      {inner, static_cast<int64_t>(t.psum_bank_elems_f32()), int64_t{t.matmul_max_moving}});
  const int64_t schunks = ceil_div(S, P);
  // Outer index -> element offsets of x and of the result (dims before the group).
  int64_t outer = 1;
  for (int64_t d = 0; d < a; ++d) outer *= x.shape[d];
  const uint32_t es = device::dtype_size(x.dtype), eo = device::dtype_size(out.dtype);
  const uint32_t ones_b = kb.alloc(KernelBuilder::aligned(es), "sum ones");
  const uint32_t tile_b[2] = {kb.alloc(W * es, "sum slab"), kb.alloc(W * es, "sum slab")};
  const uint32_t res_b[2] = {kb.alloc(W * eo, "sum result"), kb.alloc(W * eo, "sum result")};
  device::Memset ms;
  ms.dst = KernelBuilder::sb(ones_b, std::min(S, P), x.dtype, 1);
  ms.value = 1.0;
  kb.emit(Engine::vector, ms);
  int iter = 0;
  for (int64_t oi = 0; oi < outer; ++oi) {
    int64_t xo = 0, oo = 0, rem = oi;
    for (int64_t d = a - 1; d >= 0; --d) {
      const int64_t i = rem % x.shape[d];
      rem /= x.shape[d];
      xo += i * x.strides[d];
      oo += i * o->strides[d];
    }
    for (int64_t w0 = 0; w0 < inner; w0 += W) {
      const int64_t wn = std::min(W, inner - w0);
      const MemRef acc = KernelBuilder::ps(kb.psum_bank(), 1, wn);
      for (int64_t c = 0; c < schunks; ++c) {
        const int64_t s0 = c * P, sn = std::min(P, S - s0);
        const MemRef slab = KernelBuilder::sb(tile_b[iter % 2], sn, x.dtype, wn);
        ++iter;
        kb.dma(slab,
               KernelBuilder::hbm(x, xo + s0 * s_stride + w0, sn, s_stride,
                                  {{1, static_cast<uint32_t>(wn)}}),
               DmaRole::load);
        device::MatMul mm;
        mm.dst = acc;
        mm.stationary = KernelBuilder::sb(ones_b, sn, x.dtype, 1);
        mm.moving = slab;
        mm.accumulate = c > 0;
        kb.emit(Engine::tensor, mm);
      }
      const MemRef res = KernelBuilder::sb(res_b[iter % 2], 1, out.dtype, wn);
      if (kind == RowOp::mean) {
        kb.tensor_scalar(res, acc, AluOp::multiply, static_cast<float>(1.0 / S));
      } else {
        device::TensorCopy cp;
        cp.dst = res;
        cp.src = acc;
        kb.emit(Engine::vector, cp);
      }
      kb.dma(KernelBuilder::hbm(*o, oo + w0, 1, 0, {{1, static_cast<uint32_t>(wn)}}), res,
             DmaRole::store);
    }
  }
  return true;
}

void lower_row(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const std::string& op = n.op();
  const RowOp kind = row_op(op);
  if (auto why = refuse_row(n, kb.target())) fail(n, *why);
  const HbmView& x = ctx.view(n.input(0));
  const int64_t r = x.rank();
  const std::vector<bool> reduced = reduced_dims(n, kind, r);
  const bool norm = is_norm(kind);
  if (lower_middle_sum(kb, n, ctx, kind, reduced)) return;

  // A norm's fused epilogue (kernel formation's norm_epilogue: a multiply by a weight along the
  // row) stores its result in place of the norm's.
  const ir::Node* post = norm ? fused_norm_epilogue(kb, n) : nullptr;
  // Output view over x's shape: reduced dims get stride 0 for reductions.
  const HbmView& out = ctx.view(post ? post->output() : n.output());
  const bool same_shape = keeps_shape(kind);
  HbmView out_full = out;
  if (!same_shape) {
    std::vector<int64_t> keep_shape = x.shape;
    for (int64_t d = 0; d < r; ++d)
      if (reduced[d]) keep_shape[d] = 1;
    out_full = out.reshape(keep_shape).value();
    for (int64_t d = 0; d < r; ++d)
      if (reduced[d]) out_full.strides[d] = 0;
    out_full.shape = x.shape;
  }
  std::optional<HbmView> gamma, beta;
  if (norm && n.inputs().size() > 1 && n.input(1)) gamma = ctx.view(n.input(1)).expand(x.shape);
  if (kind == RowOp::layer_norm && n.inputs().size() > 2 && n.input(2))
    beta = ctx.view(n.input(2)).expand(x.shape);
  std::optional<HbmView> post_w;
  if (post) post_w = ctx.view(norm_epilogue_weight(n, *post)).expand(x.shape);

  Layout L;
  {
    std::vector<int64_t> rs, fs;
    std::vector<std::vector<int64_t>> rst(5), fst(5);
    auto stride_of = [&](int k, int64_t d) -> int64_t {
      if (k == 0) return x.strides[d];
      if (k == 1) return out_full.strides[d];
      if (k == 2) return gamma ? gamma->strides[d] : 0;
      if (k == 3) return beta ? beta->strides[d] : 0;
      return post_w ? post_w->strides[d] : 0;
    };
    for (int64_t d = 0; d < r; ++d) {
      auto& sz = reduced[d] ? fs : rs;
      auto& st = reduced[d] ? fst : rst;
      sz.push_back(x.shape[d]);
      for (int k = 0; k < 5; ++k) st[k].push_back(stride_of(k, d));
    }
    coalesce(rs, rst);
    coalesce(fs, fst);
    L.row_sizes = rs;
    L.row_strides = rst;
    L.free_sizes = fs;
    L.free_strides = fst;
    for (int64_t s : fs) L.free_total *= s;
  }
  const int free_levels = static_cast<int>(L.free_sizes.size());
  if (free_levels > 3)
    fail(n, "reduction over " + std::to_string(free_levels) +
                " non-adjacent dimension groups is not supported (at most 3)");
  const int64_t R = L.free_total;
  int64_t rows_total = 1;
  for (int64_t s : L.row_sizes) rows_total *= s;
  // Statistics over partitions x chunks instead of one SBUF row: a row too long for one, or so
  // few long rows that one per partition would leave the engines' lanes idle (a decode step's
  // norms: one row of the hidden size per sequence).
  if (norm && (R > kMaxRowExtent ||
               (rows_total <= kFewNormRows && R >= kLongNormRow &&
                large_layer_norm_walkable(n, post ? post->output() : n.output(), ctx)))) {
    lower_large_layer_norm(kb, n, ctx);
    return;
  }

  const int64_t P = kb.target().partitions;
  const std::vector<RowTile> tiles = row_tiles(L.row_sizes, L.row_strides, P, 4 - free_levels);
  int64_t max_rows = 1;
  for (const RowTile& t : tiles) max_rows = std::max(max_rows, t.rows);

  auto free_levels_of = [&](int k, const RowTile& t) {
    std::vector<device::AccessLevel> lv;
    for (size_t d = 0; d < t.inner_sizes.size(); ++d)
      lv.push_back(
          {static_cast<int32_t>(t.inner_strides[k][d]), static_cast<uint32_t>(t.inner_sizes[d])});
    if (k != 1 || same_shape)
      for (size_t d = 0; d < L.free_sizes.size(); ++d)
        lv.push_back(
            {static_cast<int32_t>(L.free_strides[k][d]), static_cast<uint32_t>(L.free_sizes[d])});
    return lv;
  };

  // Affine parameters, loaded once for the largest tile (same values on every partition).
  uint32_t gamma_off = 0, beta_off = 0;
  auto load_param = [&](const HbmView& v, int k) {
    std::vector<device::AccessLevel> lv;
    for (size_t d = 0; d < L.free_sizes.size(); ++d)
      lv.push_back(
          {static_cast<int32_t>(L.free_strides[k][d]), static_cast<uint32_t>(L.free_sizes[d])});
    return load_broadcast_row(kb, v, lv, max_rows, "norm weight").offset;
  };
  if (gamma) gamma_off = load_param(*gamma, 2);
  if (beta) beta_off = load_param(*beta, 3);
  const uint32_t post_off = post_w ? load_param(*post_w, 4) : 0;

  struct Slot {
    uint32_t x, work, out, c0, c1, c2, norm = 0;
  };
  Slot slots[2];
  for (Slot& s : slots) {
    if (post)
      s.norm = kb.alloc(R * device::dtype_size(device_dtype(n.output()->dtype())), "row norm");
    s.x = kb.alloc(R * device::dtype_size(x.dtype), "row input");
    s.work = (same_shape) ? kb.alloc(R * 4, "row work") : 0;
    s.out = kb.alloc((same_shape ? R : 1) * device::dtype_size(out.dtype), "row output");
    s.c0 = kb.alloc(4, "row column");
    s.c1 = kb.alloc(4, "row column");
    s.c2 = kb.alloc(4, "row column");
  }

  int iter = 0;
  for (const RowTile& t : tiles) {
    const Slot& s = slots[iter++ % 2];
    const int64_t rows = t.rows;
    const MemRef xt = KernelBuilder::sb(s.x, rows, x.dtype, R);
    kb.dma(xt, KernelBuilder::hbm(x, t.offset[0], t.chunk, t.split_stride[0], free_levels_of(0, t)),
           DmaRole::load);
    const MemRef c0 = KernelBuilder::sb(s.c0, rows, DType::f32, 1);
    const MemRef c1 = KernelBuilder::sb(s.c1, rows, DType::f32, 1);
    const MemRef c2 = KernelBuilder::sb(s.c2, rows, DType::f32, 1);
    const MemRef work = KernelBuilder::sb(s.work, rows, DType::f32, R);
    const MemRef ot = KernelBuilder::sb(s.out, rows, out.dtype, same_shape ? R : 1);
    switch (kind) {
      case RowOp::sum:
      case RowOp::mean:
      case RowOp::amax:
      case RowOp::amin:
      case RowOp::any: {
        const device::ReduceOp rop = kind == RowOp::amin ? device::ReduceOp::min
                                     : (kind == RowOp::amax || kind == RowOp::any)
                                         ? device::ReduceOp::max
                                         : device::ReduceOp::sum;
        if (kind == RowOp::mean) {
          kb.tensor_reduce(c0, xt, rop, false);
          kb.tensor_scalar(ot, c0, AluOp::multiply, static_cast<float>(1.0 / R));
        } else if (kind == RowOp::any) {
          kb.tensor_reduce(c0, xt, rop, false);
          kb.tensor_scalar(ot, c0, AluOp::not_equal, 0.0f);
        } else {
          kb.tensor_reduce(ot, xt, rop, false);
        }
        break;
      }
      case RowOp::softmax:
      case RowOp::log_softmax: {
        kb.tensor_reduce(c0, xt, device::ReduceOp::max, true);  // -max
        kb.activation(work, xt, ActivationFunction::exp, c0, c1);
        if (kind == RowOp::softmax) {
          kb.activation(c2, c1, ActivationFunction::reciprocal);
          kb.tensor_scalar(ot, work, AluOp::multiply, c2);
        } else {
          kb.activation(c2, c1, ActivationFunction::log);
          kb.tensor_scalar(ot, xt, AluOp::add, c0, AluOp::subtract, c2);
        }
        break;
      }
      case RowOp::layer_norm:
      case RowOp::rms_norm: {
        const double eps = scalar_attr(
            n, "eps", kind == RowOp::rms_norm ? std::numeric_limits<float>::epsilon() : 1e-5);
        std::optional<MemRef> g, b;
        if (gamma) g = KernelBuilder::sb(gamma_off, rows, gamma->dtype, R);
        if (beta) b = KernelBuilder::sb(beta_off, rows, beta->dtype, R);
        const MemRef nt =  // the norm's own result, rounded to its dtype
            post ? KernelBuilder::sb(s.norm, rows, device_dtype(n.output()->dtype()), R) : ot;
        emit_row_norm(kb, kind == RowOp::layer_norm, xt, work, nt, {c0, c1, c2}, g, b, eps);
        if (post)
          kb.tensor_tensor(ot, nt, KernelBuilder::sb(post_off, rows, post_w->dtype, R),
                           AluOp::multiply);
        break;
      }
    }
    kb.dma(
        KernelBuilder::hbm(out_full, t.offset[1], t.chunk, t.split_stride[1], free_levels_of(1, t)),
        ot, DmaRole::store);
  }
}

}  // namespace

const ir::Value* norm_epilogue_weight(const ir::Node& n, const ir::Node& m) {
  if (n.op() != "aten.rms_norm.default" && n.op() != "aten.layer_norm.default") return nullptr;
  if (m.op() != "aten.mul.Tensor" || m.inputs().size() != 2 || n.outputs().size() != 1)
    return nullptr;
  const ir::Value* y = n.output();
  if ((m.input(0) == y) == (m.input(1) == y)) return nullptr;  // reads the norm exactly once
  const ir::Value* w = m.input(0) == y ? m.input(1) : m.input(0);
  if (n.attr_ints("normalized_shape").size() != 1 || y->type().rank() < 1) return nullptr;
  const ir::Dim& d = y->shape().back();
  if (!d.is_constant() || d.value() > kMaxEpilogueRow) return nullptr;
  if (w->type().rank() != 1 || !(w->shape()[0] == d)) return nullptr;
  const ir::DType dt = y->dtype();
  if (!ir::is_floating(dt) || w->dtype() != dt || m.output()->dtype() != dt ||
      !(m.output()->shape() == y->shape()))
    return nullptr;
  return w;
}

const ir::Node* fused_norm_epilogue(const KernelBuilder& kb, const ir::Node& n) {
  const std::vector<const ir::Node*>& f = fused_nodes(kb);
  if (f.empty()) return nullptr;
  if (f.size() != 1 || !norm_epilogue_weight(n, *f[0]))
    fail(n, "internal: the nodes fused into a norm are not its weight multiply");
  return f[0];
}

MemRef load_broadcast_row(KernelBuilder& kb, const HbmView& v,
                          const std::vector<device::AccessLevel>& levels, int64_t rows,
                          const char* what) {
  uint64_t n = 1;
  for (const device::AccessLevel& l : levels) n *= l.count;
  const DType dt = v.dtype;
  const uint32_t es = device::dtype_size(dt);
  const MemRef dst = KernelBuilder::sb(kb.alloc(n * es, what), rows, dt, static_cast<int64_t>(n));
  const int64_t bank = kb.target().psum_bank_elems_f32();
  if (rows == 1 || !device::dtype_is_float(dt)) {
    kb.dma(dst, KernelBuilder::hbm(v, 0, rows, 0, levels), DmaRole::load);
    return dst;
  }
  // One row from HBM (one DMA engine, n elements), then ones[1, rows]^T x row[1, n] on TensorE:
  // x * 1 is exact and a one-term PSUM sum does not round, so every partition gets the row's
  // bits. Instead of `rows` descriptors re-reading the same bytes at the small-transfer rate.
  const MemRef row = KernelBuilder::sb(kb.alloc(n * es, what), 1, dt, static_cast<int64_t>(n));
  kb.dma(row, KernelBuilder::hbm(v, 0, 1, 0, levels), DmaRole::load);
  const MemRef ones = KernelBuilder::sb(kb.alloc(rows * es, what), 1, dt, rows);
  device::Memset ms;
  ms.dst = ones;
  ms.value = 1.0;
  kb.emit(Engine::vector, ms);
  for (int64_t c0 = 0; c0 < static_cast<int64_t>(n); c0 += bank) {
    const int64_t cn = std::min<int64_t>(bank, static_cast<int64_t>(n) - c0);
    device::MatMul mm;
    mm.dst = KernelBuilder::ps(kb.psum_bank(), rows, cn);
    mm.stationary = ones;
    mm.moving = KernelBuilder::sb(row.offset + c0 * es, 1, dt, cn);
    mm.accumulate = false;
    kb.emit(Engine::tensor, mm);
    device::TensorCopy cp;
    cp.dst = KernelBuilder::sb(dst.offset + c0 * es, rows, dt, cn);
    cp.src = mm.dst;
    kb.emit(Engine::vector, cp);
  }
  return dst;
}

void emit_row_norm(KernelBuilder& kb, bool layer_norm, const MemRef& xt, const MemRef& work,
                   const MemRef& ot, const std::array<MemRef, 3>& cols,
                   const std::optional<MemRef>& gamma, const std::optional<MemRef>& beta,
                   double eps) {
  const auto& [c0, c1, c2] = cols;
  const int64_t R = static_cast<int64_t>(xt.free_size());
  MemRef centred = xt;
  if (layer_norm) {
    kb.tensor_reduce(c0, xt, device::ReduceOp::sum, false);
    kb.tensor_scalar(c0, c0, AluOp::multiply, static_cast<float>(-1.0 / R));
    kb.activation(work, xt, ActivationFunction::identity,
                  c0);  // x - mean, on ScalarE (VectorE is busier)
    centred = work;
  }
  // Sum of squares (fp32 accumulators); the squares themselves land in `ot` and are
  // overwritten by the result.
  kb.activation(ot, centred, ActivationFunction::square, 0.0f, c1);
  kb.tensor_scalar(c2, c1, AluOp::multiply, static_cast<float>(1.0 / R), AluOp::add,
                   static_cast<float>(eps));
  kb.activation(c2, c2, ActivationFunction::rsqrt);
  const MemRef src = layer_norm ? work : xt;
  const bool affine = gamma || beta;
  kb.activation(affine ? work : ot, src, ActivationFunction::identity, 0.0f, {},
                c2);  // (x - mean) * rstd, on ScalarE
  if (gamma) {
    device::TensorTensor tt;
    tt.dst = beta ? work : ot;
    tt.in0 = work;
    tt.in1 = *gamma;
    tt.op = AluOp::multiply;
    kb.emit(Engine::vector, tt);
  }
  if (beta) {
    device::TensorTensor tt;
    tt.dst = ot;
    tt.in0 = work;
    tt.in1 = *beta;
    tt.op = AluOp::add;
    kb.emit(Engine::vector, tt);
  }
}

const Lowering* row_lowering(const std::string& op) {
  static constexpr Lowering kRow{&lower_row, &refuse_row};
  static const char* kOps[] = {
      "aten.sum.dim_IntList",    "aten.sum.default",          "aten.mean.dim",
      "aten.mean.default",       "aten.amax.default",         "aten.amin.default",
      "aten.max.default",        "aten.min.default",          "aten.any.dim",
      "aten.any.dims",           "aten.any.default",          "aten._softmax.default",
      "aten.softmax.int",        "aten._log_softmax.default", "aten.log_softmax.int",
      "aten.layer_norm.default", "aten.rms_norm.default"};
  for (const char* s : kOps)
    if (op == s) return &kRow;
  return nullptr;
}

}  // namespace neuronc::codegen
