// Convolution (conv1d / conv2d / convolution; any stride, padding, dilation and groups) as an
// implicit GEMM on TensorE. Contraction on the partitions, output channels on the PSUM
// partitions, output positions on the moving free axis, accumulation in one PSUM bank:
//   out[o, y, x] += sum_c W[o, c, kh, kw] * xpad[c, y*sh + kh*dh, x*sw + kw*dw]
// Three ways to put the contraction on the partitions:
//  - channels (C_in >= 128 / KH, most layers): partitions = input channels in chunks of 128, one
//    matmul per (chunk, kh, kw); the moving operand is a two-level strided window of the
//    zero-padded input band in SBUF (no im2col copy).
//  - packed rows (few input channels, C_in * KH <= 128): partition (c, kh) holds only the input
//    rows its kernel row reads (row y*sh + kh*dh for output row y), so one matmul per kw
//    contracts over C_in * KH partitions. When C_in * KH * KW <= 128 the band is also copied
//    (SBUF-to-SBUF DMA) into KW partition blocks shifted by kw*dw columns, and one matmul per
//    output tile contracts over all C_in * KH * KW taps: a 3-channel first layer uses 27 (3x3)
//    or 21 x 7 (7x7) rows of the PE array instead of 3.
//  - depthwise (groups = C_in = C_out): per 128-channel chunk and tap, the stationary operand is
//    diag(w[:, tap]) built in SBUF (identity x per-partition weight, one VectorE op per tap), so
//    depthwise layers also run on TensorE with PSUM accumulation over the taps.
// Other grouped convolutions run the channel scheme per group. Input bands (output rows whose
// inputs fit the SBUF budget) double-buffer so the next band loads while this one computes.
// Bias (and batch norm folded into it) and a fused unary activation are applied by the ScalarE
// PSUM evacuation with a per-partition bias; the tile stores as NCHW rows.
#include <algorithm>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::DType;
using device::Engine;
using device::MemRef;

// SBUF bytes per partition a conv kernel may use for its input bands (two slots) and weights:
// fixed shares of the target's partition (40 and 48 KiB of trn1's 192 KiB).
int64_t band_budget(const device::Target& t) {
  return static_cast<int64_t>(t.sbuf_partition_bytes) * 5 / 24;
}
int64_t weight_budget(const device::Target& t) {
  return static_cast<int64_t>(t.sbuf_partition_bytes) / 4;
}

// The dtype both operands take in SBUF: fp32 when either IR operand is fp32, else the narrow one.
device::DType operand_dtype(const ir::Node& n) {
  const device::DType xdt = device_dtype(n.input(0)->dtype()),
                      wdt = device_dtype(n.input(1)->dtype());
  return xdt == device::DType::f32 || wdt == device::DType::f32 ? device::DType::f32 : xdt;
}

// Dense (channel-contracting) weights stay resident when every input-channel chunk of every
// output fits the weight budget; otherwise they stream one output chunk (of every input
// channel) at a time, and this is that chunk's bytes per partition (0 when resident).
int64_t streamed_weight_chunk_bytes(const ConvGeometry& g, int64_t es, const device::Target& t) {
  const int64_t P = t.partitions, KK = g.KH * g.KW, Cg = g.C / g.groups, Og = g.O / g.groups;
  if (g.groups == 1 && ceil_div(Cg, P) * Og * KK * es <= weight_budget(t)) return 0;
  return ceil_div(std::min(Cg, g.C), P) * std::min(P, g.O) * KK * es;
}

// The input bands of a convolution in channel mode (one input channel per partition, in
// chunks): output rows per band and input rows each band holds, so that a band's tiles (every
// channel chunk) fit the band budget, and at least one output row. plan_bands() sizes its bands
// with it, and conv_geometry() refuses a convolution whose bands and weights overflow.
struct ChannelBands {
  int64_t chunks = 1, out_rows = 1, in_rows = 1;
};
ChannelBands channel_bands(const ConvGeometry& g, int64_t chunks, int64_t Wp, int64_t es,
                           const device::Target& t) {
  ChannelBands b;
  b.chunks = chunks;
  const int64_t row_extra = (g.KH - 1) * g.dh;
  const int64_t per_row = chunks * g.sh * Wp * es;
  b.out_rows = std::max<int64_t>(
      1, (band_budget(t) - chunks * row_extra * Wp * es) / std::max<int64_t>(per_row, 1));
  b.out_rows = std::min(b.out_rows, g.Ho);
  b.in_rows = (b.out_rows - 1) * g.sh + row_extra + 1;
  return b;
}

int64_t sbuf_aligned(int64_t bytes) {
  return static_cast<int64_t>(KernelBuilder::aligned(static_cast<uint64_t>(bytes)));
}

std::vector<int64_t> spatial_attr(const ir::Node& n, const char* name, int64_t dflt, size_t k) {
  std::vector<int64_t> v;
  if (n.attr(name) && !n.attr_is_none(name)) {
    const ir::Attribute* a = n.attr(name);
    if (std::holds_alternative<std::string>(*a)) return std::vector<int64_t>(k, dflt);
    v = n.attr_ints(name);
  }
  if (v.empty()) v.push_back(dflt);
  while (v.size() < k) v.push_back(v.back());
  return v;
}

}  // namespace

std::optional<std::string> conv_geometry(const ir::Node& n, const device::Target& t,
                                         ConvGeometry& g) {
  const int64_t r = n.input(0)->type().rank();
  if (r != 3 && r != 4) return "only 1-D and 2-D convolutions are lowered";
  if (n.input(1)->type().rank() != r) return "weight rank differs from input rank";
  if (n.attr("transposed") && n.attr_bool("transposed"))
    return "transposed convolution is not lowered yet";
  const size_t k = static_cast<size_t>(r - 2);
  const auto x = static_shape(n.input(0)), w = static_shape(n.input(1)),
             o = static_shape(n.output());
  const auto stride = spatial_attr(n, "stride", 1, k), dil = spatial_attr(n, "dilation", 1, k);
  std::vector<int64_t> pad = spatial_attr(n, "padding", 0, k);
  g.B = x[0];
  g.C = x[1];
  g.O = w[0];
  g.groups = n.attr("groups") ? n.attr_int("groups") : 1;
  if (k == 1) {
    g.H = 1, g.W = x[2], g.KH = 1, g.KW = w[2], g.Ho = 1, g.Wo = o[2];
    g.sh = 1, g.sw = stride[0], g.dh = 1, g.dw = dil[0];
  } else {
    g.H = x[2], g.W = x[3], g.KH = w[2], g.KW = w[3], g.Ho = o[2], g.Wo = o[3];
    g.sh = stride[0], g.sw = stride[1], g.dh = dil[0], g.dw = dil[1];
  }
  // String padding ("same" / "valid"): PyTorch puts the odd element of "same" on the far side.
  const ir::Attribute* pa = n.attr("padding");
  if (pa && std::holds_alternative<std::string>(*pa)) {
    const bool same = std::get<std::string>(*pa) == "same";
    auto lo = [&](int64_t kk, int64_t d) { return same ? d * (kk - 1) / 2 : 0; };
    g.pt = k == 1 ? 0 : lo(g.KH, g.dh);
    g.pl = lo(g.KW, g.dw);
  } else {
    g.pt = k == 1 ? 0 : pad[0];
    g.pl = k == 1 ? pad[0] : pad[1];
  }
  if (g.groups < 1 || g.C % g.groups || g.O % g.groups) return "invalid groups";
  if (g.sh * ((g.Ho - 1) * g.sh + (g.KH - 1) * g.dh + 1) > 32767 || g.sw > 32767 || g.dw > 32767)
    return "stride too large for an SBUF access pattern";
  const int64_t wp = (g.Wo - 1) * g.sw + (g.KW - 1) * g.dw + 1;
  if (wp * 4 > band_budget(t))
    return "input row of " + std::to_string(wp) + " elements is too long";
  // Streamed dense weight chunks must fit their budget. DeepLab's fp32 ASPP (2048 -> 256, 3 x 3)
  // is 72 KiB a chunk, over trn1's 48 KiB: refused here, so it runs on the host rather than
  // failing the compile.
  const bool depthwise = g.groups > 1 && g.C == g.groups && g.O == g.groups;
  if (!depthwise && !conv_packs_rows(g, t.partitions)) {
    const int64_t es = device::dtype_size(operand_dtype(n));
    const int64_t per_oc = streamed_weight_chunk_bytes(g, es, t);
    if (per_oc > weight_budget(t))
      return "convolution weights need " + std::to_string(per_oc) +
             " SBUF bytes per partition per output chunk";
    // The bands (double-buffered unless there is one band of one image and one group) and the
    // weights are the kernel's first allocations: when they alone overflow a partition, the
    // kernel cannot be built (DeepLab's dilated ASPP: 73 input rows for one output row).
    const int64_t P = t.partitions, Cg = g.C / g.groups, KK = g.KH * g.KW;
    const ChannelBands b = channel_bands(g, ceil_div(Cg, P), wp, es, t);
    const bool one_band = ceil_div(g.Ho, b.out_rows) == 1 && g.B == 1 && g.groups == 1;
    const int64_t bands = (one_band ? 1 : 2) * b.chunks * sbuf_aligned(b.in_rows * wp * es);
    const int64_t weights = per_oc == 0 ? sbuf_aligned(ceil_div(Cg, P) * (g.O / g.groups) * KK * es)
                                        : 2 * sbuf_aligned(per_oc);
    if (bands + weights > static_cast<int64_t>(t.sbuf_partition_bytes))
      return "convolution input bands (" + std::to_string(bands) + " bytes) and weights (" +
             std::to_string(weights) + " bytes) need more SBUF per partition than the " +
             std::to_string(t.sbuf_partition_bytes) + " a " + std::string(t.name) + " has";
  }
  return std::nullopt;
}

bool conv_packs_rows(const ConvGeometry& g, int64_t partitions) {
  const bool depthwise = g.groups > 1 && g.C == g.groups && g.O == g.groups;
  return !depthwise && g.groups == 1 && g.KH * g.KW > 1 && g.C * g.KH <= partitions && g.C < 64;
}

std::pair<const ir::Value*, const ir::Value*> channel_scale_operands(const ir::Node& n,
                                                                     const ir::Node& conv) {
  if (n.op() != "aten.mul.Tensor" || n.inputs().size() != 2 || n.outputs().size() != 1 ||
      conv.inputs().empty() || conv.input(0) != n.output())
    return {nullptr, nullptr};
  const ir::Value* out = n.output();
  const int64_t r = out->type().rank();
  for (int k = 0; k < 2; ++k) {
    const ir::Value* x = n.input(k);
    const ir::Value* s = n.input(1 - k);
    if (!x || !s || x == s || !(x->shape() == out->shape()) || x->dtype() != out->dtype() ||
        s->type().rank() != r || !ir::is_floating(s->dtype()))
      continue;
    const std::vector<int64_t> ss = static_shape(s), os = static_shape(out);
    bool per_channel = (ss[0] == 1 || ss[0] == os[0]) && ss[1] == os[1];
    for (int64_t d = 2; d < r; ++d) per_channel = per_channel && ss[d] == 1;
    if (per_channel) return {x, s};
  }
  return {nullptr, nullptr};
}

namespace {

// One input-channel group of the contraction (depthwise: one 128-channel chunk).
struct ConvJob {
  int64_t ci0, CI;  // input channels
  int64_t o0, OJ;   // output channels
  int64_t wc0;      // weight input-channel index of ci0
  bool diagonal;    // depthwise: stationary = diag(w[c, tap])
};

// Contraction layouts (see the file comment).
enum class ConvMode { channels, packed_rows, packed_taps };

// One band of output rows [Y0, Y0 + rb) of image b, its input loaded in `tiles` (one per
// channel chunk), at partition quadrant `qbase` (row-packed stems).
struct ConvBand {
  int64_t b = 0, Y0 = 0, rb = 0;
  uint16_t qbase = 0;
  const std::vector<uint32_t>* tiles = nullptr;
};

// A job in progress: its index, its first bias column, its input-channel chunks and (depthwise)
// the slot of its diagonal weights.
struct JobState {
  const ConvJob* job = nullptr;
  size_t index = 0;
  int64_t chunk_base = 0;
  int64_t nC = 1;
  uint32_t dslot = 0;
};

// Output channels [o_abs, o_abs + on) of a job (oq from the job's first), weights at `wbase`.
struct OutChunk {
  int64_t oq = 0, on = 0, o_abs = 0;
  uint32_t wbase = 0;
};

// lower_conv as one object: the constructor reads the geometry, the fused nodes and the operand
// layouts and plans the contraction and the bands; run() allocates SBUF, loads what stays
// resident and emits the loop nest (job, image, band, output chunk, output tile). The methods
// are the phases, called in the order their instructions must appear.
class ConvLowering {
 public:
  ConvLowering(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx)
      : kb_(kb), n_(n), ctx_(ctx), t_(kb.target()) {
    if (auto why = conv_geometry(n, t_, g_)) fail(n, *why);
    analyse_fused();
    plan_strides();
    plan_contraction();
    plan_bands();
  }

  void run() {
    allocate_bands();
    allocate_weights();
    allocate_outputs();
    load_resident_weights();
    load_bias();
    load_channel_scale();
    int64_t chunk_base = 0;  // bias column of the job's first output chunk
    for (size_t ji = 0; ji < jobs_.size(); ++ji) {
      const ConvJob& job = jobs_[ji];
      lower_job({&job, ji, chunk_base, packed_ ? 1 : ceil_div(job.CI, P_), 0});
      chunk_base += ceil_div(job.OJ, P_);
    }
  }

 private:
  // A fused per-channel scale of the input (squeeze-and-excitation x * s) multiplies each
  // loaded band: read x and s instead of the product. Fused epilogue nodes, in order: [unary
  // activation or float cast] [add(residual) [activation]]. `staged` is the value the unfused
  // convolution kernel would store (its dtype is the evacuation tile's, so a residual add sees
  // exactly the unfused operand); `result` the value the kernel writes.
  void analyse_fused() {
    x_value_ = n_.input(0);
    for (const ir::Node* f : fused_nodes(kb_))
      if (auto [sx, ss] = channel_scale_operands(*f, n_); sx) x_value_ = sx, scale_value_ = ss;
    result_ = n_.output();
    staged_ = n_.output();
    for (const ir::Node* f : fused_nodes(kb_)) {
      if (channel_scale_operands(*f, n_).first) continue;
      if (f->op() == "aten.add.Tensor") {
        staged_ = result_;
        residual_ = f->input(0) == result_ ? f->input(1) : f->input(0);
      } else if (residual_) {
        post_act_ = *epilogue_activation(*f);
        post_activation_ = true;
      } else {
        act_ = *epilogue_activation(*f);
      }
      result_ = f->output();
    }
  }

  // Operand views and their strides as 2-D NCHW (a 1-D tensor's H stride is unused).
  void plan_strides() {
    // A fused float cast of an operand converts in the load DMA: read its source.
    x_ = &ctx_.operand_view(x_value_);
    w_ = &ctx_.operand_view(n_.input(1));
    has_bias_ = n_.inputs().size() > 2 && n_.input(2);
    out_ = &ctx_.view(result_);
    if (residual_) res_ = ctx_.view(residual_);
    one_d_ = x_->rank() == 3;
    const HbmView& x = *x_;
    const HbmView& w = *w_;
    const HbmView& out = *out_;
    xs0_ = x.strides[0];
    xs1_ = x.strides[1];
    xs2_ = one_d_ ? 0 : x.strides[2];
    xs3_ = x.strides[one_d_ ? 2 : 3];
    ws0_ = w.strides[0];
    ws1_ = w.strides[1];
    ws2_ = one_d_ ? 0 : w.strides[2];
    ws3_ = w.strides[one_d_ ? 2 : 3];
    // Channel rows of the weight interleaved by the partition count (row_interleave): chunk
    // cc's rows start at cc * ws1 and lie chunks * ws1 apart; otherwise chunk c0 starts at
    // c0 * ws1.
    const ir::Value* wv = n_.input(1);
    if (auto it = ctx_.read_through.find(wv); it != ctx_.read_through.end()) wv = it->second;
    interleave_ = ctx_.row_interleave(wv);
    w_pstride_ = interleave_ ? (g_.C / interleave_) * ws1_ : ws1_;
    os0_ = out.strides[0];
    os1_ = out.strides[1];
    os2_ = one_d_ ? 0 : out.strides[2];
    os3_ = out.strides[one_d_ ? 2 : 3];
  }

  // HBM offset of weight input channel c0's rows (see plan_strides).
  int64_t w_chunk(int64_t c0) const { return interleave_ ? (c0 / interleave_) * ws1_ : c0 * ws1_; }

  // Contraction layout: the jobs and the mode.
  void plan_contraction() {
    P_ = t_.partitions;
    mdt_ = operand_dtype(n_);
    es_ = device::dtype_size(mdt_);
    KK_ = g_.KH * g_.KW;
    Cg_ = g_.C / g_.groups;
    Og_ = g_.O / g_.groups;
    Wp_ = (g_.Wo - 1) * g_.sw + (g_.KW - 1) * g_.dw + 1;
    maxN_ = t_.psum_bank_elems_f32();
    wc_ = std::min(g_.Wo, maxN_);  // output columns per matmul
    depthwise_ = g_.groups > 1 && Cg_ == 1 && Og_ == 1;
    if (depthwise_) {
      for (int64_t c0 = 0; c0 < g_.C; c0 += P_) {
        const int64_t cn = std::min(P_, g_.C - c0);
        jobs_.push_back({c0, cn, c0, cn, 0, true});
      }
    } else {
      for (int64_t gi = 0; gi < g_.groups; ++gi)
        jobs_.push_back({gi * Cg_, Cg_, gi * Og_, Og_, 0, false});
      if (conv_packs_rows(g_, P_)) {
        mode_ = g_.C * KK_ <= P_ ? ConvMode::packed_taps : ConvMode::packed_rows;
      }
    }
    packed_ = mode_ != ConvMode::channels;
  }

  // Rows of the contraction held by one chunk of partitions, and the tile rows per band.
  void plan_bands() {
    KP_ = mode_ == ConvMode::packed_taps   ? g_.C * KK_
          : mode_ == ConvMode::packed_rows ? g_.C * g_.KH
                                           : 0;
    in_rows_per_out_ = packed_ ? 1 : g_.sh;  // tile rows added per output row
    row_extra_ = packed_ ? 0 : (g_.KH - 1) * g_.dh;
    nC_max_ = packed_ ? 1 : ceil_div(depthwise_ ? std::min(g_.C, P_) : Cg_, P_);
    // Output rows per band: the band's input tiles (all channel chunks) fit the budget.
    if (packed_) {
      const int64_t per_row = in_rows_per_out_ * Wp_ * es_;
      RB_ = std::min(std::max<int64_t>(1, band_budget(t_) / std::max<int64_t>(per_row, 1)), g_.Ho);
    } else {
      RB_ = channel_bands(g_, nC_max_, Wp_, es_, t_).out_rows;
    }
    // A row-packed stem uses few partitions (3 channels x 7 kernel rows = 21), so its band loads
    // would run on 3 of the 16 DMA engines (each serves 8 partitions). Its bands rotate over the
    // partition quadrants (0, 32, 64, 96), each with its own copy of the weights, and are cut
    // small enough that every quadrant gets two, so four bands load on different engines at
    // once.
    quadrants_ = (mode_ == ConvMode::packed_rows && KP_ <= 32) ? P_ / 32 : 1;
    if (quadrants_ > 1) RB_ = std::min(RB_, std::max<int64_t>(1, ceil_div(g_.Ho, 2 * quadrants_)));
    band_rows_ = packed_ ? RB_ : (RB_ - 1) * g_.sh + row_extra_ + 1;
    // A band of one output row may overrun the band budget by a third of the partition (64 KiB
    // on trn1), taken from the share the other kernels' tiles leave free.
    if (nC_max_ * band_rows_ * Wp_ * es_ >
        band_budget(t_) + static_cast<int64_t>(t_.sbuf_partition_bytes) / 3)
      fail(n_, "convolution input band of " + std::to_string(band_rows_) + " x " +
                   std::to_string(Wp_) + " elements does not fit SBUF");
  }

  void allocate_bands() {
    const int64_t nbands = ceil_div(g_.Ho, RB_);
    slots_ = (nbands > 1 || g_.B > 1 || jobs_.size() > 1) ? 2 : 1;
    band_.resize(static_cast<size_t>(slots_));
    for (auto& s : band_)
      for (int64_t cc = 0; cc < nC_max_; ++cc)
        s.push_back(kb_.alloc(band_rows_ * Wp_ * es_, "conv input"));
  }

  // Weights. Dense: per channel chunk [cn, KK, OJ] (channels) or [KP, KW or 1, O] (packed), so
  // every stationary operand is contiguous.
  // Resident for the whole kernel when they fit, else per output chunk (double-buffered).
  void allocate_weights() {
    w_per_chunk_cols_ = packed_ ? g_.O * (mode_ == ConvMode::packed_rows ? g_.KW : 1)
                                : (depthwise_ ? KK_ : Og_ * KK_);
    const int64_t w_total =
        (packed_ || depthwise_ ? 1 : ceil_div(Cg_, P_)) * w_per_chunk_cols_ * es_;
    const int64_t per_oc = depthwise_ || packed_ ? 0 : streamed_weight_chunk_bytes(g_, es_, t_);
    w_resident_ = per_oc == 0;
    if (w_resident_) {
      wt_slot_.push_back(kb_.alloc(static_cast<uint64_t>(w_total), "conv weights"));
    } else {
      if (per_oc > weight_budget(t_))
        fail(n_, "convolution weights need " + std::to_string(per_oc) +
                     " SBUF bytes per partition per output chunk");
      wt_slot_.push_back(kb_.alloc(per_oc, "conv weights"));
      wt_slot_.push_back(kb_.alloc(per_oc, "conv weights"));
    }
    if (!depthwise_) return;
    ident_ = kb_.alloc(P_ * es_, "depthwise identity");
    diag_[0] = kb_.alloc(KK_ * P_ * es_, "depthwise diagonal");
    diag_[1] = kb_.alloc(KK_ * P_ * es_, "depthwise diagonal");
    device::Memset ms;
    ms.dst = KernelBuilder::sb(ident_, P_, mdt_, P_);
    ms.value = 1.0;
    kb_.emit(Engine::vector, ms);
    device::AffineSelect sel;  // keep column i of partition p where p - i == 0
    sel.dst = sel.src = KernelBuilder::sb(ident_, P_, mdt_, P_);
    sel.channel_multiplier = 1;
    sel.pattern = {-1, 0, 0, 0};
    sel.compare = device::CompareOp::eq;
    sel.on_false = 0.0f;
    kb_.emit(Engine::gpsimd, sel);
  }

  // Output tiles, the residual epilogue's tiles and the bias columns.
  void allocate_outputs() {
    rc_max_ = std::max<int64_t>(1, std::min(RB_, maxN_ / wc_));
    const uint32_t ob = device::dtype_size(out_->dtype);
    // Output tiles rotate over four slots when they are small (a store takes the DMA trigger
    // latency plus the transfer; two slots would make each evacuation wait for the store two
    // tiles back), else two.
    out_slots_ = rc_max_ * wc_ * ob <= 4096 ? 4 : 2;
    // Output tiles stay: when every output tile of the kernel fits in a sixth of the partition,
    // each gets its own slot instead of a rotating one, so the tiles are still in SBUF when the
    // next kernel loads them and store forwarding (store_forwarding.h) hands them over there.
    int64_t total_tiles = 0;
    for (const ConvJob& job : jobs_)
      for (int64_t Y0 = 0; Y0 < g_.Ho; Y0 += RB_)
        total_tiles += g_.B * ceil_div(job.OJ, P_) * ceil_div(std::min(RB_, g_.Ho - Y0), rc_max_) *
                       ceil_div(g_.Wo, wc_);
    out_resident_ =
        total_tiles > out_slots_ &&
        total_tiles * rc_max_ * wc_ * ob <= static_cast<int64_t>(t_.sbuf_partition_bytes) / 6;
    o_sb_.resize(static_cast<size_t>(out_resident_ ? total_tiles : out_slots_));
    for (uint32_t& o : o_sb_) o = kb_.alloc(rc_max_ * wc_ * ob, "conv out");
    // Residual epilogue: per output tile the residual tile (loaded before the tile's matmuls, so
    // the DMA overlaps TensorE), the staged convolution value and, before a non-relu activation,
    // the fp32 sum (the unfused element-wise kernel keeps it in fp32; relu commutes with the
    // rounding, so it runs in place on the stored dtype).
    sdt_ = device_dtype(staged_->dtype());
    sum_in_f32_ = post_activation_ && post_act_ != device::ActivationFunction::relu;
    if (res_) {
      for (int i = 0; i < out_slots_; ++i) {
        r_sb_[i] = kb_.alloc(rc_max_ * wc_ * device::dtype_size(res_->dtype), "conv residual");
        s_sb_[i] = kb_.alloc(rc_max_ * wc_ * device::dtype_size(sdt_), "conv staged");
        if (sum_in_f32_) f_sb_[i] = kb_.alloc(rc_max_ * wc_ * 4, "conv residual sum");
      }
    }
    if (res_) {
      rs0_ = res_->strides[0];
      rs1_ = res_->strides[1];
      rs2_ = one_d_ ? 0 : res_->strides[2];
      rs3_ = res_->strides[one_d_ ? 2 : 3];
    }
    // One bias column per (job, output chunk), loaded once.
    int64_t n_out_chunks = 0;
    for (const ConvJob& job : jobs_) n_out_chunks += ceil_div(job.OJ, P_);
    bias_sb_ = has_bias_ ? kb_.alloc(4 * n_out_chunks, "conv bias") : 0;
  }

  // Resident weights.
  void load_resident_weights() {
    const HbmView& w = *w_;
    if (packed_) {
      // Partition (kwrep, c, kh) <- w[o, c, kh, kw]: one DMA per (c, kw block).
      const int64_t kwn = mode_ == ConvMode::packed_taps ? g_.KW : 1;
      for (int64_t q = 0; q < quadrants_; ++q)
        for (int64_t r = 0; r < kwn; ++r)
          for (int64_t c = 0; c < g_.C; ++c) {
            const int64_t p0 = q * 32 + r * g_.C * g_.KH + c * g_.KH;
            MemRef dst = KernelBuilder::sb(wt_slot_[0], g_.KH, mdt_, w_per_chunk_cols_);
            dst.partition_start = static_cast<uint16_t>(p0);
            std::vector<device::AccessLevel> lv;
            if (mode_ == ConvMode::packed_rows)
              lv.push_back({static_cast<int32_t>(ws3_), static_cast<uint32_t>(g_.KW)});
            lv.push_back({static_cast<int32_t>(ws0_), static_cast<uint32_t>(g_.O)});
            kb_.dma(dst, KernelBuilder::hbm(w, c * ws1_ + r * ws3_, g_.KH, ws2_, lv),
                    DmaRole::load);
          }
    } else if (w_resident_ && !depthwise_ && interleave_ == P_ && w_per_chunk_cols_ == ws1_) {
      // Interleaved rows: partition p's rows of every chunk are one run, so one DMA whose every
      // engine streams 8 partitions' runs back to back.
      const int64_t chunks = g_.C / P_;
      kb_.dma(KernelBuilder::sb(wt_slot_[0], P_, mdt_, chunks * w_per_chunk_cols_),
              KernelBuilder::hbm(w, 0, P_, w_pstride_,
                                 {{1, static_cast<uint32_t>(chunks * w_per_chunk_cols_)}}),
              DmaRole::load);
    } else if (w_resident_ && !depthwise_) {
      for (int64_t cc = 0; cc < ceil_div(Cg_, P_); ++cc) {
        const int64_t c0 = cc * P_, cn = std::min(P_, Cg_ - c0);
        kb_.dma(KernelBuilder::sb(wt_slot_[0] + cc * w_per_chunk_cols_ * es_, cn, mdt_,
                                  w_per_chunk_cols_),
                KernelBuilder::hbm(w, w_chunk(c0), cn, w_pstride_,
                                   {{static_cast<int32_t>(ws2_), static_cast<uint32_t>(g_.KH)},
                                    {static_cast<int32_t>(ws3_), static_cast<uint32_t>(g_.KW)},
                                    {static_cast<int32_t>(ws0_), static_cast<uint32_t>(Og_)}}),
                DmaRole::load);
      }
    }
  }

  void load_bias() {
    if (!has_bias_) return;
    const HbmView& bias = ctx_.view(n_.input(2));
    int64_t k = 0;
    for (const ConvJob& job : jobs_)
      for (int64_t oq = 0; oq < job.OJ; oq += P_, ++k) {
        const int64_t o0 = job.o0 + oq, on = std::min(P_, job.OJ - oq);
        kb_.dma(KernelBuilder::sb(bias_sb_ + 4 * k, on, DType::f32, 1),
                KernelBuilder::hbm(bias, o0 * bias.strides[0], on, bias.strides[0], {}),
                DmaRole::load);
      }
  }

  // Channel scale: per (job, channel chunk) a [cn, batch] column block, loaded once; a batch
  // of 1 in s serves every image.
  void load_channel_scale() {
    if (!scale_value_) return;
    if (packed_) fail(n_, "internal: a channel scale fused into a row-packed convolution");
    sv_ = ctx_.view(scale_value_);
    scale_cols_ = sv_->shape[0];
    int64_t chunks = 0;
    for (const ConvJob& job : jobs_) {
      scale_chunk_base_.push_back(chunks);
      chunks += ceil_div(job.CI, P_);
    }
    const uint32_t ssz = device::dtype_size(sv_->dtype);
    scale_sb_ = kb_.alloc(chunks * scale_cols_ * ssz, "conv input scale");
    for (size_t j = 0; j < jobs_.size(); ++j)
      for (int64_t cc = 0; cc < ceil_div(jobs_[j].CI, P_); ++cc) {
        const int64_t c0 = jobs_[j].ci0 + cc * P_, cn = std::min(P_, jobs_[j].CI - cc * P_);
        kb_.dma(KernelBuilder::sb(scale_sb_ + (scale_chunk_base_[j] + cc) * scale_cols_ * ssz, cn,
                                  sv_->dtype, scale_cols_),
                KernelBuilder::hbm(
                    *sv_, c0 * sv_->strides[1], cn, sv_->strides[1],
                    {{static_cast<int32_t>(sv_->strides[0]), static_cast<uint32_t>(scale_cols_)}}),
                DmaRole::load);
      }
  }

  // One job: (depthwise) its diagonal weights, then per image and band the band's input and
  // its output chunks.
  void lower_job(JobState js) {
    const ConvJob& job = *js.job;
    if (depthwise_) {
      const uint32_t dw_w = wt_slot_[0];  // depthwise weights of this chunk: [cn, KK]
      // Reuse the weight slot: one chunk at a time (the emitter orders the reuse).
      kb_.dma(KernelBuilder::sb(dw_w, job.CI, mdt_, KK_),
              KernelBuilder::hbm(*w_, job.o0 * ws0_, job.CI, ws0_,
                                 {{static_cast<int32_t>(ws2_), static_cast<uint32_t>(g_.KH)},
                                  {static_cast<int32_t>(ws3_), static_cast<uint32_t>(g_.KW)}}),
              DmaRole::load);
      js.dslot = diag_[diag_iter_++ % 2];
      for (int64_t tap = 0; tap < KK_; ++tap) {
        device::TensorScalar ts;
        ts.dst = KernelBuilder::sb(js.dslot + tap * job.CI * es_, job.CI, mdt_, job.CI);
        ts.src = KernelBuilder::sb(ident_, job.CI, mdt_, job.CI);
        ts.op0 = device::AluOp::multiply;
        MemRef wv = KernelBuilder::sb(dw_w + tap * es_, job.CI, mdt_, 1);
        ts.operand0 = wv;
        kb_.emit(Engine::vector, ts);
      }
    }
    for (int64_t b = 0; b < g_.B; ++b) {
      for (int64_t Y0 = 0; Y0 < g_.Ho; Y0 += RB_) {
        ConvBand band;
        band.b = b;
        band.Y0 = Y0;
        band.rb = std::min(RB_, g_.Ho - Y0);
        band.qbase = static_cast<uint16_t>(32 * (band_iter_ % quadrants_));
        band.tiles = &band_[band_iter_++ % slots_];
        if (packed_)
          load_packed_band(band);
        else
          load_channel_band(js, band);
        for (int64_t oq = 0; oq < job.OJ; oq += P_) lower_output_chunk(js, band, oq);
      }
    }
  }

  // The band of a row-packed convolution: partition (c, kh) gets the input rows its kernel row
  // reads, and (packed taps) KW copies shifted by kw*dw columns.
  void load_packed_band(const ConvBand& band) {
    const int64_t Y0 = band.Y0, rb = band.rb;
    const int64_t K1 = g_.C * g_.KH;  // partitions of one kw block
    const uint32_t tile = (*band.tiles)[0];
    const int64_t cols_lo = g_.pl, cols_hi = std::min(Wp_, g_.pl + g_.W);
    bool needs_zero = cols_lo > 0 || cols_hi < Wp_;
    for (int64_t kh = 0; kh < g_.KH && !needs_zero; ++kh) {
      const int64_t top = Y0 * g_.sh + kh * g_.dh - g_.pt;
      const int64_t bot = (Y0 + rb - 1) * g_.sh + kh * g_.dh - g_.pt;
      needs_zero = top < 0 || bot >= g_.H;
    }
    if (needs_zero) {
      device::Memset ms;
      ms.dst = KernelBuilder::sb(tile, KP_, mdt_, rb * Wp_);
      ms.dst.partition_start = band.qbase;
      kb_.emit(Engine::vector, ms);
    }
    for (int64_t c = 0; c < g_.C; ++c)
      for (int64_t kh = 0; kh < g_.KH; ++kh) {
        // Output rows y whose input row y*sh + kh*dh - pt lies inside the image.
        int64_t ya = Y0, yb = Y0 + rb;
        while (ya < yb && ya * g_.sh + kh * g_.dh - g_.pt < 0) ++ya;
        while (yb > ya && (yb - 1) * g_.sh + kh * g_.dh - g_.pt >= g_.H) --yb;
        if (ya >= yb || cols_hi <= cols_lo) continue;
        MemRef dst = KernelBuilder::sb(tile + ((ya - Y0) * Wp_ + cols_lo) * es_, 1, mdt_, 1);
        dst.partition_start = static_cast<uint16_t>(band.qbase + c * g_.KH + kh);
        dst.num_levels = 2;
        dst.levels[0] = {static_cast<int32_t>(Wp_), static_cast<uint32_t>(yb - ya)};
        dst.levels[1] = {1, static_cast<uint32_t>(cols_hi - cols_lo)};
        const int64_t iy = ya * g_.sh + kh * g_.dh - g_.pt;
        // The HBM side lists the image rows as its partitions (both sides flatten
        // partition-major), so the rows spread over the DMA engines.
        kb_.dma(dst,
                KernelBuilder::hbm(
                    *x_, band.b * xs0_ + c * xs1_ + iy * xs2_ + (cols_lo - g_.pl) * xs3_, yb - ya,
                    g_.sh * xs2_,
                    {{static_cast<int32_t>(xs3_), static_cast<uint32_t>(cols_hi - cols_lo)}}),
                DmaRole::load);
      }
    if (mode_ == ConvMode::packed_taps) {
      // Block kw = block 0 shifted left by kw*dw columns.
      for (int64_t kw = 1; kw < g_.KW; ++kw) {
        const int64_t len = rb * Wp_ - kw * g_.dw;
        MemRef dst = KernelBuilder::sb(tile, K1, mdt_, len);
        dst.partition_start = static_cast<uint16_t>(kw * K1);
        MemRef src = KernelBuilder::sb(tile + kw * g_.dw * es_, K1, mdt_, len);
        kb_.dma(dst, src, DmaRole::load);
      }
    }
  }

  // The band of a channel-contracting convolution: per channel chunk the zero-padded input
  // rows the band's output rows read (times the fused channel scale).
  void load_channel_band(const JobState& js, const ConvBand& band) {
    const ConvJob& job = *js.job;
    const int64_t row0 = band.Y0 * g_.sh - g_.pt;  // input row of tile row 0
    const int64_t trows = (band.rb - 1) * g_.sh + row_extra_ + 1;
    const int64_t ra = std::max<int64_t>(0, -row0), rbnd = std::min(trows, g_.H - row0);
    const int64_t cols_lo = g_.pl, cols_hi = std::min(Wp_, g_.pl + g_.W);
    const bool needs_zero = ra > 0 || rbnd < trows || cols_lo > 0 || cols_hi < Wp_;
    for (int64_t cc = 0; cc < js.nC; ++cc) {
      const int64_t c0 = job.ci0 + cc * P_, cn = std::min(P_, job.CI - cc * P_);
      const uint32_t tile = (*band.tiles)[cc];
      if (needs_zero) {
        device::Memset ms;
        ms.dst = KernelBuilder::sb(tile, cn, mdt_, trows * Wp_);
        kb_.emit(Engine::vector, ms);
      }
      if (rbnd <= ra || cols_hi <= cols_lo) continue;
      MemRef dst = KernelBuilder::sb(tile + (ra * Wp_ + cols_lo) * es_, cn, mdt_, 1);
      dst.num_levels = 2;
      dst.levels[0] = {static_cast<int32_t>(Wp_), static_cast<uint32_t>(rbnd - ra)};
      dst.levels[1] = {1, static_cast<uint32_t>(cols_hi - cols_lo)};
      kb_.dma(dst,
              KernelBuilder::hbm(
                  *x_, band.b * xs0_ + c0 * xs1_ + (row0 + ra) * xs2_, cn, xs1_,
                  {{static_cast<int32_t>(xs2_), static_cast<uint32_t>(rbnd - ra)},
                   {static_cast<int32_t>(xs3_), static_cast<uint32_t>(cols_hi - cols_lo)}}),
              DmaRole::load);
      if (sv_) {
        // x * s[b, c] on the loaded region only (the zero padding stays zero).
        device::TensorScalar ts;
        ts.dst = dst;
        if (cols_lo == 0 && cols_hi == Wp_) {
          ts.dst.num_levels = 1;
          ts.dst.levels[0] = {1, static_cast<uint32_t>((rbnd - ra) * Wp_)};
        }
        ts.src = ts.dst;
        ts.op0 = device::AluOp::multiply;
        const int64_t col =
            (scale_chunk_base_[js.index] + cc) * scale_cols_ + (scale_cols_ == 1 ? 0 : band.b);
        ts.operand0 =
            KernelBuilder::sb(scale_sb_ + col * device::dtype_size(sv_->dtype), cn, sv_->dtype, 1);
        kb_.emit(Engine::vector, ts);
      }
    }
  }

  // Output channels [oq, oq + 128) of the job over the band: (streamed) their weights, then the
  // output tiles of up to rc_max rows x wc columns.
  void lower_output_chunk(const JobState& js, const ConvBand& band, int64_t oq) {
    const ConvJob& job = *js.job;
    OutChunk oc;
    oc.oq = oq;
    oc.on = std::min(P_, job.OJ - oq);
    oc.o_abs = job.o0 + oq;
    oc.wbase = wt_slot_[0];
    if (!w_resident_) {
      oc.wbase = wt_slot_[w_iter_++ % 2];
      for (int64_t cc = 0; cc < js.nC; ++cc) {
        const int64_t cl = cc * P_, cn = std::min(P_, job.CI - cl);
        kb_.dma(KernelBuilder::sb(oc.wbase + cc * oc.on * KK_ * es_, cn, mdt_, oc.on * KK_),
                KernelBuilder::hbm(*w_, oc.o_abs * ws0_ + w_chunk(cl), cn, w_pstride_,
                                   {{static_cast<int32_t>(ws2_), static_cast<uint32_t>(g_.KH)},
                                    {static_cast<int32_t>(ws3_), static_cast<uint32_t>(g_.KW)},
                                    {static_cast<int32_t>(ws0_), static_cast<uint32_t>(oc.on)}}),
                DmaRole::load);
      }
    }
    for (int64_t y0 = 0; y0 < band.rb; y0 += rc_max_) {
      const int64_t rc = std::min(rc_max_, band.rb - y0);
      for (int64_t x0 = 0; x0 < g_.Wo; x0 += wc_)
        emit_output_tile(js, band, oc, y0, rc, x0, std::min(wc_, g_.Wo - x0));
    }
  }

  // One output tile [on, rc x cw] at band row y0, column x0: residual tile, matmuls into PSUM,
  // the ScalarE evacuation with bias and activation, the residual add and the store.
  void emit_output_tile(const JobState& js, const ConvBand& band, const OutChunk& oc, int64_t y0,
                        int64_t rc, int64_t x0, int64_t cw) {
    const int64_t on = oc.on, o_abs = oc.o_abs, b = band.b;
    const int64_t y = band.Y0 + y0;
    const int slot = out_iter_ % out_slots_;
    MemRef rt;
    if (res_) {
      rt = KernelBuilder::sb(r_sb_[slot], on, res_->dtype, rc * cw);
      kb_.dma(rt,
              KernelBuilder::hbm(*res_, b * rs0_ + o_abs * rs1_ + y * rs2_ + x0 * rs3_, on, rs1_,
                                 {{static_cast<int32_t>(rs2_), static_cast<uint32_t>(rc)},
                                  {static_cast<int32_t>(rs3_), static_cast<uint32_t>(cw)}}),
              DmaRole::load);
    }
    const MemRef acc = KernelBuilder::ps(kb_.psum_bank(), on, rc * cw);
    accumulate_tile(js, band, oc, acc, y0 * in_rows_per_out_ * Wp_ + x0 * g_.sw, rc, cw);
    kb_.add_flops(2.0 * on * rc * cw * Cg_ * KK_);
    const MemRef ot = KernelBuilder::sb(
        o_sb_[static_cast<size_t>(out_resident_ ? out_iter_ : slot)], on, out_->dtype, rc * cw);
    ++out_iter_;
    device::Activation a;
    a.dst = res_ ? KernelBuilder::sb(s_sb_[slot], on, sdt_, rc * cw) : ot;
    a.src = acc;
    a.function = act_;
    if (has_bias_)
      a.bias = KernelBuilder::sb(bias_sb_ + 4 * (js.chunk_base + oc.oq / P_), on, DType::f32, 1);
    kb_.emit(Engine::scalar, a);
    if (res_) {
      // The add of the unfused graph: staged + residual in fp32, then the activation.
      kb_.residual_add(
          sum_in_f32_ ? KernelBuilder::sb(f_sb_[slot], on, DType::f32, rc * cw) : ot, a.dst, rt, ot,
          post_activation_ ? std::optional<device::ActivationFunction>(post_act_) : std::nullopt);
    }
    kb_.dma(KernelBuilder::hbm(*out_, b * os0_ + o_abs * os1_ + y * os2_ + x0 * os3_, on, os1_,
                               {{static_cast<int32_t>(os2_), static_cast<uint32_t>(rc)},
                                {static_cast<int32_t>(os3_), static_cast<uint32_t>(cw)}}),
            ot, DmaRole::store);
  }

  // The matmuls of one output tile into `acc`; `base` is the tile's first element in the band.
  void accumulate_tile(const JobState& js, const ConvBand& band, const OutChunk& oc,
                       const MemRef& acc, int64_t base, int64_t rc, int64_t cw) {
    const ConvJob& job = *js.job;
    const std::vector<uint32_t>& tiles = *band.tiles;
    const int64_t on = oc.on, o_abs = oc.o_abs;
    bool first = true;
    auto matmul = [&](const MemRef& st, uint32_t tile, int64_t parts, int64_t off) {
      device::MatMul mm;
      mm.dst = acc;
      mm.stationary = st;
      MemRef mv = KernelBuilder::sb(tile + off * es_, parts, mdt_, 1);
      mv.partition_start = st.partition_start;  // the band's quadrant
      mv.num_levels = 2;
      mv.levels[0] = {static_cast<int32_t>(in_rows_per_out_ * Wp_), static_cast<uint32_t>(rc)};
      mv.levels[1] = {static_cast<int32_t>(g_.sw), static_cast<uint32_t>(cw)};
      mm.moving = mv;
      mm.accumulate = !first;
      first = false;
      kb_.emit(Engine::tensor, mm);
    };
    if (mode_ == ConvMode::packed_taps) {
      MemRef st = KernelBuilder::sb(oc.wbase + o_abs * es_, KP_, mdt_, on);
      matmul(st, tiles[0], KP_, base);
    } else if (mode_ == ConvMode::packed_rows) {
      for (int64_t kw = 0; kw < g_.KW; ++kw) {
        MemRef st = KernelBuilder::sb(oc.wbase + (kw * g_.O + o_abs) * es_, KP_, mdt_, on);
        st.partition_start = band.qbase;
        matmul(st, tiles[0], KP_, base + kw * g_.dw);
      }
    } else if (depthwise_) {
      for (int64_t kh = 0; kh < g_.KH; ++kh)
        for (int64_t kw = 0; kw < g_.KW; ++kw) {
          const int64_t tap = kh * g_.KW + kw;
          MemRef st = KernelBuilder::sb(js.dslot + tap * job.CI * es_, job.CI, mdt_, on);
          matmul(st, tiles[0], job.CI, base + kh * g_.dh * Wp_ + kw * g_.dw);
        }
    } else {
      for (int64_t cc = 0; cc < js.nC; ++cc) {
        const int64_t cn = std::min(P_, job.CI - cc * P_);
        for (int64_t kh = 0; kh < g_.KH; ++kh)
          for (int64_t kw = 0; kw < g_.KW; ++kw) {
            const int64_t tap = kh * g_.KW + kw;
            int64_t woff;
            if (w_resident_)
              woff = cc * w_per_chunk_cols_ + tap * Og_ + (o_abs - job.o0);
            else
              woff = cc * on * KK_ + tap * on;
            MemRef st = KernelBuilder::sb(oc.wbase + woff * es_, cn, mdt_, on);
            matmul(st, tiles[cc], cn, base + kh * g_.dh * Wp_ + kw * g_.dw);
          }
      }
    }
  }

  KernelBuilder& kb_;
  const ir::Node& n_;
  const PartitionContext& ctx_;
  const device::Target& t_;
  ConvGeometry g_;

  // Operands and the fused nodes.
  const ir::Value* x_value_ = nullptr;      // the input read (a fused scale's x)
  const ir::Value* scale_value_ = nullptr;  // a fused per-channel scale of the input
  const ir::Value* result_ = nullptr;       // the value the kernel writes
  const ir::Value* residual_ = nullptr;
  const ir::Value* staged_ = nullptr;  // the value the unfused convolution would store
  device::ActivationFunction act_ = device::ActivationFunction::identity;
  device::ActivationFunction post_act_ = device::ActivationFunction::identity;
  bool post_activation_ = false;
  const HbmView* x_ = nullptr;
  const HbmView* w_ = nullptr;
  const HbmView* out_ = nullptr;
  std::optional<HbmView> res_;
  bool has_bias_ = false, one_d_ = false;
  int64_t xs0_ = 0, xs1_ = 0, xs2_ = 0, xs3_ = 0;
  int64_t ws0_ = 0, ws1_ = 0, ws2_ = 0, ws3_ = 0;
  int64_t os0_ = 0, os1_ = 0, os2_ = 0, os3_ = 0;
  int64_t rs0_ = 0, rs1_ = 0, rs2_ = 0, rs3_ = 0;
  int64_t interleave_ = 0, w_pstride_ = 0;

  // The contraction and the bands.
  int64_t P_ = 0;
  DType mdt_ = DType::f32;
  uint32_t es_ = 0;
  int64_t KK_ = 0, Cg_ = 0, Og_ = 0, Wp_ = 0, maxN_ = 0, wc_ = 0;
  ConvMode mode_ = ConvMode::channels;
  std::vector<ConvJob> jobs_;
  bool depthwise_ = false, packed_ = false;
  int64_t KP_ = 0, in_rows_per_out_ = 1, row_extra_ = 0, nC_max_ = 1;
  int64_t RB_ = 1, quadrants_ = 1, band_rows_ = 1, slots_ = 1;

  // SBUF layout.
  std::vector<std::vector<uint32_t>> band_;
  int64_t w_per_chunk_cols_ = 0;
  bool w_resident_ = true;
  std::vector<uint32_t> wt_slot_;
  uint32_t ident_ = 0, diag_[2] = {0, 0};
  int64_t rc_max_ = 1;
  int out_slots_ = 2;
  bool out_resident_ = false;
  std::vector<uint32_t> o_sb_;
  DType sdt_ = DType::f32;
  bool sum_in_f32_ = false;
  uint32_t r_sb_[4] = {0, 0, 0, 0}, s_sb_[4] = {0, 0, 0, 0}, f_sb_[4] = {0, 0, 0, 0};
  uint32_t bias_sb_ = 0;
  std::optional<HbmView> sv_;  // the channel scale
  uint32_t scale_sb_ = 0;
  int64_t scale_cols_ = 1;
  std::vector<int64_t> scale_chunk_base_;  // per job: index of its first chunk

  // Rotation counters of the loop nest.
  int band_iter_ = 0, out_iter_ = 0, w_iter_ = 0, diag_iter_ = 0;
};

void lower_conv(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  ConvLowering(kb, n, ctx).run();
}

}  // namespace

const Lowering* conv_lowering(const std::string& op) {
  static constexpr Lowering kConv{&lower_conv, [](const ir::Node& n, const device::Target& t) {
                                    ConvGeometry g;
                                    return conv_geometry(n, t, g);
                                  }};
  if (op == "aten.conv2d.default" || op == "aten.convolution.default" ||
      op == "aten.conv1d.default" || op == "aten.conv2d.padding" || op == "aten.conv1d.padding")
    return &kConv;
  return nullptr;
}

}  // namespace neuronc::codegen
