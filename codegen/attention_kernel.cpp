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
// With a mask, a row whose every key is masked comes out 0 (PyTorch's safe softmax), not NaN:
// the row max is floored at -FLT_MAX and the denominator biased by FLT_MIN.
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
#include <cfloat>
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

// Per query tile state and per key tile buffers are kSlots deep so the next (head, query tile)
// loads and multiplies while earlier ones' softmax runs (each one is a dependent chain over
// four engines).
constexpr int kSlots = 3;  // >= 3: a head group keeps three heads in flight

// SBUF of one (head, query tile) in flight: Q staging and Q^T, P^T, the fp32 accumulator, the
// output tile and the online softmax's columns.
struct QueryState {
  uint32_t q_stage, qT, pT, acc, o_sb, m_col[2], negm, corr, rsum, l_col, rl;
};

// Offsets of one (batch.., head) in Q, the output, the mask, K and V.
struct HeadBases {
  int64_t q = 0, out = 0, mask = 0, k = 0, v = 0;
};

// A query tile of a head group in flight: Q, K and V of its G heads in group slot `gs`, the
// first query state and key slot of the group, and each head's scores in PSUM.
struct GroupTile {
  int gs = 0;
  int64_t q0 = 0, qt = 0;
  int64_t mb = 0, hm = 0;  // the mask's offset and head stride
  int q_base = 0, kv_base = 0;
  std::vector<MemRef> S;
};

device::AccessLevel level(int64_t stride, int64_t count) {
  return device::AccessLevel{static_cast<int32_t>(stride), static_cast<uint32_t>(count)};
}

// lower_sdpa as one object: the constructor reads the operands and plans the tiles and head
// groups; run() allocates SBUF and walks the heads. The online softmax of one (head, query
// tile) is in steps so a head group can interleave heads: begin (state reset), qk (S = Q K^T of
// a key tile), scores (scale, mask), softmax (running max, exp, denominator), pv_update (acc)
// and end (o = acc / l).
class SdpaLowering {
 public:
  SdpaLowering(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx)
      : kb_(kb),
        n_(n),
        ctx_(ctx),
        t_(kb.target()),
        // A float cast feeding Q, K or V is read through: the load DMAs convert to the
        // operand's dtype.
        q_(ctx.operand_view(n.input(0))),
        k_(ctx.operand_view(n.input(1))),
        v_(ctx.operand_view(n.input(2))),
        // A fused float cast (the only fused node) stores the result in its dtype: the output
        // tile keeps the attention's own dtype (its rounding), the store DMA converts.
        out_(ctx.view(fused_nodes(kb).empty() ? n.output() : fused_nodes(kb).back()->output())) {
    plan_operands();
    plan_tiles();
    plan_head_groups();
    tused_ = t_.psum_bank_bytes;  // the first transpose takes a bank
  }

  void run() {
    allocate_slots();
    allocate_group_slots();
    // Head groups have one key tile (Sk <= KT): no online rescaling.
    single_key_tile_ = G_ > 1;
    int64_t heads = 1;
    for (int64_t d : lead_) heads *= d;
    std::vector<int64_t> idx(nl_, 0);
    for (int64_t h = 0; h < heads; h += G_) {
      HeadBases hb;
      for (size_t d = 0; d < nl_; ++d) {
        hb.q += idx[d] * q_.strides[d];
        hb.out += idx[d] * out_.strides[d];
        if (mask_) hb.mask += idx[d] * mask_->strides[d];
      }
      hb.k = kv_index(k_, idx);
      hb.v = kv_index(v_, idx);
      for (int64_t q0 = 0; q0 < Sq_; q0 += QT_) {
        const int64_t qt = std::min(QT_, Sq_ - q0);
        if (G_ == 1)
          lower_query_tile(hb, q0, qt);
        else
          lower_group_tile(hb, q0, qt);
      }
      for (int64_t step = 0; step < G_; ++step)
        for (int64_t d = static_cast<int64_t>(nl_) - 1; d >= 0; --d) {
          if (++idx[d] < lead_[d]) break;
          idx[d] = 0;
        }
    }
  }

 private:
  // Dtypes, dims and the mask; refuses what the device cannot run.
  void plan_operands() {
    tq_ = device_dtype(n_.input(0)->dtype());
    tk_ = device_dtype(n_.input(1)->dtype());
    tv_ = device_dtype(n_.input(2)->dtype());
    odt_ = device_dtype(n_.output()->dtype());
    const bool has_mask = n_.inputs().size() > 3 && n_.input(3);
    causal_ = n_.attr("is_causal") && n_.attr_bool("is_causal");
    r_ = q_.rank();
    if (r_ < 2 || k_.rank() != r_ || v_.rank() != r_)
      fail(n_, "query, key and value need equal ranks >= 2");
    Sq_ = q_.shape[r_ - 2];
    D_ = q_.shape[r_ - 1];
    Sk_ = k_.shape[r_ - 2];
    Dv_ = v_.shape[r_ - 1];
    scale_ = (n_.attr("scale") && !n_.attr_is_none("scale"))
                 ? scalar_attr(n_, "scale", 1.0)
                 : 1.0 / std::sqrt(static_cast<double>(D_));
    P_ = t_.partitions;
    if (auto why = refuse_sdpa(n_, t_)) fail(n_, *why);
    // Leading (batch, head) dims of the output; key/value dims broadcast or grouped.
    lead_.assign(out_.shape.begin(), out_.shape.end() - 2);
    nl_ = lead_.size();
    if (has_mask) {
      std::vector<int64_t> ms = lead_;
      ms.push_back(Sq_);
      ms.push_back(Sk_);
      mask_ = ctx_.view(n_.input(3)).expand(ms);
      mask_bool_ = n_.input(3)->dtype() == ir::DType::boolean;
    }
  }

  // Offset of (batch.., head) `idx` in K or V: broadcast dims read index 0, grouped-query heads
  // their group's.
  int64_t kv_index(const HbmView& x, const std::vector<int64_t>& idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < nl_; ++d) {
      int64_t i = idx[d];
      const int64_t size = x.shape[d];
      if (size == 1)
        i = 0;
      else if (size != lead_[d])
        i = i / (lead_[d] / size);  // grouped-query heads
      off += i * x.strides[d];
    }
    return off;
  }

  void plan_tiles() {
    const bool fp32 = tq_ == DType::f32 || tk_ == DType::f32 || tv_ == DType::f32;
    mdt_ = fp32 ? DType::f32 : tq_;
    es_ = device::dtype_size(mdt_);
    nD_ = ceil_div(D_, P_);
    QT_ = std::min(P_, Sq_);
    KT_ = std::min<int64_t>(t_.psum_bank_elems_f32(), Sk_);  // one PSUM bank of scores
    nKC_ = ceil_div(KT_, P_);                                // 128-key chunks per key tile
    sq_s_ = q_.strides[r_ - 2];
    sq_d_ = q_.strides[r_ - 1];
    sk_s_ = k_.strides[r_ - 2];
    sk_d_ = k_.strides[r_ - 1];
    sv_s_ = v_.strides[r_ - 2];
    sv_d_ = v_.strides[r_ - 1];
  }

  // Head groups: G consecutive heads of the innermost lead dim share every load and the store
  // (one transfer moves all their rows; after a linear projection the heads of a row lie back
  // to back, so it streams long descriptors instead of one 64-element row per head). Only with
  // one key tile, K and V holding the query's heads, and rows not already transposed.
  void plan_head_groups() {
    const int64_t inner_heads = nl_ ? lead_[nl_ - 1] : 1;
    if (nl_ >= 1 && inner_heads > 1 && Sk_ <= KT_ && k_.shape[nl_ - 1] == inner_heads &&
        v_.shape[nl_ - 1] == inner_heads && sq_s_ != 1 && sk_s_ != 1) {
      const auto group_bytes = [&](int64_t g) {
        return 2 * (g * D_ * device::dtype_size(tq_) + nKC_ * g * D_ * device::dtype_size(tk_) +
                    nKC_ * g * Dv_ * es_ + g * Dv_ * device::dtype_size(odt_));
      };
      const uint64_t budget = t_.sbuf_partition_bytes / 8;
      G_ = inner_heads;
      while (G_ > 1 && static_cast<uint64_t>(group_bytes(G_)) > budget) G_ = G_ % 2 ? 1 : G_ / 2;
    }
    mask_per_group_ = G_ > 1 && mask_ && mask_->strides[nl_ - 1] == 0;
  }

  // Per query tile state and per key tile buffers, kSlots deep.
  void allocate_slots() {
    for (QueryState& st : qstate_) {
      st.q_stage = kb_.alloc(D_ * device::dtype_size(tq_), "attention Q staging");
      st.qT = kb_.alloc(nD_ * QT_ * es_, "attention Q^T");
      st.pT = kb_.alloc(QT_ * es_, "attention P^T");
      st.acc = kb_.alloc(Dv_ * 4, "attention accumulator");
      st.o_sb = kb_.alloc(Dv_ * device::dtype_size(odt_), "attention output");
      st.m_col[0] = kb_.alloc(4, "attention max");
      st.m_col[1] = kb_.alloc(4, "attention max");
      st.negm = kb_.alloc(4, "attention -max");
      st.corr = kb_.alloc(4, "attention correction");
      st.rsum = kb_.alloc(4, "attention row sum");
      st.l_col = kb_.alloc(4, "attention denominator");
      st.rl = kb_.alloc(4, "attention 1/l");
    }
    for (int s = 0; s < kSlots; ++s) {
      // One staging row per 128-key chunk: a key tile's chunks load back to back instead of
      // each waiting for the previous one's transpose to free the stage.
      k_stage_[s] = kb_.alloc(nKC_ * D_ * device::dtype_size(tk_), "attention K staging");
      kT_[s] = kb_.alloc(nD_ * KT_ * es_, "attention K^T");
      vt_[s] = kb_.alloc(nKC_ * Dv_ * es_, "attention V");
      s_sb_[s] = kb_.alloc(KT_ * 4, "attention scores");
      p_sb_[s] = kb_.alloc(KT_ * es_, "attention probabilities");
      m_tile_[s] = kb_.alloc(4, "attention row max");
      mk_[s] = mask_ ? kb_.alloc(KT_ * device::dtype_size(mask_->dtype), "attention mask") : 0;
    }
  }

  // Double-buffered Q, K, V, output (and head-shared mask) of a head group.
  void allocate_group_slots() {
    if (G_ <= 1) return;
    for (int s = 0; s < 2; ++s) {
      if (mask_per_group_)
        mg_[s] =
            kb_.alloc(KT_ * device::dtype_size(mask_->dtype), "attention mask of a head group");
      qg_[s] = kb_.alloc(G_ * D_ * device::dtype_size(tq_), "attention Q of a head group");
      kg_[s] = kb_.alloc(nKC_ * G_ * D_ * device::dtype_size(tk_), "attention K of a head group");
      vg_[s] = kb_.alloc(nKC_ * G_ * Dv_ * es_, "attention V of a head group");
      og_[s] = kb_.alloc(G_ * Dv_ * device::dtype_size(odt_), "attention output of a head group");
    }
  }

  // Transposes land in PSUM packed several to a bank (each is at most 128 fp32 per partition),
  // so a head's three transposes do not take three of the target's few banks.
  void transpose(const MemRef& dst, const MemRef& src) {
    const uint32_t bytes = static_cast<uint32_t>(src.partition_count) * 4;
    if (tused_ + bytes > t_.psum_bank_bytes) {
      tbank_ = kb_.psum_bank();
      tused_ = 0;
    }
    MemRef ps = KernelBuilder::ps(tbank_ + tused_, src.free_size(), src.partition_count);
    tused_ += bytes;
    device::Transpose tr;
    tr.dst = ps;
    tr.src = src;
    kb_.emit(Engine::tensor, tr);
    device::TensorCopy c;
    c.dst = dst;
    c.src = ps;
    kb_.emit((copy_engine_++ % 2) ? Engine::scalar : Engine::vector, c);
  }

  static MemRef col(uint32_t off, int64_t rows) {
    return KernelBuilder::sb(off, rows, DType::f32, 1);
  }

  void memset(const MemRef& dst, double value) {
    device::Memset m;
    m.dst = dst;
    m.value = value;
    kb_.emit(Engine::vector, m);
  }

  // Loads rows [row0, row0 + rows) of a [S, D] matrix (strides s_s, s_d) and writes its
  // transpose [D, rows] (per 128-chunk of D) at `dst_off` with row pitch `pitch` elements.
  void load_transposed(const HbmView& x, DType xdt, int64_t base, int64_t s_s, int64_t s_d,
                       int64_t row0, int64_t rows, uint32_t stage, uint32_t dst_off, int64_t pitch,
                       int64_t col0) {
    if (s_s == 1 && rows > 1) {  // already [D, S] in memory
      for (int64_t dc = 0; dc < nD_; ++dc) {
        const int64_t d0 = dc * P_, dt = std::min(P_, D_ - d0);
        kb_.dma(KernelBuilder::sb(dst_off + (dc * pitch + col0) * es_, dt, mdt_, rows),
                KernelBuilder::hbm(x, base + row0 * s_s + d0 * s_d, dt, s_d,
                                   {{static_cast<int32_t>(s_s), static_cast<uint32_t>(rows)}}),
                DmaRole::load);
      }
      return;
    }
    MemRef st = KernelBuilder::sb(stage, rows, xdt, D_);
    kb_.dma(st,
            KernelBuilder::hbm(x, base + row0 * s_s, rows, s_s,
                               {{static_cast<int32_t>(s_d), static_cast<uint32_t>(D_)}}),
            DmaRole::load);
    for (int64_t dc = 0; dc < nD_; ++dc) {
      const int64_t d0 = dc * P_, dt = std::min(P_, D_ - d0);
      MemRef src = st;
      src.offset += d0 * device::dtype_size(xdt);
      src.levels[0].count = static_cast<uint32_t>(dt);
      transpose(KernelBuilder::sb(dst_off + (dc * pitch + col0) * es_, dt, mdt_, rows), src);
    }
  }

  // Transposes `rows` x D staged at `stage` (columns from `col`) into [D, rows] per 128-chunk.
  void transpose_staged(uint32_t stage, DType xdt, int64_t col, int64_t rows, uint32_t dst_off,
                        int64_t pitch, int64_t col0) {
    for (int64_t dc = 0; dc < nD_; ++dc) {
      const int64_t d0 = dc * P_, dt = std::min(P_, D_ - d0);
      MemRef src = KernelBuilder::sb(stage + (col + d0) * device::dtype_size(xdt), rows, xdt, dt);
      transpose(KernelBuilder::sb(dst_off + (dc * pitch + col0) * es_, dt, mdt_, rows), src);
    }
  }

  void load_mask(const MemRef& dst, int64_t mb, int64_t q0, int64_t k0, int64_t qt, int64_t kt) {
    const int64_t ms_q = mask_->strides[nl_], ms_k = mask_->strides[nl_ + 1];
    kb_.dma(dst,
            KernelBuilder::hbm(*mask_, mb + q0 * ms_q + k0 * ms_k, qt, ms_q,
                               {{static_cast<int32_t>(ms_k), static_cast<uint32_t>(kt)}}),
            DmaRole::load);
  }

  void begin(const QueryState& st, int64_t qt) {
    memset(col(st.m_col[0], qt), -3.0e38);
    memset(col(st.l_col, qt), 0.0);
    memset(KernelBuilder::sb(st.acc, qt, DType::f32, Dv_), 0.0);
  }

  // S = Q K^T into PSUM.
  MemRef qk(const QueryState& st, int sl, int64_t qt, int64_t kt) {
    const uint32_t qT = st.qT;
    const MemRef S = KernelBuilder::ps(kb_.psum_bank(), qt, kt);
    for (int64_t dc = 0; dc < nD_; ++dc) {
      const int64_t dt = std::min(P_, D_ - dc * P_);
      device::MatMul mm;
      mm.dst = S;
      mm.stationary = KernelBuilder::sb(qT + dc * qt * es_, dt, mdt_, qt);
      mm.moving = KernelBuilder::sb(kT_[sl] + dc * kt * es_, dt, mdt_, kt);
      mm.accumulate = dc > 0;
      kb_.emit(Engine::tensor, mm);
    }
    kb_.add_flops(2.0 * qt * kt * D_ + 2.0 * qt * kt * Dv_);
    return S;
  }

  // s = scale * S, masked.
  void scores(const MemRef& S, int sl, int64_t q0, int64_t k0, int64_t qt, int64_t kt, int64_t mb) {
    const MemRef s = KernelBuilder::sb(s_sb_[sl], qt, DType::f32, kt);
    // One key tile: the scores are kept negated (s' = -scale * S, exactly -s), so the row min
    // of s' is the -max the exponent needs, without a negation on VectorE per head.
    const bool neg = single_key_tile_;
    const float masked = neg ? INFINITY : -INFINITY;
    {
      device::Activation a;
      a.dst = s;
      a.src = S;
      a.scale = static_cast<float>(neg ? -scale_ : scale_);
      kb_.emit(Engine::scalar, a);
    }
    if (mask_) {
      MemRef mt;
      if (shared_mask_) {
        mt = *shared_mask_;
      } else {
        mt = KernelBuilder::sb(mk_[sl], qt, mask_->dtype, kt);
        load_mask(mt, mb, q0, k0, qt, kt);
      }
      if (mask_bool_) {
        device::Select sel;
        sel.dst = s;
        sel.predicate = mt;
        sel.on_true = s;
        sel.on_false = masked;
        kb_.emit(Engine::vector, sel);
      } else {
        device::TensorTensor tt;
        tt.dst = s;
        tt.in0 = s;
        tt.in1 = mt;
        tt.op = neg ? AluOp::subtract : AluOp::add;  // -(s + m) = s' - m, exactly
        kb_.emit(Engine::vector, tt);
      }
    }
    if (causal_ && k0 + kt - 1 > q0) {
      device::AffineSelect as;
      as.dst = s;
      as.src = s;
      as.offset = static_cast<int32_t>(q0 - k0);
      as.channel_multiplier = 1;
      as.pattern = {-1, 0, 0, 0};
      as.compare = device::CompareOp::ge;
      as.on_false = masked;
      kb_.emit(Engine::gpsimd, as);
    }
  }

  // Running max, p = exp(s - max), correction and denominator. With one key tile the running
  // max is the tile's max and the denominator its row sum (what the online update computes,
  // through a correction of exactly 0).
  void softmax(const QueryState& st, int sl, int& mi, int64_t qt, int64_t kt) {
    const MemRef s = KernelBuilder::sb(s_sb_[sl], qt, DType::f32, kt);
    const MemRef tile_max = col(m_tile_[sl], qt), negm = col(st.negm, qt);
    const MemRef m_old = col(st.m_col[mi], qt), m_new = col(st.m_col[1 - mi], qt);
    if (single_key_tile_) {
      // s' = -s: min(s') = -max(s), and exp(-1 * s' + min(s')) = exp(s - max), bit for bit.
      kb_.tensor_reduce(negm, s, device::ReduceOp::min);
      // A row whose every key is masked has max -inf: a finite floor makes its p exactly 0
      // (not exp(-inf + inf) = NaN), so it comes out 0, as PyTorch's safe softmax gives.
      if (mask_) kb_.tensor_scalar(negm, negm, AluOp::min, FLT_MAX);
      kb_.activation(KernelBuilder::sb(p_sb_[sl], qt, mdt_, kt), s, ActivationFunction::exp, negm,
                     col(st.rsum, qt), -1.0f);
      return;
    }
    kb_.tensor_reduce(tile_max, s, device::ReduceOp::max);
    kb_.tensor_tensor(m_new, m_old, tile_max, AluOp::max);
    // The floor above: a row masked in every key tile so far keeps p and the correction 0.
    kb_.tensor_scalar(negm, m_new, AluOp::multiply, -1.0f, mask_ ? AluOp::min : AluOp::bypass,
                      mask_ ? FLT_MAX : 0.0f);
    kb_.activation(KernelBuilder::sb(p_sb_[sl], qt, mdt_, kt), s, ActivationFunction::exp, negm,
                   col(st.rsum, qt));
    kb_.activation(col(st.corr, qt), m_old, ActivationFunction::exp, negm);
    kb_.tensor_scalar(col(st.l_col, qt), col(st.l_col, qt), AluOp::multiply, col(st.corr, qt),
                      AluOp::add, col(st.rsum, qt));
    mi = 1 - mi;
  }

  // acc = acc * correction + P V. `v_chunk(slot, c0, cn)` is V's 128-key chunk at c0.
  template <typename VChunk>
  MemRef pv_update(const QueryState& st, int sl, int64_t qt, int64_t kt, const VChunk& v_chunk) {
    const uint32_t pT = st.pT, acc = st.acc, corr = st.corr;
    const MemRef p = KernelBuilder::sb(p_sb_[sl], qt, mdt_, kt);
    // P V.
    const MemRef pv = KernelBuilder::ps(kb_.psum_bank(), qt, Dv_);
    for (int64_t c0 = 0; c0 < kt; c0 += P_) {
      const int64_t cn = std::min(P_, kt - c0);
      MemRef src = p;
      src.offset += c0 * es_;
      src.levels[0].count = static_cast<uint32_t>(cn);
      const MemRef pt = KernelBuilder::sb(pT, cn, mdt_, qt);
      transpose(pt, src);
      device::MatMul mm;
      mm.dst = pv;
      mm.stationary = pt;
      mm.moving = v_chunk(sl, c0, cn);
      mm.accumulate = c0 > 0;
      kb_.emit(Engine::tensor, mm);
    }
    if (single_key_tile_) return pv;  // normalised straight out of PSUM
    const MemRef a = KernelBuilder::sb(acc, qt, DType::f32, Dv_);
    kb_.tensor_scalar(a, a, AluOp::multiply, col(corr, qt));
    device::TensorTensor tt;
    tt.dst = a;
    tt.in0 = pv;
    tt.in1 = a;
    tt.op = AluOp::add;
    kb_.emit(Engine::vector, tt);
    return pv;
  }

  // o = num / den per row (ScalarE reciprocal, VectorE scale).
  void normalize(const QueryState& st, int64_t qt, const MemRef& num, uint32_t den,
                 const MemRef& o) {
    // 1 / (l + FLT_MIN): l >= 1 for a row with a real key (its max contributes exp(0)), where
    // the bias changes nothing; a fully masked row has l = 0 and a numerator of 0, so 0.
    kb_.activation(col(st.rl, qt), col(den, qt), ActivationFunction::reciprocal,
                   mask_ ? FLT_MIN : 0.0f);
    kb_.tensor_scalar(o, num, AluOp::multiply, col(st.rl, qt));
  }

  void end(const QueryState& st, int64_t qt, const MemRef& o) {
    normalize(st, qt, KernelBuilder::sb(st.acc, qt, DType::f32, Dv_), st.l_col, o);
  }

  // One (head, query tile): the online softmax over the key tiles. `kv(k0, kt, slot)` makes
  // K^T and V of the key tile ready in `slot`; `v_chunk(slot, c0, cn)` is V's 128-key chunk
  // at c0. Leaves acc / l in `o`.
  template <typename KV, typename VChunk>
  void attend(const QueryState& st, int64_t q0, int64_t qt, int64_t mb, const MemRef& o,
              const KV& kv, const VChunk& v_chunk) {
    begin(st, qt);
    int mi = 0;
    for (int64_t k0 = 0; k0 < Sk_; k0 += KT_, ++kv_iter_) {
      if (causal_ && k0 > q0 + qt - 1) break;
      const int64_t kt = std::min(KT_, Sk_ - k0);
      const int sl = kv_iter_ % kSlots;
      kv(k0, kt, sl);
      scores(qk(st, sl, qt, kt), sl, q0, k0, qt, kt, mb);
      softmax(st, sl, mi, qt, kt);
      pv_update(st, sl, qt, kt, v_chunk);
    }
    end(st, qt, o);
  }

  // One head's query tile [q0, q0 + qt): Q^T, then per key tile K^T and V, and the store.
  void lower_query_tile(const HeadBases& hb, int64_t q0, int64_t qt) {
    const QueryState& st = qstate_[q_iter_++ % kSlots];
    load_transposed(q_, tq_, hb.q, sq_s_, sq_d_, q0, qt, st.q_stage, st.qT, qt, 0);
    auto kv = [&](int64_t k0, int64_t kt, int sl) {
      for (int64_t c0 = 0; c0 < kt; c0 += P_) {
        const int64_t cn = std::min(P_, kt - c0);
        const auto stage =
            static_cast<uint32_t>(k_stage_[sl] + (c0 / P_) * D_ * device::dtype_size(tk_));
        load_transposed(k_, tk_, hb.k, sk_s_, sk_d_, k0 + c0, cn, stage, kT_[sl], kt, c0);
        kb_.dma(KernelBuilder::sb(vt_[sl] + (c0 / P_) * Dv_ * es_, cn, mdt_, Dv_),
                KernelBuilder::hbm(v_, hb.v + (k0 + c0) * sv_s_, cn, sv_s_,
                                   {{static_cast<int32_t>(sv_d_), static_cast<uint32_t>(Dv_)}}),
                DmaRole::load);
      }
    };
    auto v_chunk = [&](int sl, int64_t c0, int64_t cn) {
      return KernelBuilder::sb(vt_[sl] + (c0 / P_) * Dv_ * es_, cn, mdt_, Dv_);
    };
    const MemRef o = KernelBuilder::sb(st.o_sb, qt, odt_, Dv_);
    attend(st, q0, qt, hb.mask, o, kv, v_chunk);
    const int64_t so_s = out_.strides[nl_], so_d = out_.strides[nl_ + 1];
    kb_.dma(KernelBuilder::hbm(out_, hb.out + q0 * so_s, qt, so_s,
                               {{static_cast<int32_t>(so_d), static_cast<uint32_t>(Dv_)}}),
            o, DmaRole::store);
  }

  // A head group's query tile: Q, K and V of all G heads in one transfer each (K and V per 128
  // keys), the heads software-pipelined, and one store.
  void lower_group_tile(const HeadBases& hb, int64_t q0, int64_t qt) {
    GroupTile gt;
    gt.gs = g_iter_++ % 2;
    gt.q0 = q0;
    gt.qt = qt;
    gt.mb = hb.mask;
    const int64_t hq = q_.strides[nl_ - 1], hk = k_.strides[nl_ - 1], hv = v_.strides[nl_ - 1],
                  ho = out_.strides[nl_ - 1];
    gt.hm = mask_ ? mask_->strides[nl_ - 1] : 0;
    const int gs = gt.gs;
    kb_.dma(KernelBuilder::sb(qg_[gs], qt, tq_, G_ * D_),
            KernelBuilder::hbm(q_, hb.q + q0 * sq_s_, qt, sq_s_, {level(hq, G_), level(sq_d_, D_)}),
            DmaRole::load);
    for (int64_t c0 = 0; c0 < Sk_; c0 += P_) {
      const int64_t cn = std::min(P_, Sk_ - c0), c = c0 / P_;
      kb_.dma(
          KernelBuilder::sb(kg_[gs] + c * G_ * D_ * device::dtype_size(tk_), cn, tk_, G_ * D_),
          KernelBuilder::hbm(k_, hb.k + c0 * sk_s_, cn, sk_s_, {level(hk, G_), level(sk_d_, D_)}),
          DmaRole::load);
      kb_.dma(
          KernelBuilder::sb(vg_[gs] + c * G_ * Dv_ * es_, cn, mdt_, G_ * Dv_),
          KernelBuilder::hbm(v_, hb.v + c0 * sv_s_, cn, sv_s_, {level(hv, G_), level(sv_d_, Dv_)}),
          DmaRole::load);
    }
    if (mask_per_group_) {
      shared_mask_ = KernelBuilder::sb(mg_[gs], qt, mask_->dtype, Sk_);
      load_mask(*shared_mask_, hb.mask, q0, 0, qt, Sk_);
    }
    // Software-pipelined over the group: head g's scores are emitted before head g-1's
    // softmax and P V, so each engine's in-order stream has the next head's work queued
    // while the previous head waits on another engine.
    gt.q_base = q_iter_;
    gt.kv_base = kv_iter_;
    q_iter_ += static_cast<int>(G_);
    kv_iter_ += static_cast<int>(G_);
    gt.S.resize(static_cast<size_t>(G_));
    // Three stages in flight: head g's Q K^T, head g-1's softmax, head g-2's P V.
    for (int64_t g = 0; g < G_ + 2; ++g) {
      if (g < G_) group_qk(gt, g);
      if (g >= 1 && g - 1 < G_) group_softmax(gt, g - 1);
      if (g >= 2) group_pv(gt, g - 2);
    }
    shared_mask_.reset();
    const int64_t so_s = out_.strides[nl_], so_d = out_.strides[nl_ + 1];
    kb_.dma(
        KernelBuilder::hbm(out_, hb.out + q0 * so_s, qt, so_s, {level(ho, G_), level(so_d, Dv_)}),
        KernelBuilder::sb(og_[gs], qt, odt_, G_ * Dv_), DmaRole::store);
  }

  const QueryState& group_state(const GroupTile& gt, int64_t g) const {
    return qstate_[(gt.q_base + g) % kSlots];
  }
  static int group_slot(const GroupTile& gt, int64_t g) {
    return static_cast<int>((gt.kv_base + g) % kSlots);
  }

  // Head g of a group: Q^T and K^T from the group's staged rows, then S = Q K^T.
  void group_qk(GroupTile& gt, int64_t g) {
    const QueryState& st = group_state(gt, g);
    const int sl = group_slot(gt, g);
    transpose_staged(qg_[gt.gs], tq_, g * D_, gt.qt, st.qT, gt.qt, 0);
    for (int64_t c0 = 0; c0 < Sk_; c0 += P_) {
      const int64_t cn = std::min(P_, Sk_ - c0), c = c0 / P_;
      transpose_staged(kg_[gt.gs] + c * G_ * D_ * device::dtype_size(tk_), tk_, g * D_, cn, kT_[sl],
                       Sk_, c0);
    }
    gt.S[g] = qk(st, sl, gt.qt, Sk_);
  }

  // Head g of a group: scores and softmax.
  void group_softmax(const GroupTile& gt, int64_t g) {
    int mi = 0;
    scores(gt.S[g], group_slot(gt, g), gt.q0, 0, gt.qt, Sk_, gt.mb + g * gt.hm);
    softmax(group_state(gt, g), group_slot(gt, g), mi, gt.qt, Sk_);
  }

  // Head g of a group: P V, and (one key tile) o = P V / rowsum read straight from PSUM.
  void group_pv(const GroupTile& gt, int64_t g) {
    const int gs = gt.gs;
    const auto v_chunk = [this, gs, g](int, int64_t c0, int64_t cn) {
      return KernelBuilder::sb(vg_[gs] + ((c0 / P_) * G_ + g) * Dv_ * es_, cn, mdt_, Dv_);
    };
    const MemRef pv = pv_update(group_state(gt, g), group_slot(gt, g), gt.qt, Sk_, v_chunk);
    normalize(group_state(gt, g), gt.qt, pv, group_state(gt, g).rsum,
              KernelBuilder::sb(og_[gs] + g * Dv_ * device::dtype_size(odt_), gt.qt, odt_, Dv_));
  }

  KernelBuilder& kb_;
  const ir::Node& n_;
  const PartitionContext& ctx_;
  const device::Target& t_;
  const HbmView& q_;
  const HbmView& k_;
  const HbmView& v_;
  const HbmView& out_;

  // Operands.
  DType tq_ = DType::f32, tk_ = DType::f32, tv_ = DType::f32, odt_ = DType::f32;
  bool causal_ = false;
  int64_t r_ = 0, Sq_ = 0, D_ = 0, Sk_ = 0, Dv_ = 0;
  double scale_ = 1;
  int64_t P_ = 0;
  std::vector<int64_t> lead_;  // leading (batch, head) dims of the output
  size_t nl_ = 0;
  std::optional<HbmView> mask_;
  bool mask_bool_ = false;

  // Tiles and head groups.
  DType mdt_ = DType::f32;
  uint32_t es_ = 0;
  int64_t nD_ = 0, QT_ = 0, KT_ = 0, nKC_ = 0;
  int64_t sq_s_ = 0, sq_d_ = 0, sk_s_ = 0, sk_d_ = 0, sv_s_ = 0, sv_d_ = 0;
  int64_t G_ = 1;  // heads per group
  bool mask_per_group_ = false;
  bool single_key_tile_ = false;

  // SBUF.
  QueryState qstate_[kSlots] = {};
  uint32_t k_stage_[kSlots] = {}, kT_[kSlots] = {}, vt_[kSlots] = {}, s_sb_[kSlots] = {},
           p_sb_[kSlots] = {}, m_tile_[kSlots] = {}, mk_[kSlots] = {};
  uint32_t qg_[2] = {}, kg_[2] = {}, vg_[2] = {}, og_[2] = {}, mg_[2] = {};
  // A head group whose mask is the same for every head loads it once.
  std::optional<MemRef> shared_mask_;

  // Rotation counters and the PSUM bank the transposes fill.
  int copy_engine_ = 0, kv_iter_ = 0, q_iter_ = 0, g_iter_ = 0;
  uint32_t tbank_ = 0, tused_ = 0;
};

void lower_sdpa(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  SdpaLowering(kb, n, ctx).run();
}

}  // namespace

const Lowering* attention_lowering(const std::string& op) {
  static constexpr Lowering kSdpa{&lower_sdpa, &refuse_sdpa};
  if (op == "aten.scaled_dot_product_attention.default") return &kSdpa;
  return nullptr;
}

}  // namespace neuronc::codegen
