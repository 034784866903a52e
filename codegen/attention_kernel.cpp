// scaled_dot_product_attention, flash-style: for each (batch.., head) and each tile of up to
// 128 queries, walk the keys in tiles of up to 512 with an online softmax, so the [Sq, Sk]
// score matrix never exists in HBM.
//
//   S    = Q K^T            TensorE: stationary Q^T [D, q], moving K^T [D, k] -> PSUM [q, k]
//   s    = scale * S (+ mask) ScalarE evacuates PSUM with the scale; float masks add (VectorE),
//                           bool masks select (VectorE), is_causal is an affine_select (GpSimd)
//   m'   = max(m, rowmax(s)); p = exp(s - m') with its row sum accumulated (ScalarE)
//   c    = exp(m - m');  l = l * c + rowsum;  acc = acc * c + P V
//   P V                     TensorE: P^T chunks (TensorE transpose) [128 keys, q] x V [128, Dv]
//   out  = acc / l
// Q and K are loaded row-major and transposed on TensorE (head dims are contiguous); V loads
// directly. Grouped-query attention maps query head h to key/value head h / (Hq / Hkv).
// Key tiles entirely above the causal diagonal are skipped.
//
// Head groups: when there is one key tile (Sk <= 512) and K and V have the query's heads, the
// heads of the innermost lead dim are taken G at a time (as many as a group's SBUF budget
// allows): each of Q, K (per 128 keys), V and a head-shared mask is one transfer for all G
// heads and the output one store, so after a projection (heads back to back in a row) the
// DMAs move whole rows instead of one 64-element slice per head. Within a group the heads are
// software-pipelined three deep (head g's Q K^T, head g-1's softmax, head g-2's P V are
// emitted together), so every engine's in-order stream has independent work queued while a
// head waits on another engine. Transposes share PSUM banks.
#include <algorithm>
#include <cmath>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::ActivationFunction;
using device::AluOp;
using device::DType;
using device::Engine;
using device::MemRef;

// Dropout is not run on the device, and a value head must fit one PSUM bank row.
std::optional<std::string> refuse_sdpa(const ir::Node& n, const device::Target& t) {
  if (n.attr("dropout_p") && n.attr_float("dropout_p") != 0.0)
    return "attention dropout is not run on the device";
  if (n.inputs().size() >= 3 && n.input(2) && n.input(2)->type().rank() >= 1) {
    const ir::Dim& dv = n.input(2)->shape().back();
    if (!dv.is_symbolic() && dv.value() > static_cast<int64_t>(t.psum_bank_elems_f32()))
      return "value head dim " + std::to_string(dv.value()) + " exceeds the " +
             std::to_string(t.psum_bank_elems_f32()) + " fp32 elements of a PSUM bank";
  }
  return std::nullopt;
}

void lower_sdpa(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  // A float cast feeding Q, K or V is read through: the load DMAs convert to the operand's dtype.
  const HbmView& q = ctx.operand_view(n.input(0));
  const HbmView& k = ctx.operand_view(n.input(1));
  const HbmView& v = ctx.operand_view(n.input(2));
  const DType tq = device_dtype(n.input(0)->dtype());
  const DType tk = device_dtype(n.input(1)->dtype());
  const DType tv = device_dtype(n.input(2)->dtype());
  // A fused float cast (the only fused node) stores the result in its dtype: the output tile
  // keeps the attention's own dtype (its rounding), the store DMA converts.
  const std::vector<const ir::Node*>& fused = fused_nodes(kb);
  const HbmView& out = ctx.view(fused.empty() ? n.output() : fused.back()->output());
  const DType odt = device_dtype(n.output()->dtype());
  const bool has_mask = n.inputs().size() > 3 && n.input(3);
  const bool causal = n.attr("is_causal") && n.attr_bool("is_causal");
  const int64_t r = q.rank();
  if (r < 2 || k.rank() != r || v.rank() != r)
    fail(n, "query, key and value need equal ranks >= 2");
  const int64_t Sq = q.shape[r - 2], D = q.shape[r - 1];
  const int64_t Sk = k.shape[r - 2], Dv = v.shape[r - 1];
  const double scale = (n.attr("scale") && !n.attr_is_none("scale"))
                           ? scalar_attr(n, "scale", 1.0)
                           : 1.0 / std::sqrt(static_cast<double>(D));
  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  if (auto why = refuse_sdpa(n, t)) fail(n, *why);

  // Leading (batch, head) dims of the output; key/value dims broadcast or grouped.
  std::vector<int64_t> lead(out.shape.begin(), out.shape.end() - 2);
  const size_t nl = lead.size();
  std::optional<HbmView> mask;
  bool mask_bool = false;
  if (has_mask) {
    std::vector<int64_t> ms = lead;
    ms.push_back(Sq);
    ms.push_back(Sk);
    mask = ctx.view(n.input(3)).expand(ms);
    mask_bool = n.input(3)->dtype() == ir::DType::boolean;
  }
  auto kv_index = [&](const HbmView& x, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < nl; ++d) {
      int64_t i = idx[d];
      const int64_t size = x.shape[d];
      if (size == 1)
        i = 0;
      else if (size != lead[d])
        i = i / (lead[d] / size);  // grouped-query heads
      off += i * x.strides[d];
    }
    return off;
  };

  const bool fp32 = tq == DType::f32 || tk == DType::f32 || tv == DType::f32;
  const DType mdt = fp32 ? DType::f32 : tq;
  const uint32_t es = device::dtype_size(mdt);
  const int64_t nD = ceil_div(D, P);
  const int64_t QT = std::min(P, Sq);
  const int64_t KT = std::min<int64_t>(t.psum_bank_elems_f32(), Sk);  // one PSUM bank of scores
  const int64_t nKC = ceil_div(KT, P);                                // 128-key chunks per key tile
  const int64_t sq_s = q.strides[r - 2], sq_d = q.strides[r - 1];
  const int64_t sk_s = k.strides[r - 2], sk_d = k.strides[r - 1];
  const int64_t sv_s = v.strides[r - 2], sv_d = v.strides[r - 1];

  // SBUF.
  // Per query tile state and per key tile buffers, kSlots deep so the next (head, query tile)
  // loads and multiplies while earlier ones' softmax runs (each one is a dependent chain over
  // four engines).
  constexpr int kSlots = 3;  // >= 3: a head group keeps three heads in flight
  struct QueryState {
    uint32_t q_stage, qT, pT, acc, o_sb, m_col[2], negm, corr, rsum, l_col, rl;
  };
  QueryState qstate[kSlots];
  for (QueryState& st : qstate) {
    st.q_stage = kb.alloc(D * device::dtype_size(tq), "attention Q staging");
    st.qT = kb.alloc(nD * QT * es, "attention Q^T");
    st.pT = kb.alloc(QT * es, "attention P^T");
    st.acc = kb.alloc(Dv * 4, "attention accumulator");
    st.o_sb = kb.alloc(Dv * device::dtype_size(odt), "attention output");
    st.m_col[0] = kb.alloc(4, "attention max");
    st.m_col[1] = kb.alloc(4, "attention max");
    st.negm = kb.alloc(4, "attention -max");
    st.corr = kb.alloc(4, "attention correction");
    st.rsum = kb.alloc(4, "attention row sum");
    st.l_col = kb.alloc(4, "attention denominator");
    st.rl = kb.alloc(4, "attention 1/l");
  }
  uint32_t k_stage[kSlots], kT[kSlots], vt[kSlots], s_sb[kSlots], p_sb[kSlots], m_tile[kSlots],
      mk[kSlots];
  for (int s = 0; s < kSlots; ++s) {
    k_stage[s] = kb.alloc(D * device::dtype_size(tk), "attention K staging");
    kT[s] = kb.alloc(nD * KT * es, "attention K^T");
    vt[s] = kb.alloc(nKC * Dv * es, "attention V");
    s_sb[s] = kb.alloc(KT * 4, "attention scores");
    p_sb[s] = kb.alloc(KT * es, "attention probabilities");
    m_tile[s] = kb.alloc(4, "attention row max");
    mk[s] = has_mask ? kb.alloc(KT * device::dtype_size(mask->dtype), "attention mask") : 0;
  }

  int copy_engine = 0;
  int kv_iter = 0;
  // Transposes land in PSUM packed several to a bank (each is at most 128 fp32 per partition),
  // so a head's three transposes do not take three of the target's few banks.
  uint32_t tbank = 0, tused = t.psum_bank_bytes;
  auto transpose = [&](const MemRef& dst, const MemRef& src) {
    const uint32_t bytes = static_cast<uint32_t>(src.partition_count) * 4;
    if (tused + bytes > t.psum_bank_bytes) {
      tbank = kb.psum_bank();
      tused = 0;
    }
    MemRef ps = KernelBuilder::ps(tbank + tused, src.free_size(), src.partition_count);
    tused += bytes;
    device::Transpose tr;
    tr.dst = ps;
    tr.src = src;
    kb.emit(Engine::tensor, tr);
    device::TensorCopy c;
    c.dst = dst;
    c.src = ps;
    kb.emit((copy_engine++ % 2) ? Engine::scalar : Engine::vector, c);
  };
  auto col = [&](uint32_t off, int64_t rows) {
    return KernelBuilder::sb(off, rows, DType::f32, 1);
  };
  auto memset = [&](const MemRef& dst, double value) {
    device::Memset m;
    m.dst = dst;
    m.value = value;
    kb.emit(Engine::vector, m);
  };
  // Loads rows [row0, row0 + rows) of a [S, D] matrix (strides s_s, s_d) and writes its
  // transpose [D, rows] (per 128-chunk of D) at `dst_off` with row pitch `pitch` elements.
  auto load_transposed = [&](const HbmView& x, DType xdt, int64_t base, int64_t s_s, int64_t s_d,
                             int64_t row0, int64_t rows, uint32_t stage, uint32_t dst_off,
                             int64_t pitch, int64_t col0) {
    if (s_s == 1 && rows > 1) {  // already [D, S] in memory
      for (int64_t dc = 0; dc < nD; ++dc) {
        const int64_t d0 = dc * P, dt = std::min(P, D - d0);
        kb.dma(KernelBuilder::sb(dst_off + (dc * pitch + col0) * es, dt, mdt, rows),
               KernelBuilder::hbm(x, base + row0 * s_s + d0 * s_d, dt, s_d,
                                  {{static_cast<int32_t>(s_s), static_cast<uint32_t>(rows)}}),
               DmaRole::load);
      }
      return;
    }
    MemRef st = KernelBuilder::sb(stage, rows, xdt, D);
    kb.dma(st,
           KernelBuilder::hbm(x, base + row0 * s_s, rows, s_s,
                              {{static_cast<int32_t>(s_d), static_cast<uint32_t>(D)}}),
           DmaRole::load);
    for (int64_t dc = 0; dc < nD; ++dc) {
      const int64_t d0 = dc * P, dt = std::min(P, D - d0);
      MemRef src = st;
      src.offset += d0 * device::dtype_size(xdt);
      src.levels[0].count = static_cast<uint32_t>(dt);
      transpose(KernelBuilder::sb(dst_off + (dc * pitch + col0) * es, dt, mdt, rows), src);
    }
  };

  // Head groups: G consecutive heads of the innermost lead dim share every load and the store
  // (one transfer moves all their rows; after a linear projection the heads of a row lie back
  // to back, so it streams long descriptors instead of one 64-element row per head). Only with
  // one key tile, K and V holding the query's heads, and rows not already transposed.
  const int64_t inner_heads = nl ? lead[nl - 1] : 1;
  int64_t G = 1;
  if (nl >= 1 && inner_heads > 1 && Sk <= KT && k.shape[nl - 1] == inner_heads &&
      v.shape[nl - 1] == inner_heads && sq_s != 1 && sk_s != 1) {
    const auto group_bytes = [&](int64_t g) {
      return 2 * (g * D * device::dtype_size(tq) + nKC * g * D * device::dtype_size(tk) +
                  nKC * g * Dv * es + g * Dv * device::dtype_size(odt));
    };
    const uint64_t budget = t.sbuf_partition_bytes / 8;
    G = inner_heads;
    while (G > 1 && static_cast<uint64_t>(group_bytes(G)) > budget) G = G % 2 ? 1 : G / 2;
  }
  uint32_t qg[2] = {}, kg[2] = {}, vg[2] = {}, og[2] = {}, mg[2] = {};
  const bool mask_per_group = G > 1 && mask && mask->strides[nl - 1] == 0;
  if (G > 1)
    for (int s = 0; s < 2; ++s) {
      if (mask_per_group)
        mg[s] = kb.alloc(KT * device::dtype_size(mask->dtype), "attention mask of a head group");
      qg[s] = kb.alloc(G * D * device::dtype_size(tq), "attention Q of a head group");
      kg[s] = kb.alloc(nKC * G * D * device::dtype_size(tk), "attention K of a head group");
      vg[s] = kb.alloc(nKC * G * Dv * es, "attention V of a head group");
      og[s] = kb.alloc(G * Dv * device::dtype_size(odt), "attention output of a head group");
    }
  // Transposes `rows` x D staged at `stage` (columns from `col`) into [D, rows] per 128-chunk.
  auto transpose_staged = [&](uint32_t stage, DType xdt, int64_t col, int64_t rows,
                              uint32_t dst_off, int64_t pitch, int64_t col0) {
    for (int64_t dc = 0; dc < nD; ++dc) {
      const int64_t d0 = dc * P, dt = std::min(P, D - d0);
      MemRef src = KernelBuilder::sb(stage + (col + d0) * device::dtype_size(xdt), rows, xdt, dt);
      transpose(KernelBuilder::sb(dst_off + (dc * pitch + col0) * es, dt, mdt, rows), src);
    }
  };

  // One (head, query tile): the online softmax over the key tiles. `kv(k0, kt, slot)` makes
  // K^T and V of the key tile ready in `slot`; `v_chunk(slot, c0)` is V's 128-key chunk at c0.
  // Leaves acc / l in `o`.
  auto load_mask = [&](const MemRef& dst, int64_t mb, int64_t q0, int64_t k0, int64_t qt,
                       int64_t kt) {
    const int64_t ms_q = mask->strides[nl], ms_k = mask->strides[nl + 1];
    kb.dma(dst,
           KernelBuilder::hbm(*mask, mb + q0 * ms_q + k0 * ms_k, qt, ms_q,
                              {{static_cast<int32_t>(ms_k), static_cast<uint32_t>(kt)}}),
           DmaRole::load);
  };
  // A head group whose mask is the same for every head loads it once (`shared_mask`).
  std::optional<MemRef> shared_mask;
  // The online softmax of one (head, query tile), in steps so a head group can interleave
  // heads: begin (state reset), qk (S = Q K^T of a key tile), scores (scale, mask), softmax
  // (running max, exp, denominator), pv_update (acc) and end (o = acc / l).
  // Head groups have one key tile (Sk <= KT): no online rescaling.
  bool single_key_tile = false;
  auto begin = [&](const QueryState& st, int64_t qt) {
    memset(col(st.m_col[0], qt), -3.0e38);
    memset(col(st.l_col, qt), 0.0);
    memset(KernelBuilder::sb(st.acc, qt, DType::f32, Dv), 0.0);
  };
  // S = Q K^T into PSUM.
  auto qk = [&](const QueryState& st, int sl, int64_t qt, int64_t kt) {
    const uint32_t qT = st.qT;
    const MemRef S = KernelBuilder::ps(kb.psum_bank(), qt, kt);
    for (int64_t dc = 0; dc < nD; ++dc) {
      const int64_t dt = std::min(P, D - dc * P);
      device::MatMul mm;
      mm.dst = S;
      mm.stationary = KernelBuilder::sb(qT + dc * qt * es, dt, mdt, qt);
      mm.moving = KernelBuilder::sb(kT[sl] + dc * kt * es, dt, mdt, kt);
      mm.accumulate = dc > 0;
      kb.emit(Engine::tensor, mm);
    }
    kb.add_flops(2.0 * qt * kt * D + 2.0 * qt * kt * Dv);
    return S;
  };
  // s = scale * S, masked.
  auto scores = [&](const MemRef& S, int sl, int64_t q0, int64_t k0, int64_t qt, int64_t kt,
                    int64_t mb) {
    const MemRef s = KernelBuilder::sb(s_sb[sl], qt, DType::f32, kt);
    // One key tile: the scores are kept negated (s' = -scale * S, exactly -s), so the row min
    // of s' is the -max the exponent needs, without a negation on VectorE per head.
    const bool neg = single_key_tile;
    const float masked = neg ? INFINITY : -INFINITY;
    {
      device::Activation a;
      a.dst = s;
      a.src = S;
      a.scale = static_cast<float>(neg ? -scale : scale);
      kb.emit(Engine::scalar, a);
    }
    if (mask) {
      MemRef mt;
      if (shared_mask) {
        mt = *shared_mask;
      } else {
        mt = KernelBuilder::sb(mk[sl], qt, mask->dtype, kt);
        load_mask(mt, mb, q0, k0, qt, kt);
      }
      if (mask_bool) {
        device::Select sel;
        sel.dst = s;
        sel.predicate = mt;
        sel.on_true = s;
        sel.on_false = masked;
        kb.emit(Engine::vector, sel);
      } else {
        device::TensorTensor tt;
        tt.dst = s;
        tt.in0 = s;
        tt.in1 = mt;
        tt.op = neg ? AluOp::subtract : AluOp::add;  // -(s + m) = s' - m, exactly
        kb.emit(Engine::vector, tt);
      }
    }
    if (causal && k0 + kt - 1 > q0) {
      device::AffineSelect as;
      as.dst = s;
      as.src = s;
      as.offset = static_cast<int32_t>(q0 - k0);
      as.channel_multiplier = 1;
      as.pattern = {-1, 0, 0, 0};
      as.compare = device::CompareOp::ge;
      as.on_false = masked;
      kb.emit(Engine::gpsimd, as);
    }
  };
  // Running max, p = exp(s - max), correction and denominator. With one key tile the running
  // max is the tile's max and the denominator its row sum (what the online update computes,
  // through a correction of exactly 0).
  auto softmax = [&](const QueryState& st, int sl, int& mi, int64_t qt, int64_t kt) {
    const MemRef s = KernelBuilder::sb(s_sb[sl], qt, DType::f32, kt);
    const MemRef tile_max = col(m_tile[sl], qt), negm = col(st.negm, qt);
    const MemRef m_old = col(st.m_col[mi], qt), m_new = col(st.m_col[1 - mi], qt);
    if (single_key_tile) {
      // s' = -s: min(s') = -max(s), and exp(-1 * s' + min(s')) = exp(s - max), bit for bit.
      kb.tensor_reduce(negm, s, device::ReduceOp::min);
      kb.activation(KernelBuilder::sb(p_sb[sl], qt, mdt, kt), s, ActivationFunction::exp, negm,
                    col(st.rsum, qt), -1.0f);
      return;
    }
    kb.tensor_reduce(tile_max, s, device::ReduceOp::max);
    kb.tensor_tensor(m_new, m_old, tile_max, AluOp::max);
    kb.tensor_scalar(negm, m_new, AluOp::multiply, -1.0f);
    kb.activation(KernelBuilder::sb(p_sb[sl], qt, mdt, kt), s, ActivationFunction::exp, negm,
                  col(st.rsum, qt));
    kb.activation(col(st.corr, qt), m_old, ActivationFunction::exp, negm);
    kb.tensor_scalar(col(st.l_col, qt), col(st.l_col, qt), AluOp::multiply, col(st.corr, qt),
                     AluOp::add, col(st.rsum, qt));
    mi = 1 - mi;
  };
  // acc = acc * correction + P V.
  auto pv_update = [&](const QueryState& st, int sl, int64_t qt, int64_t kt, const auto& v_chunk) {
    const uint32_t pT = st.pT, acc = st.acc, corr = st.corr;
    const MemRef p = KernelBuilder::sb(p_sb[sl], qt, mdt, kt);
    // P V.
    const MemRef pv = KernelBuilder::ps(kb.psum_bank(), qt, Dv);
    for (int64_t c0 = 0; c0 < kt; c0 += P) {
      const int64_t cn = std::min(P, kt - c0);
      MemRef src = p;
      src.offset += c0 * es;
      src.levels[0].count = static_cast<uint32_t>(cn);
      const MemRef pt = KernelBuilder::sb(pT, cn, mdt, qt);
      transpose(pt, src);
      device::MatMul mm;
      mm.dst = pv;
      mm.stationary = pt;
      mm.moving = v_chunk(sl, c0, cn);
      mm.accumulate = c0 > 0;
      kb.emit(Engine::tensor, mm);
    }
    if (single_key_tile) return pv;  // normalised straight out of PSUM
    const MemRef a = KernelBuilder::sb(acc, qt, DType::f32, Dv);
    kb.tensor_scalar(a, a, AluOp::multiply, col(corr, qt));
    device::TensorTensor tt;
    tt.dst = a;
    tt.in0 = pv;
    tt.in1 = a;
    tt.op = AluOp::add;
    kb.emit(Engine::vector, tt);
    return pv;
  };

  // o = num / den per row (ScalarE reciprocal, VectorE scale).
  auto normalize = [&](const QueryState& st, int64_t qt, const MemRef& num, uint32_t den,
                       const MemRef& o) {
    kb.activation(col(st.rl, qt), col(den, qt), ActivationFunction::reciprocal);
    kb.tensor_scalar(o, num, AluOp::multiply, col(st.rl, qt));
  };
  auto end = [&](const QueryState& st, int64_t qt, const MemRef& o) {
    normalize(st, qt, KernelBuilder::sb(st.acc, qt, DType::f32, Dv), st.l_col, o);
  };

  auto attend = [&](const QueryState& st, int64_t q0, int64_t qt, int64_t mb, const MemRef& o,
                    const auto& kv, const auto& v_chunk) {
    begin(st, qt);
    int mi = 0;
    for (int64_t k0 = 0; k0 < Sk; k0 += KT, ++kv_iter) {
      if (causal && k0 > q0 + qt - 1) break;
      const int64_t kt = std::min(KT, Sk - k0);
      const int sl = kv_iter % kSlots;
      kv(k0, kt, sl);
      scores(qk(st, sl, qt, kt), sl, q0, k0, qt, kt, mb);
      softmax(st, sl, mi, qt, kt);
      pv_update(st, sl, qt, kt, v_chunk);
    }
    end(st, qt, o);
  };

  single_key_tile = G > 1;
  int64_t heads = 1;
  for (int64_t d : lead) heads *= d;
  std::vector<int64_t> idx(nl, 0);
  int q_iter = 0, g_iter = 0;
  const int64_t so_s = out.strides[nl], so_d = out.strides[nl + 1];
  for (int64_t h = 0; h < heads; h += G) {
    int64_t qb = 0, ob = 0, mb = 0;
    for (size_t d = 0; d < nl; ++d) {
      qb += idx[d] * q.strides[d];
      ob += idx[d] * out.strides[d];
      if (mask) mb += idx[d] * mask->strides[d];
    }
    const int64_t kb_off = kv_index(k, idx), vb_off = kv_index(v, idx);
    for (int64_t q0 = 0; q0 < Sq; q0 += QT) {
      const int64_t qt = std::min(QT, Sq - q0);
      if (G == 1) {
        const QueryState& st = qstate[q_iter++ % kSlots];
        load_transposed(q, tq, qb, sq_s, sq_d, q0, qt, st.q_stage, st.qT, qt, 0);
        auto kv = [&](int64_t k0, int64_t kt, int sl) {
          for (int64_t c0 = 0; c0 < kt; c0 += P) {
            const int64_t cn = std::min(P, kt - c0);
            load_transposed(k, tk, kb_off, sk_s, sk_d, k0 + c0, cn, k_stage[sl], kT[sl], kt, c0);
            kb.dma(KernelBuilder::sb(vt[sl] + (c0 / P) * Dv * es, cn, mdt, Dv),
                   KernelBuilder::hbm(v, vb_off + (k0 + c0) * sv_s, cn, sv_s,
                                      {{static_cast<int32_t>(sv_d), static_cast<uint32_t>(Dv)}}),
                   DmaRole::load);
          }
        };
        auto v_chunk = [&](int sl, int64_t c0, int64_t cn) {
          return KernelBuilder::sb(vt[sl] + (c0 / P) * Dv * es, cn, mdt, Dv);
        };
        const MemRef o = KernelBuilder::sb(st.o_sb, qt, odt, Dv);
        attend(st, q0, qt, mb, o, kv, v_chunk);
        kb.dma(KernelBuilder::hbm(out, ob + q0 * so_s, qt, so_s,
                                  {{static_cast<int32_t>(so_d), static_cast<uint32_t>(Dv)}}),
               o, DmaRole::store);
        continue;
      }
      // A head group: Q, K and V of all G heads in one transfer each (K and V per 128 keys).
      const int gs = g_iter++ % 2;
      const int64_t hq = q.strides[nl - 1], hk = k.strides[nl - 1], hv = v.strides[nl - 1],
                    hm = mask ? mask->strides[nl - 1] : 0, ho = out.strides[nl - 1];
      const auto lvl = [](int64_t stride, int64_t count) {
        return device::AccessLevel{static_cast<int32_t>(stride), static_cast<uint32_t>(count)};
      };
      kb.dma(KernelBuilder::sb(qg[gs], qt, tq, G * D),
             KernelBuilder::hbm(q, qb + q0 * sq_s, qt, sq_s, {lvl(hq, G), lvl(sq_d, D)}),
             DmaRole::load);
      for (int64_t c0 = 0; c0 < Sk; c0 += P) {
        const int64_t cn = std::min(P, Sk - c0), c = c0 / P;
        kb.dma(KernelBuilder::sb(kg[gs] + c * G * D * device::dtype_size(tk), cn, tk, G * D),
               KernelBuilder::hbm(k, kb_off + c0 * sk_s, cn, sk_s, {lvl(hk, G), lvl(sk_d, D)}),
               DmaRole::load);
        kb.dma(KernelBuilder::sb(vg[gs] + c * G * Dv * es, cn, mdt, G * Dv),
               KernelBuilder::hbm(v, vb_off + c0 * sv_s, cn, sv_s, {lvl(hv, G), lvl(sv_d, Dv)}),
               DmaRole::load);
      }
      if (mask_per_group) {
        shared_mask = KernelBuilder::sb(mg[gs], qt, mask->dtype, Sk);
        load_mask(*shared_mask, mb, q0, 0, qt, Sk);
      }
      // Software-pipelined over the group: head g's scores are emitted before head g-1's
      // softmax and P V, so each engine's in-order stream has the next head's work queued
      // while the previous head waits on another engine.
      const int q_base = q_iter, kv_base = kv_iter;
      q_iter += static_cast<int>(G);
      kv_iter += static_cast<int>(G);
      const auto state = [&](int64_t g) -> const QueryState& {
        return qstate[(q_base + g) % kSlots];
      };
      const auto slot = [&](int64_t g) { return static_cast<int>((kv_base + g) % kSlots); };
      std::vector<MemRef> S_of(static_cast<size_t>(G));
      const auto first_half = [&](int64_t g) {
        const QueryState& st = state(g);
        const int sl = slot(g);
        transpose_staged(qg[gs], tq, g * D, qt, st.qT, qt, 0);
        for (int64_t c0 = 0; c0 < Sk; c0 += P) {
          const int64_t cn = std::min(P, Sk - c0), c = c0 / P;
          transpose_staged(kg[gs] + c * G * D * device::dtype_size(tk), tk, g * D, cn, kT[sl], Sk,
                           c0);
        }
        S_of[g] = qk(st, sl, qt, Sk);
      };
      const auto v_chunk_of = [&](int64_t g) {
        return [&, g](int, int64_t c0, int64_t cn) {
          return KernelBuilder::sb(vg[gs] + ((c0 / P) * G + g) * Dv * es, cn, mdt, Dv);
        };
      };
      const auto middle = [&](int64_t g) {
        int mi = 0;
        scores(S_of[g], slot(g), q0, 0, qt, Sk, mb + g * hm);
        softmax(state(g), slot(g), mi, qt, Sk);
      };
      const auto last = [&](int64_t g) {
        const MemRef pv = pv_update(state(g), slot(g), qt, Sk, v_chunk_of(g));
        // One key tile: o = P V / rowsum, read straight from PSUM.
        normalize(state(g), qt, pv, state(g).rsum,
                  KernelBuilder::sb(og[gs] + g * Dv * device::dtype_size(odt), qt, odt, Dv));
      };
      // Three stages in flight: head g's Q K^T, head g-1's softmax, head g-2's P V.
      for (int64_t g = 0; g < G + 2; ++g) {
        if (g < G) first_half(g);
        if (g >= 1 && g - 1 < G) middle(g - 1);
        if (g >= 2) last(g - 2);
      }
      shared_mask.reset();
      kb.dma(KernelBuilder::hbm(out, ob + q0 * so_s, qt, so_s, {lvl(ho, G), lvl(so_d, Dv)}),
             KernelBuilder::sb(og[gs], qt, odt, G * Dv), DmaRole::store);
    }
    for (int64_t step = 0; step < G; ++step)
      for (int64_t d = static_cast<int64_t>(nl) - 1; d >= 0; --d) {
        if (++idx[d] < lead[d]) break;
        idx[d] = 0;
      }
  }
}

}  // namespace

const Lowering* attention_lowering(const std::string& op) {
  static constexpr Lowering kSdpa{&lower_sdpa, &refuse_sdpa};
  if (op == "aten.scaled_dot_product_attention.default") return &kSdpa;
  return nullptr;
}

}  // namespace neuronc::codegen
