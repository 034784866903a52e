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
  if (scalar_attr(n, "dropout_p", 0.0) != 0.0)
    fail(n, "dropout_p must be 0 on the device (inference)");
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
  if (Dv > t.psum_bank_elems_f32())
    fail(n, "value head dim " + std::to_string(Dv) + " exceeds 512");

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
  const int64_t KT = std::min<int64_t>(512, Sk);
  const int64_t nKC = ceil_div(KT, P);  // 128-key chunks per key tile
  const int64_t sq_s = q.strides[r - 2], sq_d = q.strides[r - 1];
  const int64_t sk_s = k.strides[r - 2], sk_d = k.strides[r - 1];
  const int64_t sv_s = v.strides[r - 2], sv_d = v.strides[r - 1];

  // SBUF.
  // Per query tile state, double-buffered so the next (head, query tile) loads and multiplies
  // while this one's softmax runs.
  struct QueryState {
    uint32_t q_stage, qT, pT, acc, o_sb, m_col[2], negm, corr, rsum, l_col, rl;
  };
  QueryState qstate[2];
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
  uint32_t k_stage[2], kT[2], vt[2], s_sb[2], p_sb[2], m_tile[2], mk[2];
  for (int s = 0; s < 2; ++s) {
    k_stage[s] = kb.alloc(D * device::dtype_size(tk), "attention K staging");
    kT[s] = kb.alloc(nD * KT * es, "attention K^T");
    vt[s] = kb.alloc(nKC * Dv * es, "attention V");
    s_sb[s] = kb.alloc(KT * 4, "attention scores");
    p_sb[s] = kb.alloc(KT * es, "attention probabilities");
    m_tile[s] = kb.alloc(4, "attention row max");
    mk[s] = has_mask ? kb.alloc(KT * device::dtype_size(mask->dtype), "attention mask") : 0;
  }

  int copy_engine = 0;
  auto transpose = [&](const MemRef& dst, const MemRef& src) {
    MemRef ps = KernelBuilder::ps(kb.psum_bank(), src.free_size(), src.partition_count);
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

  int64_t heads = 1;
  for (int64_t d : lead) heads *= d;
  std::vector<int64_t> idx(nl, 0);
  int kv_iter = 0, q_iter = 0;
  for (int64_t h = 0; h < heads; ++h) {
    int64_t qb = 0, ob = 0, mb = 0;
    for (size_t d = 0; d < nl; ++d) {
      qb += idx[d] * q.strides[d];
      ob += idx[d] * out.strides[d];
      if (mask) mb += idx[d] * mask->strides[d];
    }
    const int64_t kb_off = kv_index(k, idx), vb_off = kv_index(v, idx);
    for (int64_t q0 = 0; q0 < Sq; q0 += QT) {
      const int64_t qt = std::min(QT, Sq - q0);
      const QueryState& st = qstate[q_iter++ % 2];
      const uint32_t qT = st.qT, pT = st.pT, acc = st.acc, o_sb = st.o_sb, negm = st.negm,
                     corr = st.corr, rsum = st.rsum, l_col = st.l_col, rl = st.rl;
      const uint32_t* m_col = st.m_col;
      load_transposed(q, tq, qb, sq_s, sq_d, q0, qt, st.q_stage, qT, qt, 0);
      int mi = 0;
      memset(col(m_col[0], qt), -3.0e38);
      memset(col(l_col, qt), 0.0);
      memset(KernelBuilder::sb(acc, qt, DType::f32, Dv), 0.0);
      for (int64_t k0 = 0; k0 < Sk; k0 += KT, ++kv_iter) {
        if (causal && k0 > q0 + qt - 1) break;
        const int64_t kt = std::min(KT, Sk - k0);
        const int sl = kv_iter % 2;
        // K^T [D, kt] and V chunks.
        for (int64_t c0 = 0; c0 < kt; c0 += P) {
          const int64_t cn = std::min(P, kt - c0);
          load_transposed(k, tk, kb_off, sk_s, sk_d, k0 + c0, cn, k_stage[sl], kT[sl], kt, c0);
          kb.dma(KernelBuilder::sb(vt[sl] + (c0 / P) * Dv * es, cn, mdt, Dv),
                 KernelBuilder::hbm(v, vb_off + (k0 + c0) * sv_s, cn, sv_s,
                                    {{static_cast<int32_t>(sv_d), static_cast<uint32_t>(Dv)}}),
                 DmaRole::load);
        }
        // S = Q K^T.
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
        const MemRef s = KernelBuilder::sb(s_sb[sl], qt, DType::f32, kt);
        {
          device::Activation a;
          a.dst = s;
          a.src = S;
          a.scale = static_cast<float>(scale);
          kb.emit(Engine::scalar, a);
        }
        if (mask) {
          const int64_t ms_q = mask->strides[nl], ms_k = mask->strides[nl + 1];
          const MemRef mt = KernelBuilder::sb(mk[sl], qt, mask->dtype, kt);
          kb.dma(mt,
                 KernelBuilder::hbm(*mask, mb + q0 * ms_q + k0 * ms_k, qt, ms_q,
                                    {{static_cast<int32_t>(ms_k), static_cast<uint32_t>(kt)}}),
                 DmaRole::load);
          if (mask_bool) {
            device::Select sel;
            sel.dst = s;
            sel.predicate = mt;
            sel.on_true = s;
            sel.on_false = -INFINITY;
            kb.emit(Engine::vector, sel);
          } else {
            device::TensorTensor tt;
            tt.dst = s;
            tt.in0 = s;
            tt.in1 = mt;
            tt.op = AluOp::add;
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
          as.on_false = -INFINITY;
          kb.emit(Engine::gpsimd, as);
        }
        // Online softmax.
        const MemRef m_old = col(m_col[mi], qt), m_new = col(m_col[1 - mi], qt);
        device::TensorReduce red;
        red.dst = col(m_tile[sl], qt);
        red.src = s;
        red.op = device::ReduceOp::max;
        kb.emit(Engine::vector, red);
        {
          device::TensorTensor tt;
          tt.dst = m_new;
          tt.in0 = m_old;
          tt.in1 = col(m_tile[sl], qt);
          tt.op = AluOp::max;
          kb.emit(Engine::vector, tt);
        }
        kb.tensor_scalar(col(negm, qt), m_new, AluOp::multiply, -1.0f);
        const MemRef p = KernelBuilder::sb(p_sb[sl], qt, mdt, kt);
        {
          device::Activation a;
          a.dst = p;
          a.src = s;
          a.function = ActivationFunction::exp;
          a.bias = col(negm, qt);
          a.accumulate_dst = col(rsum, qt);
          kb.emit(Engine::scalar, a);
          device::Activation c;
          c.dst = col(corr, qt);
          c.src = m_old;
          c.function = ActivationFunction::exp;
          c.bias = col(negm, qt);
          kb.emit(Engine::scalar, c);
        }
        kb.tensor_scalar(col(l_col, qt), col(l_col, qt), AluOp::multiply, col(corr, qt), AluOp::add,
                         col(rsum, qt));
        mi = 1 - mi;
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
          mm.moving = KernelBuilder::sb(vt[sl] + (c0 / P) * Dv * es, cn, mdt, Dv);
          mm.accumulate = c0 > 0;
          kb.emit(Engine::tensor, mm);
        }
        const MemRef a = KernelBuilder::sb(acc, qt, DType::f32, Dv);
        kb.tensor_scalar(a, a, AluOp::multiply, col(corr, qt));
        device::TensorTensor tt;
        tt.dst = a;
        tt.in0 = pv;
        tt.in1 = a;
        tt.op = AluOp::add;
        kb.emit(Engine::vector, tt);
      }
      // out = acc / l.
      {
        device::Activation a;
        a.dst = col(rl, qt);
        a.src = col(l_col, qt);
        a.function = ActivationFunction::reciprocal;
        kb.emit(Engine::scalar, a);
      }
      const MemRef o = KernelBuilder::sb(o_sb, qt, odt, Dv);
      kb.tensor_scalar(o, KernelBuilder::sb(acc, qt, DType::f32, Dv), AluOp::multiply, col(rl, qt));
      const int64_t so_s = out.strides[nl], so_d = out.strides[nl + 1];
      kb.dma(KernelBuilder::hbm(out, ob + q0 * so_s, qt, so_s,
                                {{static_cast<int32_t>(so_d), static_cast<uint32_t>(Dv)}}),
             o, DmaRole::store);
    }
    for (int64_t d = static_cast<int64_t>(nl) - 1; d >= 0; --d) {
      if (++idx[d] < lead[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

LowerFn attention_lowering(const std::string& op) {
  if (op == "aten.scaled_dot_product_attention.default") return &lower_sdpa;
  return nullptr;
}

}  // namespace neuronc::codegen
