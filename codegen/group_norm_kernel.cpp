// Group normalisation (group_norm, native_group_norm) and layer norms whose normalised extent is
// too large for one SBUF row (row_kernels.cpp hands those over). The input is seen as
// [A, B, K, F] with statistics over (K, F) for every (a, b): K goes on the partitions (one row
// per k), F on the free axis in chunks. Group norm: A = N, B = groups, K = C / groups, F = the
// spatial dims flattened; layer norm: A = the leading dims, B = 1, K x F = the normalised extent
// (K its largest divisor <= 128).
// Rows (a, b, k) are tiled onto the partitions in whole groups: K <= 128 puts floor(128 / K)
// groups in a tile, a larger group spans ceil(K / 128) tiles. Per unit (the tiles that share
// statistics), with fp32 statistics and the biased variance like PyTorch:
//   1. per-row sums (VectorE TensorReduce per chunk) are combined over the rows of each group by
//      one TensorE matmul with a block-diagonal ones matrix (accumulated in PSUM over the tiles
//      of a large group with an all-ones matrix), which leaves -mean on every row;
//   2. per-row sums of (x - mean)^2 (ScalarE square with bias -mean, accumulated), combined the
//      same way: rstd = (var + eps)^-1/2 — two passes, no E[x^2] - mean^2 cancellation;
//   3. y = x * scale + shift with scale = rstd * w[c], shift = b[c] - mean * scale per row (one
//      VectorE instruction per chunk); an element-wise affine (layer norm) applies gamma/beta
//      chunks instead.
// A unit whose rows fit the budget stays in SBUF for the three passes (one load, two units
// double-buffered); otherwise every pass streams the chunks again. native_group_norm also stores
// mean and rstd [N, G] (transposed through PSUM so each group is one element) when they are read.
#include <algorithm>
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

constexpr int64_t kChunk = 2048;  // free elements per compute instruction

// One dimension walked with one stride.
struct Axis {
  int64_t size = 1, stride = 1;
};

// Dims [d0, d1) of `v` as one axis, or nullopt when no single stride walks them.
std::optional<Axis> merged(const HbmView& v, int64_t d0, int64_t d1) {
  Axis a;
  bool any = false;
  for (int64_t d = d1 - 1; d >= d0; --d) {
    if (v.shape[d] == 1) continue;
    if (!any) {
      a = {v.shape[d], v.strides[d]};
      any = true;
    } else if (v.strides[d] == a.stride * a.size) {
      a.size *= v.shape[d];
    } else {
      return std::nullopt;
    }
  }
  return a;
}

// A view seen as [A, B, K, F]: element strides (B's stride is always K * sk).
struct Operand {
  const HbmView* view = nullptr;
  int64_t sa = 0, sk = 0, sf = 0;
};

struct NormPlan {
  int64_t A = 1, B = 1, K = 1, F = 1;
  Operand x, out;
  std::optional<Operand> gamma, beta;
  std::optional<Operand> post;      // a fused epilogue's weight along F (norm_epilogue_weight)
  bool elementwise_affine = false;  // gamma/beta vary along F (layer norm)
  const HbmView* mean = nullptr;    // [A, B] results of native_group_norm, when read
  const HbmView* rstd = nullptr;
  double eps = 1e-5;
  bool rms = false;  // rms_norm: the mean is 0, not a statistic
};

struct Tile {
  int64_t a0 = 0;     // `a` of the segment's first row (0 when all rows merge)
  int64_t xbase = 0;  // element offsets of the segment's row 0
  int64_t obase = 0;
  int64_t r0 = 0, rows = 0;  // rows [r0, r0 + rows) of the segment
};

// A run of a tile's rows with the same `a`: tile rows [j0, j0 + len) are rows `local` .. of the
// (a) block of B * K rows.
struct Run {
  int64_t a, local, j0, len;
};

std::vector<Run> runs_of(const Tile& t, int64_t BK) {
  std::vector<Run> out;
  for (int64_t r = t.r0; r < t.r0 + t.rows;) {
    const int64_t a = r / BK, local = r % BK;
    const int64_t len = std::min(t.r0 + t.rows - r, BK - local);
    out.push_back({t.a0 + a, local, r - t.r0, len});
    r += len;
  }
  return out;
}

// The units of work: tiles of whole groups (K <= partitions: several groups per tile), or a
// group's tiles (K > partitions), over segments of rows that share one stride walk.
std::vector<std::vector<Tile>> norm_units(const NormPlan& p, int64_t P) {
  const int64_t BK = p.B * p.K;
  // Rows merge across `a` when both x and out walk (a, b, k) with one stride.
  const bool merge_a = p.A == 1 || (p.x.sa == BK * p.x.sk && p.out.sa == BK * p.out.sk);
  std::vector<Tile> segments;
  if (merge_a) {
    segments.push_back({0, 0, 0, 0, p.A * BK});
  } else {
    for (int64_t a = 0; a < p.A; ++a) segments.push_back({a, a * p.x.sa, a * p.out.sa, 0, BK});
  }
  std::vector<std::vector<Tile>> units;
  for (const Tile& s : segments) {
    if (p.K <= P) {
      const int64_t T = (P / p.K) * p.K;
      for (int64_t r = 0; r < s.rows; r += T) {
        Tile t = s;
        t.r0 = r;
        t.rows = std::min(T, s.rows - r);
        units.push_back({t});
      }
    } else {
      for (int64_t g0 = 0; g0 < s.rows; g0 += p.K) {
        std::vector<Tile> u;
        for (int64_t r = g0; r < g0 + p.K; r += P) {
          Tile t = s;
          t.r0 = r;
          t.rows = std::min(P, g0 + p.K - r);
          u.push_back(t);
        }
        units.push_back(std::move(u));
      }
    }
  }

  return units;
}

// The combine matrix at SBUF offset `bmat` ([Tmax, Tmax] fp32): block-diagonal ones (K <= 128)
// = E^T E with E[j, i] = 1 iff row i is in group j, built by two affine selects and one matmul;
// all ones for larger groups.
void emit_combine_matrix(KernelBuilder& kb, const NormPlan& p, int64_t Tmax, uint32_t bmat) {
  const int64_t P = kb.target().partitions;
  if (p.K <= P) {
    const int64_t ng = Tmax / p.K;
    const uint32_t e_off = kb.alloc(Tmax * 4, "norm group indicator");
    const MemRef E = KernelBuilder::sb(e_off, ng, DType::f32, Tmax);
    device::Memset ms;
    ms.dst = E;
    ms.value = 1.0;
    kb.emit(Engine::vector, ms);
    device::AffineSelect lo;  // i - K*j >= 0
    lo.dst = lo.src = E;
    lo.channel_multiplier = static_cast<int32_t>(-p.K);
    lo.pattern = {1, 0, 0, 0};
    lo.compare = device::CompareOp::ge;
    lo.on_false = 0.0f;
    kb.emit(Engine::gpsimd, lo);
    device::AffineSelect hi = lo;  // K*j + K - 1 - i >= 0
    hi.offset = static_cast<int32_t>(p.K - 1);
    hi.channel_multiplier = static_cast<int32_t>(p.K);
    hi.pattern = {-1, 0, 0, 0};
    kb.emit(Engine::gpsimd, hi);
    device::MatMul mm;
    mm.dst = KernelBuilder::ps(kb.psum_bank(), Tmax, Tmax);
    mm.stationary = E;
    mm.moving = E;
    kb.emit(Engine::tensor, mm);
    device::TensorCopy c;
    c.dst = KernelBuilder::sb(bmat, Tmax, DType::f32, Tmax);
    c.src = mm.dst;
    kb.emit(Engine::vector, c);
  } else {
    device::Memset ms;
    ms.dst = KernelBuilder::sb(bmat, P, DType::f32, P);
    ms.value = 1.0;
    kb.emit(Engine::vector, ms);
  }
}

// A [rows, 1] fp32 column at SBUF offset `off`.
MemRef col(uint32_t off, int64_t rows) {
  return KernelBuilder::sb(off, rows, DType::f32, 1);
}
// The free access level of `fn` elements of operand `o` along F.
std::vector<device::AccessLevel> chunk_levels(const Operand& o, int64_t fn) {
  return {{static_cast<int32_t>(o.sf), static_cast<uint32_t>(fn)}};
}

// Per-unit columns: partial sums, statistics and the affine terms of one unit in flight.
struct Columns {
  uint32_t part, col, negmean, rstd, scale, shift, g, b, stats, stats_t;
};
// The kernel's SBUF tiles, two of each so two units are in flight.
struct NormBuffers {
  uint32_t xslot[2] = {0, 0}, oslot[2] = {0, 0}, work = 0, gslot[2] = {0, 0}, bslot[2] = {0, 0},
           pslot[2] = {0, 0};
  Columns cols[2];
};

NormBuffers alloc_norm_buffers(KernelBuilder& kb, const NormPlan& p, bool resident, int64_t m_max,
                               int64_t fc, int64_t nch) {
  const int64_t P = kb.target().partitions;
  const uint32_t esx = device::dtype_size(p.x.view->dtype);
  const uint32_t eso = device::dtype_size(p.out.view->dtype);
  NormBuffers nb;
  // SBUF: input slots (a unit each when resident, a chunk each when streaming), output staging,
  // fp32 work, element-wise gamma/beta chunks, per-unit columns (two sets, one per unit in
  // flight).
  for (uint32_t& s : nb.xslot)
    s = kb.alloc(static_cast<uint64_t>(resident ? m_max * p.F : fc) * esx, "norm input");
  for (uint32_t& s : nb.oslot) s = kb.alloc(static_cast<uint64_t>(fc) * eso, "norm output");
  nb.work = kb.alloc(static_cast<uint64_t>(fc) * 4, "norm work");
  if (p.elementwise_affine) {
    for (int i = 0; i < 2; ++i) {
      if (p.gamma)
        nb.gslot[i] = kb.alloc(fc * device::dtype_size(p.gamma->view->dtype), "norm gamma");
      if (p.beta) nb.bslot[i] = kb.alloc(fc * device::dtype_size(p.beta->view->dtype), "norm beta");
    }
  }
  if (p.post)
    for (uint32_t& s : nb.pslot)
      s = kb.alloc(fc * device::dtype_size(p.post->view->dtype), "norm epilogue weight");
  for (Columns& c : nb.cols) {
    c.part = kb.alloc(nch * 4, "norm partial sums");
    c.col = kb.alloc(4, "norm column");
    c.negmean = kb.alloc(4, "norm column");
    c.rstd = kb.alloc(4, "norm column");
    c.scale = kb.alloc(4, "norm column");
    c.shift = kb.alloc(4, "norm column");
    c.g = kb.alloc(4, "norm column");
    c.b = kb.alloc(4, "norm column");
    c.stats = p.mean ? kb.alloc(8, "norm statistics") : 0;
    c.stats_t = p.mean ? kb.alloc(P * 4, "norm statistics") : 0;
  }

  return nb;
}

void emit_norm(KernelBuilder& kb, const NormPlan& p) {
  const int64_t P = kb.target().partitions;
  const DType xdt = p.x.view->dtype, odt = p.out.view->dtype;
  const uint32_t esx = device::dtype_size(xdt);
  const int64_t BK = p.B * p.K;
  const float inv_r = static_cast<float>(1.0 / static_cast<double>(p.K * p.F));
  // Per-row affine (or none): y = x * scale + shift with per-row columns.
  const bool per_row = !p.elementwise_affine || (!p.gamma && !p.beta);

  const std::vector<std::vector<Tile>> units = norm_units(p, P);

  const int64_t fc = std::min(p.F, kChunk), nch = ceil_div(p.F, fc);
  const int64_t m_max = p.K <= P ? 1 : ceil_div(p.K, P);
  // One unit's input stays resident within a fixed share of the partition (40 KiB on trn1).
  const bool resident =
      m_max * p.F * esx <= static_cast<int64_t>(kb.target().sbuf_partition_bytes) * 5 / 24;
  const int64_t Tmax = p.K <= P ? (P / p.K) * p.K : P;

  const uint32_t bmat = kb.alloc(Tmax * 4, "norm combine matrix");
  emit_combine_matrix(kb, p, Tmax, bmat);

  const NormBuffers nb = alloc_norm_buffers(kb, p, resident, m_max, fc, nch);
  const auto& xslot = nb.xslot;
  const auto& oslot = nb.oslot;
  const uint32_t work = nb.work;
  const auto& gslot = nb.gslot;
  const auto& bslot = nb.bslot;
  const auto& pslot = nb.pslot;
  const auto& cols = nb.cols;
  const DType stat_dt = p.mean ? p.mean->dtype : DType::f32;

  int unit_iter = 0, stream_iter = 0, out_iter = 0, param_iter = 0;
  for (const std::vector<Tile>& u : units) {
    const Columns& cs = cols[unit_iter % 2];
    const uint32_t xres = xslot[unit_iter % 2];
    ++unit_iter;
    const int64_t prow = p.K <= P ? u[0].rows : P;  // rows holding the combined statistics
    // Chunk c of tile i in SBUF: loaded on the first pass when resident, on every pass else.
    auto chunk = [&](size_t i, int64_t c, bool first_pass) {
      const Tile& t = u[i];
      const int64_t f0 = c * fc, fn = std::min(fc, p.F - f0);
      const uint32_t off =
          resident ? xres + static_cast<uint32_t>((i * p.F + f0) * esx) : xslot[stream_iter++ % 2];
      const MemRef m = KernelBuilder::sb(off, t.rows, xdt, fn);
      if (!resident || first_pass)
        kb.dma(m,
               KernelBuilder::hbm(*p.x.view, t.xbase + t.r0 * p.x.sk + f0 * p.x.sf, t.rows, p.x.sk,
                                  chunk_levels(p.x, fn)),
               DmaRole::load);
      return m;
    };
    // Sums a per-row statistic over the chunks (`per_chunk` writes chunk c's sum into the
    // column it is given) and combines it over each group's rows into PSUM.
    auto combine = [&](auto&& per_chunk, bool first_pass) {
      const MemRef acc = KernelBuilder::ps(kb.psum_bank(), prow, 1);
      for (size_t i = 0; i < u.size(); ++i) {
        const int64_t rows = u[i].rows;
        const MemRef c = col(cs.col, rows);
        if (nch == 1) {
          per_chunk(c, chunk(i, 0, first_pass), rows);
        } else {
          for (int64_t k = 0; k < nch; ++k)
            per_chunk(col(cs.part + static_cast<uint32_t>(k * 4), rows), chunk(i, k, first_pass),
                      rows);
          kb.tensor_reduce(c, KernelBuilder::sb(cs.part, rows, DType::f32, nch),
                           device::ReduceOp::sum);
        }
        device::MatMul mm;
        mm.dst = acc;
        mm.stationary = KernelBuilder::sb(bmat, rows, DType::f32, prow);
        mm.moving = c;
        mm.accumulate = i > 0;
        kb.emit(Engine::tensor, mm);
      }
      return acc;
    };

    // 1. -mean on every row (0 for an RMS norm).
    const MemRef negmean = col(cs.negmean, prow);
    if (p.rms) {
      device::Memset ms;
      ms.dst = negmean;
      ms.value = 0.0;
      kb.emit(Engine::vector, ms);
    } else {
      const MemRef sum = combine([&](const MemRef& dst, const MemRef& x,
                                     int64_t) { kb.tensor_reduce(dst, x, device::ReduceOp::sum); },
                                 true);
      kb.tensor_scalar(negmean, sum, AluOp::multiply, -inv_r);
    }
    // 2. rstd = (sum((x - mean)^2) / R + eps)^-1/2 (the first pass that loads the input for
    // an RMS norm).
    const MemRef ssq = combine(
        [&](const MemRef& dst, const MemRef& x, int64_t rows) {
          device::Activation a;
          a.dst = KernelBuilder::sb(work, rows, DType::f32, x.free_size());
          a.src = x;
          a.function = ActivationFunction::square;
          a.bias = col(cs.negmean, rows);
          a.accumulate_dst = dst;
          kb.emit(Engine::scalar, a);
        },
        p.rms);
    const MemRef rstd = col(cs.rstd, prow);
    kb.tensor_scalar(rstd, ssq, AluOp::multiply, inv_r, AluOp::add, static_cast<float>(p.eps));
    {
      device::Activation a;
      a.dst = a.src = rstd;
      a.function = ActivationFunction::rsqrt;
      kb.emit(Engine::scalar, a);
    }

    // native_group_norm's mean and rstd: [rows, 2] -> PSUM [2, rows], one element per group.
    if (p.mean) {
      const MemRef stats = KernelBuilder::sb(cs.stats, prow, DType::f32, 2);
      kb.tensor_scalar(col(cs.stats, prow), negmean, AluOp::multiply, -1.0f);
      device::TensorCopy cp;
      cp.dst = col(cs.stats + 4, prow);
      cp.src = rstd;
      kb.emit(Engine::vector, cp);
      device::Transpose tr;
      tr.dst = KernelBuilder::ps(kb.psum_bank(), 2, prow);
      tr.src = stats;
      kb.emit(Engine::tensor, tr);
      const int64_t ngu = p.K <= P ? prow / p.K : 1;
      MemRef picked = tr.dst;
      picked.levels[0] = {static_cast<int32_t>(p.K), static_cast<uint32_t>(ngu)};
      device::TensorCopy pick;
      pick.dst = KernelBuilder::sb(cs.stats_t, 2, stat_dt, ngu);
      pick.src = picked;
      kb.emit(Engine::vector, pick);
      const Tile& t0 = u[0];
      std::vector<Run> runs = runs_of(t0, BK);
      if (p.K > P) runs.resize(1);  // one group: its first row
      for (const Run& r : runs) {
        const int64_t g0 = r.local / p.K, count = p.K <= P ? r.len / p.K : 1;
        for (int k = 0; k < 2; ++k) {
          const HbmView& v = k == 0 ? *p.mean : *p.rstd;
          MemRef src = KernelBuilder::sb(
              cs.stats_t + static_cast<uint32_t>(r.j0 / p.K * device::dtype_size(stat_dt)), 1,
              stat_dt, count);
          src.partition_start = static_cast<uint16_t>(k);
          kb.dma(KernelBuilder::hbm(
                     v, r.a * v.strides[0] + g0 * v.strides[1], 1, 0,
                     {{static_cast<int32_t>(v.strides[1]), static_cast<uint32_t>(count)}}),
                 src, DmaRole::store);
        }
      }
    }

    // 3. y = x * scale + shift (per-row affine) or ((x - mean) * rstd) * gamma + beta.
    for (size_t i = 0; i < u.size(); ++i) {
      const Tile& t = u[i];
      const int64_t rows = t.rows;
      const std::vector<Run> runs = runs_of(t, BK);
      MemRef scale = col(cs.rstd, rows), shift = col(cs.shift, rows);
      if (per_row) {
        auto load_column = [&](const Operand& o, uint32_t dst_off) {
          for (const Run& r : runs) {
            MemRef dst = KernelBuilder::sb(dst_off, r.len, o.view->dtype, 1);
            dst.partition_start = static_cast<uint16_t>(r.j0);
            kb.dma(dst, KernelBuilder::hbm(*o.view, r.a * o.sa + r.local * o.sk, r.len, o.sk, {}),
                   DmaRole::load);
          }
          return KernelBuilder::sb(dst_off, rows, o.view->dtype, 1);
        };
        if (p.gamma && !p.elementwise_affine) {
          const MemRef g = load_column(*p.gamma, cs.g);
          scale = col(cs.scale, rows);
          kb.tensor_tensor(scale, col(cs.rstd, rows), g, AluOp::multiply);
        }
        kb.tensor_tensor(shift, col(cs.negmean, rows), scale, AluOp::multiply);
        if (p.beta && !p.elementwise_affine)
          kb.tensor_tensor(shift, shift, load_column(*p.beta, cs.b), AluOp::add);
      }
      for (int64_t c = 0; c < nch; ++c) {
        const int64_t f0 = c * fc, fn = std::min(fc, p.F - f0);
        const MemRef x = chunk(i, c, false);
        const MemRef o = KernelBuilder::sb(oslot[out_iter++ % 2], rows, odt, fn);
        const int slot = param_iter++ % 2;
        auto load_chunk = [&](const Operand& op, uint32_t off) {
          for (const Run& r : runs) {
            MemRef dst = KernelBuilder::sb(off, r.len, op.view->dtype, fn);
            dst.partition_start = static_cast<uint16_t>(r.j0);
            kb.dma(dst,
                   KernelBuilder::hbm(*op.view, r.a * op.sa + r.local * op.sk + f0 * op.sf, r.len,
                                      op.sk, chunk_levels(op, fn)),
                   DmaRole::load);
          }
          return KernelBuilder::sb(off, rows, op.view->dtype, fn);
        };
        if (per_row) {
          kb.tensor_scalar(o, x, AluOp::multiply, scale, AluOp::add, shift);
        } else {
          const MemRef w = KernelBuilder::sb(work, rows, DType::f32, fn);
          kb.tensor_scalar(w, x, AluOp::add, col(cs.negmean, rows), AluOp::multiply,
                           col(cs.rstd, rows));
          if (p.gamma)
            kb.tensor_tensor(p.beta ? w : o, w, load_chunk(*p.gamma, gslot[slot]), AluOp::multiply);
          if (p.beta) kb.tensor_tensor(o, w, load_chunk(*p.beta, bslot[slot]), AluOp::add);
        }
        // A fused epilogue multiply by a weight along the row, on the rounded norm.
        if (p.post) kb.tensor_tensor(o, o, load_chunk(*p.post, pslot[slot]), AluOp::multiply);
        kb.dma(KernelBuilder::hbm(*p.out.view, t.obase + t.r0 * p.out.sk + f0 * p.out.sf, rows,
                                  p.out.sk, chunk_levels(p.out, fn)),
               o, DmaRole::store);
      }
    }
  }
}

// The stats outputs of native_group_norm are needed when read or returned.
bool needed(const ir::Graph& g, const ir::Value* v) {
  return v->has_uses() || g.is_graph_output(v);
}

void lower_group_norm(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& x = ctx.view(n.input(0));
  const HbmView& out = ctx.view(n.output());
  const int64_t r = x.rank();
  if (r < 2) fail(n, "group norm input must have rank >= 2, found " + std::to_string(r));
  const bool native = n.op() == "aten.native_group_norm.default";
  const int64_t G = n.attr_int(native ? "group" : "num_groups");
  const int64_t C = x.shape[1];
  if (G <= 0 || C % G)
    fail(n, "channels " + std::to_string(C) + " are not divisible by " + std::to_string(G) +
                " groups");
  NormPlan p;
  p.A = x.shape[0];
  p.B = G;
  p.K = C / G;
  p.eps = scalar_attr(n, "eps", 1e-5);
  auto operand = [&](const HbmView& v) {
    const std::optional<Axis> f = merged(v, 2, r);
    if (!f)
      fail(n,
           "the spatial dimensions of a group norm operand are not walkable with one stride "
           "(a permuted view); codegen needs them mergeable");
    Operand o;
    o.view = &v;
    o.sa = v.strides[0];
    o.sk = v.strides[1];
    o.sf = f->stride;
    p.F = f->size;
    return o;
  };
  p.x = operand(x);
  p.out = operand(out);
  auto param = [&](size_t i) -> std::optional<Operand> {
    if (n.inputs().size() <= i || !n.input(i)) return std::nullopt;
    const HbmView& v = ctx.view(n.input(i));
    if (v.rank() != 1 || v.shape[0] != C)
      fail(n, "group norm weight/bias must be [" + std::to_string(C) + "]");
    Operand o;
    o.view = &v;
    o.sk = v.strides[0];
    return o;
  };
  p.gamma = param(1);
  p.beta = param(2);
  if (native && n.outputs().size() == 3 &&
      (needed(ctx.graph, n.output(1)) || needed(ctx.graph, n.output(2)))) {
    p.mean = &ctx.view(n.output(1));
    p.rstd = &ctx.view(n.output(2));
  }
  emit_norm(kb, p);
}

}  // namespace

bool large_layer_norm_walkable(const ir::Node& n, const ir::Value* out,
                               const PartitionContext& ctx) {
  const int64_t k = static_cast<int64_t>(n.attr_ints("normalized_shape").size());
  for (const ir::Value* v : {static_cast<const ir::Value*>(n.input(0)), out}) {
    const HbmView& h = ctx.view(v);
    if (!merged(h, 0, h.rank() - k) || !merged(h, h.rank() - k, h.rank())) return false;
  }
  return true;
}

void lower_large_layer_norm(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& x = ctx.view(n.input(0));
  const ir::Node* post = fused_norm_epilogue(kb, n);
  const HbmView& out = ctx.view(post ? post->output() : n.output());
  const int64_t r = x.rank();
  const int64_t k = static_cast<int64_t>(n.attr_ints("normalized_shape").size());
  NormPlan p;
  p.rms = n.op() == "aten.rms_norm.default";
  p.eps = scalar_attr(n, "eps", p.rms ? std::numeric_limits<float>::epsilon() : 1e-5);
  p.elementwise_affine = true;
  int64_t D = 1;
  for (int64_t d = r - k; d < r; ++d) D *= x.shape[d];
  int64_t K = 1;
  for (int64_t c = std::min<int64_t>(D, kb.target().partitions); c >= 1; --c)
    if (D % c == 0) {
      K = c;
      break;
    }
  p.K = K;
  p.F = D / K;
  p.B = 1;
  auto operand = [&](const HbmView& v, int64_t lead) {
    const std::optional<Axis> a = merged(v, 0, lead), f = merged(v, lead, v.rank());
    if (!a || !f)
      fail(n, "layer norm over " + std::to_string(D) +
                  " elements needs its leading and normalised dimensions each walkable with one "
                  "stride");
    Operand o;
    o.view = &v;
    o.sa = a->size > 1 ? a->stride : 0;
    o.sf = f->stride;
    o.sk = p.F * f->stride;
    return o;
  };
  for (int64_t d = 0; d < r - k; ++d) p.A *= x.shape[d];
  p.x = operand(x, r - k);
  p.out = operand(out, r - k);
  if (n.inputs().size() > 1 && n.input(1)) p.gamma = operand(ctx.view(n.input(1)), 0);
  if (n.inputs().size() > 2 && n.input(2)) p.beta = operand(ctx.view(n.input(2)), 0);
  if (post) p.post = operand(ctx.view(norm_epilogue_weight(n, *post)), 0);
  emit_norm(kb, p);
}

const Lowering* group_norm_lowering(const std::string& op) {
  static constexpr Lowering kGroupNorm{&lower_group_norm, nullptr};
  if (op == "aten.group_norm.default" || op == "aten.native_group_norm.default") return &kGroupNorm;
  return nullptr;
}

}  // namespace neuronc::codegen
