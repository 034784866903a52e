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
    const int64_t per_oc = streamed_weight_chunk_bytes(g, device::dtype_size(operand_dtype(n)), t);
    if (per_oc > weight_budget(t))
      return "convolution weights need " + std::to_string(per_oc) +
             " SBUF bytes per partition per output chunk";
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

struct ConvJob {
  int64_t ci0, CI;  // input channels
  int64_t o0, OJ;   // output channels
  int64_t wc0;      // weight input-channel index of ci0
  bool diagonal;    // depthwise: stationary = diag(w[c, tap])
};

void lower_conv(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  ConvGeometry g;
  if (auto why = conv_geometry(n, kb.target(), g)) fail(n, *why);
  // A fused per-channel scale of the input (squeeze-and-excitation x * s) multiplies each loaded
  // band: read x and s instead of the product.
  const ir::Value* x_value = n.input(0);
  const ir::Value* scale_value = nullptr;
  for (const ir::Node* f : fused_nodes(kb))
    if (auto [sx, ss] = channel_scale_operands(*f, n); sx) x_value = sx, scale_value = ss;
  // A fused float cast of an operand converts in the load DMA: read its source.
  const HbmView& x = ctx.operand_view(x_value);
  const HbmView& w = ctx.operand_view(n.input(1));
  const bool has_bias = n.inputs().size() > 2 && n.input(2);
  // Fused epilogue nodes, in order: [unary activation or float cast] [add(residual)
  // [activation]]. `staged` is the value the unfused convolution kernel would store (its dtype
  // is the evacuation tile's, so a residual add sees exactly the unfused operand); `result` the
  // value the kernel writes.
  device::ActivationFunction act = device::ActivationFunction::identity;
  device::ActivationFunction post_act = device::ActivationFunction::identity;
  const ir::Value* result = n.output();
  const ir::Value* residual = nullptr;
  const ir::Value* staged = n.output();
  bool post_activation = false;
  for (const ir::Node* f : fused_nodes(kb)) {
    if (channel_scale_operands(*f, n).first) continue;
    if (f->op() == "aten.add.Tensor") {
      staged = result;
      residual = f->input(0) == result ? f->input(1) : f->input(0);
    } else if (residual) {
      post_act = *epilogue_activation(*f);
      post_activation = true;
    } else {
      act = *epilogue_activation(*f);
    }
    result = f->output();
  }
  const HbmView& out = ctx.view(result);
  std::optional<HbmView> res;
  if (residual) res = ctx.view(residual);
  const bool one_d = x.rank() == 3;
  // Strides as 2-D NCHW (a 1-D tensor's H stride is unused).
  const int64_t xs0 = x.strides[0], xs1 = x.strides[1], xs2 = one_d ? 0 : x.strides[2],
                xs3 = x.strides[one_d ? 2 : 3];
  const int64_t ws0 = w.strides[0], ws1 = w.strides[1], ws2 = one_d ? 0 : w.strides[2],
                ws3 = w.strides[one_d ? 2 : 3];
  // Channel rows of the weight interleaved by the partition count (row_interleave): chunk cc's
  // rows start at cc * ws1 and lie chunks * ws1 apart; otherwise chunk c0 starts at c0 * ws1.
  const ir::Value* wv = n.input(1);
  if (auto it = ctx.read_through.find(wv); it != ctx.read_through.end()) wv = it->second;
  const int64_t interleave = ctx.row_interleave(wv);
  const int64_t w_pstride = interleave ? (g.C / interleave) * ws1 : ws1;
  auto w_chunk = [&](int64_t c0) { return interleave ? (c0 / interleave) * ws1 : c0 * ws1; };
  const int64_t os0 = out.strides[0], os1 = out.strides[1], os2 = one_d ? 0 : out.strides[2],
                os3 = out.strides[one_d ? 2 : 3];

  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  const DType mdt = operand_dtype(n);
  const uint32_t es = device::dtype_size(mdt);
  const int64_t KK = g.KH * g.KW;
  const int64_t Cg = g.C / g.groups, Og = g.O / g.groups;
  const int64_t Wp = (g.Wo - 1) * g.sw + (g.KW - 1) * g.dw + 1;
  const int64_t maxN = t.psum_bank_elems_f32();
  const int64_t wc = std::min(g.Wo, maxN);  // output columns per matmul

  // Contraction layout.
  enum class Mode { channels, packed_rows, packed_taps } mode = Mode::channels;
  std::vector<ConvJob> jobs;
  const bool depthwise = g.groups > 1 && Cg == 1 && Og == 1;
  if (depthwise) {
    for (int64_t c0 = 0; c0 < g.C; c0 += P) {
      const int64_t cn = std::min(P, g.C - c0);
      jobs.push_back({c0, cn, c0, cn, 0, true});
    }
  } else {
    for (int64_t gi = 0; gi < g.groups; ++gi) jobs.push_back({gi * Cg, Cg, gi * Og, Og, 0, false});
    if (conv_packs_rows(g, P)) {
      mode = g.C * KK <= P ? Mode::packed_taps : Mode::packed_rows;
    }
  }
  const bool packed = mode != Mode::channels;
  // Rows of the contraction held by one chunk of partitions, and the tile rows per band.
  const int64_t KP = mode == Mode::packed_taps   ? g.C * KK
                     : mode == Mode::packed_rows ? g.C * g.KH
                                                 : 0;
  const int64_t in_rows_per_out = packed ? 1 : g.sh;  // tile rows added per output row
  const int64_t row_extra = packed ? 0 : (g.KH - 1) * g.dh;
  const int64_t nC_max = packed ? 1 : ceil_div(depthwise ? std::min(g.C, P) : Cg, P);
  // Output rows per band: the band's input tiles (all channel chunks) fit the budget.
  const int64_t per_row = nC_max * in_rows_per_out * Wp * es;
  int64_t RB = std::max<int64_t>(
      1, (band_budget(t) - nC_max * row_extra * Wp * es) / std::max<int64_t>(per_row, 1));
  RB = std::min(RB, g.Ho);
  // A row-packed stem uses few partitions (3 channels x 7 kernel rows = 21), so its band loads
  // would run on 3 of the 16 DMA engines (each serves 8 partitions). Its bands rotate over the
  // partition quadrants (0, 32, 64, 96), each with its own copy of the weights, and are cut
  // small enough that every quadrant gets two, so four bands load on different engines at once.
  const int64_t quadrants = (mode == Mode::packed_rows && KP <= 32) ? P / 32 : 1;
  if (quadrants > 1) RB = std::min(RB, std::max<int64_t>(1, ceil_div(g.Ho, 2 * quadrants)));
  const int64_t band_rows = packed ? RB : (RB - 1) * g.sh + row_extra + 1;
  // A band of one output row may overrun the band budget by a third of the partition (64 KiB
  // on trn1), taken from the share the other kernels' tiles leave free.
  if (nC_max * band_rows * Wp * es >
      band_budget(t) + static_cast<int64_t>(t.sbuf_partition_bytes) / 3)
    fail(n, "convolution input band of " + std::to_string(band_rows) + " x " + std::to_string(Wp) +
                " elements does not fit SBUF");
  const int64_t nbands = ceil_div(g.Ho, RB);
  const int64_t slots = (nbands > 1 || g.B > 1 || jobs.size() > 1) ? 2 : 1;
  std::vector<std::vector<uint32_t>> band(static_cast<size_t>(slots));
  for (auto& s : band)
    for (int64_t cc = 0; cc < nC_max; ++cc)
      s.push_back(kb.alloc(band_rows * Wp * es, "conv input"));

  // Weights. Dense: per channel chunk [cn, KK, OJ] (channels) or [KP, KW or 1, O] (packed), so
  // every stationary operand is contiguous.
  // Resident for the whole kernel when they fit, else per output chunk (double-buffered).
  const int64_t w_per_chunk_cols =
      packed ? g.O * (mode == Mode::packed_rows ? g.KW : 1) : (depthwise ? KK : Og * KK);
  const int64_t w_total = (packed || depthwise ? 1 : ceil_div(Cg, P)) * w_per_chunk_cols * es;
  const int64_t per_oc = depthwise || packed ? 0 : streamed_weight_chunk_bytes(g, es, t);
  const bool w_resident = per_oc == 0;
  std::vector<uint32_t> wt_slot;
  if (w_resident) {
    wt_slot.push_back(kb.alloc(static_cast<uint64_t>(w_total), "conv weights"));
  } else {
    if (per_oc > weight_budget(t))
      fail(n, "convolution weights need " + std::to_string(per_oc) +
                  " SBUF bytes per partition per output chunk");
    wt_slot.push_back(kb.alloc(per_oc, "conv weights"));
    wt_slot.push_back(kb.alloc(per_oc, "conv weights"));
  }
  uint32_t ident = 0, diag[2] = {0, 0};
  if (depthwise) {
    ident = kb.alloc(P * es, "depthwise identity");
    diag[0] = kb.alloc(KK * P * es, "depthwise diagonal");
    diag[1] = kb.alloc(KK * P * es, "depthwise diagonal");
    device::Memset ms;
    ms.dst = KernelBuilder::sb(ident, P, mdt, P);
    ms.value = 1.0;
    kb.emit(Engine::vector, ms);
    device::AffineSelect sel;  // keep column i of partition p where p - i == 0
    sel.dst = sel.src = KernelBuilder::sb(ident, P, mdt, P);
    sel.channel_multiplier = 1;
    sel.pattern = {-1, 0, 0, 0};
    sel.compare = device::CompareOp::eq;
    sel.on_false = 0.0f;
    kb.emit(Engine::gpsimd, sel);
  }
  const int64_t rc_max = std::max<int64_t>(1, std::min(RB, maxN / wc));
  const uint32_t ob = device::dtype_size(out.dtype);
  // Output tiles rotate over four slots when they are small (a store takes the DMA trigger
  // latency plus the transfer; two slots would make each evacuation wait for the store two tiles
  // back), else two.
  const int out_slots = rc_max * wc * ob <= 4096 ? 4 : 2;
  // Output tiles stay: when every output tile of the kernel fits in a sixth of the partition,
  // each gets its own slot instead of a rotating one, so the tiles are still in SBUF when the
  // next kernel loads them and store forwarding (store_forwarding.h) hands them over there.
  int64_t total_tiles = 0;
  for (const ConvJob& job : jobs)
    for (int64_t Y0 = 0; Y0 < g.Ho; Y0 += RB)
      total_tiles += g.B * ceil_div(job.OJ, P) * ceil_div(std::min(RB, g.Ho - Y0), rc_max) *
                     ceil_div(g.Wo, wc);
  const bool out_resident =
      total_tiles > out_slots &&
      total_tiles * rc_max * wc * ob <= static_cast<int64_t>(t.sbuf_partition_bytes) / 6;
  std::vector<uint32_t> o_sb(static_cast<size_t>(out_resident ? total_tiles : out_slots));
  for (uint32_t& o : o_sb) o = kb.alloc(rc_max * wc * ob, "conv out");
  // Residual epilogue: per output tile the residual tile (loaded before the tile's matmuls, so
  // the DMA overlaps TensorE), the staged convolution value and, before a non-relu activation,
  // the fp32 sum (the unfused element-wise kernel keeps it in fp32; relu commutes with the
  // rounding, so it runs in place on the stored dtype).
  const DType sdt = device_dtype(staged->dtype());
  const bool sum_in_f32 = post_activation && post_act != device::ActivationFunction::relu;
  uint32_t r_sb[4] = {0, 0, 0, 0}, s_sb[4] = {0, 0, 0, 0}, f_sb[4] = {0, 0, 0, 0};
  if (res) {
    for (int i = 0; i < out_slots; ++i) {
      r_sb[i] = kb.alloc(rc_max * wc * device::dtype_size(res->dtype), "conv residual");
      s_sb[i] = kb.alloc(rc_max * wc * device::dtype_size(sdt), "conv staged");
      if (sum_in_f32) f_sb[i] = kb.alloc(rc_max * wc * 4, "conv residual sum");
    }
  }
  const int64_t rs0 = res ? res->strides[0] : 0, rs1 = res ? res->strides[1] : 0,
                rs2 = res && !one_d ? res->strides[2] : 0,
                rs3 = res ? res->strides[one_d ? 2 : 3] : 0;
  // One bias column per (job, output chunk), loaded once.
  int64_t n_out_chunks = 0;
  for (const ConvJob& job : jobs) n_out_chunks += ceil_div(job.OJ, P);
  const uint32_t bias_sb = has_bias ? kb.alloc(4 * n_out_chunks, "conv bias") : 0;

  // Resident weights.
  if (packed) {
    // Partition (kwrep, c, kh) <- w[o, c, kh, kw]: one DMA per (c, kw block).
    const int64_t kwn = mode == Mode::packed_taps ? g.KW : 1;
    for (int64_t q = 0; q < quadrants; ++q)
      for (int64_t r = 0; r < kwn; ++r)
        for (int64_t c = 0; c < g.C; ++c) {
          const int64_t p0 = q * 32 + r * g.C * g.KH + c * g.KH;
          MemRef dst = KernelBuilder::sb(wt_slot[0], g.KH, mdt, w_per_chunk_cols);
          dst.partition_start = static_cast<uint16_t>(p0);
          std::vector<device::AccessLevel> lv;
          if (mode == Mode::packed_rows)
            lv.push_back({static_cast<int32_t>(ws3), static_cast<uint32_t>(g.KW)});
          lv.push_back({static_cast<int32_t>(ws0), static_cast<uint32_t>(g.O)});
          kb.dma(dst, KernelBuilder::hbm(w, c * ws1 + r * ws3, g.KH, ws2, lv), DmaRole::load);
        }
  } else if (w_resident && !depthwise && interleave == P && w_per_chunk_cols == ws1) {
    // Interleaved rows: partition p's rows of every chunk are one run, so one DMA whose every
    // engine streams 8 partitions' runs back to back.
    const int64_t chunks = g.C / P;
    kb.dma(KernelBuilder::sb(wt_slot[0], P, mdt, chunks * w_per_chunk_cols),
           KernelBuilder::hbm(w, 0, P, w_pstride,
                              {{1, static_cast<uint32_t>(chunks * w_per_chunk_cols)}}),
           DmaRole::load);
  } else if (w_resident && !depthwise) {
    for (int64_t cc = 0; cc < ceil_div(Cg, P); ++cc) {
      const int64_t c0 = cc * P, cn = std::min(P, Cg - c0);
      kb.dma(KernelBuilder::sb(wt_slot[0] + cc * w_per_chunk_cols * es, cn, mdt, w_per_chunk_cols),
             KernelBuilder::hbm(w, w_chunk(c0), cn, w_pstride,
                                {{static_cast<int32_t>(ws2), static_cast<uint32_t>(g.KH)},
                                 {static_cast<int32_t>(ws3), static_cast<uint32_t>(g.KW)},
                                 {static_cast<int32_t>(ws0), static_cast<uint32_t>(Og)}}),
             DmaRole::load);
    }
  }
  std::optional<HbmView> bias;
  if (has_bias) {
    bias = ctx.view(n.input(2));
    int64_t k = 0;
    for (const ConvJob& job : jobs)
      for (int64_t oq = 0; oq < job.OJ; oq += P, ++k) {
        const int64_t o0 = job.o0 + oq, on = std::min(P, job.OJ - oq);
        kb.dma(KernelBuilder::sb(bias_sb + 4 * k, on, DType::f32, 1),
               KernelBuilder::hbm(*bias, o0 * bias->strides[0], on, bias->strides[0], {}),
               DmaRole::load);
      }
  }

  // Channel scale: per (job, channel chunk) a [cn, batch] column block, loaded once; a batch
  // of 1 in s serves every image.
  std::optional<HbmView> sv;
  uint32_t scale_sb = 0;
  int64_t scale_cols = 1;
  std::vector<int64_t> scale_chunk_base;  // per job: index of its first chunk
  if (scale_value) {
    if (packed) fail(n, "internal: a channel scale fused into a row-packed convolution");
    sv = ctx.view(scale_value);
    scale_cols = sv->shape[0];
    int64_t chunks = 0;
    for (const ConvJob& job : jobs) {
      scale_chunk_base.push_back(chunks);
      chunks += ceil_div(job.CI, P);
    }
    const uint32_t ssz = device::dtype_size(sv->dtype);
    scale_sb = kb.alloc(chunks * scale_cols * ssz, "conv input scale");
    for (size_t j = 0; j < jobs.size(); ++j)
      for (int64_t cc = 0; cc < ceil_div(jobs[j].CI, P); ++cc) {
        const int64_t c0 = jobs[j].ci0 + cc * P, cn = std::min(P, jobs[j].CI - cc * P);
        kb.dma(KernelBuilder::sb(scale_sb + (scale_chunk_base[j] + cc) * scale_cols * ssz, cn,
                                 sv->dtype, scale_cols),
               KernelBuilder::hbm(
                   *sv, c0 * sv->strides[1], cn, sv->strides[1],
                   {{static_cast<int32_t>(sv->strides[0]), static_cast<uint32_t>(scale_cols)}}),
               DmaRole::load);
      }
  }

  int band_iter = 0, out_iter = 0, w_iter = 0, diag_iter = 0;
  int64_t chunk_base = 0;  // bias column of the job's first output chunk
  size_t job_index = 0;
  for (const ConvJob& job : jobs) {
    const size_t ji = job_index++;
    const int64_t job_chunk_base = chunk_base;
    chunk_base += ceil_div(job.OJ, P);
    const int64_t nC = packed ? 1 : ceil_div(job.CI, P);
    uint32_t dw_w = 0;  // depthwise weights of this chunk: [cn, KK]
    uint32_t dslot = 0;
    if (depthwise) {
      dw_w = wt_slot[0];
      // Reuse the weight slot: one chunk at a time (the emitter orders the reuse).
      kb.dma(KernelBuilder::sb(dw_w, job.CI, mdt, KK),
             KernelBuilder::hbm(w, job.o0 * ws0, job.CI, ws0,
                                {{static_cast<int32_t>(ws2), static_cast<uint32_t>(g.KH)},
                                 {static_cast<int32_t>(ws3), static_cast<uint32_t>(g.KW)}}),
             DmaRole::load);
      dslot = diag[diag_iter++ % 2];
      for (int64_t tap = 0; tap < KK; ++tap) {
        device::TensorScalar ts;
        ts.dst = KernelBuilder::sb(dslot + tap * job.CI * es, job.CI, mdt, job.CI);
        ts.src = KernelBuilder::sb(ident, job.CI, mdt, job.CI);
        ts.op0 = device::AluOp::multiply;
        MemRef wv = KernelBuilder::sb(dw_w + tap * es, job.CI, mdt, 1);
        ts.operand0 = wv;
        kb.emit(Engine::vector, ts);
      }
    }
    for (int64_t b = 0; b < g.B; ++b) {
      for (int64_t Y0 = 0; Y0 < g.Ho; Y0 += RB) {
        const int64_t rb = std::min(RB, g.Ho - Y0);
        const uint16_t qbase = static_cast<uint16_t>(32 * (band_iter % quadrants));
        const std::vector<uint32_t>& tiles = band[band_iter++ % slots];
        // --- load the band ---------------------------------------------------------------------
        if (packed) {
          const int64_t K1 = g.C * g.KH;  // partitions of one kw block
          const uint32_t tile = tiles[0];
          const int64_t cols_lo = g.pl, cols_hi = std::min(Wp, g.pl + g.W);
          bool needs_zero = cols_lo > 0 || cols_hi < Wp;
          for (int64_t kh = 0; kh < g.KH && !needs_zero; ++kh) {
            const int64_t top = Y0 * g.sh + kh * g.dh - g.pt;
            const int64_t bot = (Y0 + rb - 1) * g.sh + kh * g.dh - g.pt;
            needs_zero = top < 0 || bot >= g.H;
          }
          if (needs_zero) {
            device::Memset ms;
            ms.dst = KernelBuilder::sb(tile, KP, mdt, rb * Wp);
            ms.dst.partition_start = qbase;
            kb.emit(Engine::vector, ms);
          }
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              // Output rows y whose input row y*sh + kh*dh - pt lies inside the image.
              int64_t ya = Y0, yb = Y0 + rb;
              while (ya < yb && ya * g.sh + kh * g.dh - g.pt < 0) ++ya;
              while (yb > ya && (yb - 1) * g.sh + kh * g.dh - g.pt >= g.H) --yb;
              if (ya >= yb || cols_hi <= cols_lo) continue;
              MemRef dst = KernelBuilder::sb(tile + ((ya - Y0) * Wp + cols_lo) * es, 1, mdt, 1);
              dst.partition_start = static_cast<uint16_t>(qbase + c * g.KH + kh);
              dst.num_levels = 2;
              dst.levels[0] = {static_cast<int32_t>(Wp), static_cast<uint32_t>(yb - ya)};
              dst.levels[1] = {1, static_cast<uint32_t>(cols_hi - cols_lo)};
              const int64_t iy = ya * g.sh + kh * g.dh - g.pt;
              // The HBM side lists the image rows as its partitions (both sides flatten
              // partition-major), so the rows spread over the DMA engines.
              kb.dma(
                  dst,
                  KernelBuilder::hbm(
                      x, b * xs0 + c * xs1 + iy * xs2 + (cols_lo - g.pl) * xs3, yb - ya, g.sh * xs2,
                      {{static_cast<int32_t>(xs3), static_cast<uint32_t>(cols_hi - cols_lo)}}),
                  DmaRole::load);
            }
          if (mode == Mode::packed_taps) {
            // Block kw = block 0 shifted left by kw*dw columns.
            for (int64_t kw = 1; kw < g.KW; ++kw) {
              const int64_t len = rb * Wp - kw * g.dw;
              MemRef dst = KernelBuilder::sb(tile, K1, mdt, len);
              dst.partition_start = static_cast<uint16_t>(kw * K1);
              MemRef src = KernelBuilder::sb(tile + kw * g.dw * es, K1, mdt, len);
              kb.dma(dst, src, DmaRole::load);
            }
          }
        } else {
          const int64_t row0 = Y0 * g.sh - g.pt;  // input row of tile row 0
          const int64_t trows = (rb - 1) * g.sh + row_extra + 1;
          const int64_t ra = std::max<int64_t>(0, -row0), rbnd = std::min(trows, g.H - row0);
          const int64_t cols_lo = g.pl, cols_hi = std::min(Wp, g.pl + g.W);
          const bool needs_zero = ra > 0 || rbnd < trows || cols_lo > 0 || cols_hi < Wp;
          for (int64_t cc = 0; cc < nC; ++cc) {
            const int64_t c0 = job.ci0 + cc * P, cn = std::min(P, job.CI - cc * P);
            if (needs_zero) {
              device::Memset ms;
              ms.dst = KernelBuilder::sb(tiles[cc], cn, mdt, trows * Wp);
              kb.emit(Engine::vector, ms);
            }
            if (rbnd <= ra || cols_hi <= cols_lo) continue;
            MemRef dst = KernelBuilder::sb(tiles[cc] + (ra * Wp + cols_lo) * es, cn, mdt, 1);
            dst.num_levels = 2;
            dst.levels[0] = {static_cast<int32_t>(Wp), static_cast<uint32_t>(rbnd - ra)};
            dst.levels[1] = {1, static_cast<uint32_t>(cols_hi - cols_lo)};
            kb.dma(dst,
                   KernelBuilder::hbm(
                       x, b * xs0 + c0 * xs1 + (row0 + ra) * xs2, cn, xs1,
                       {{static_cast<int32_t>(xs2), static_cast<uint32_t>(rbnd - ra)},
                        {static_cast<int32_t>(xs3), static_cast<uint32_t>(cols_hi - cols_lo)}}),
                   DmaRole::load);
            if (sv) {
              // x * s[b, c] on the loaded region only (the zero padding stays zero).
              device::TensorScalar ts;
              ts.dst = dst;
              if (cols_lo == 0 && cols_hi == Wp) {
                ts.dst.num_levels = 1;
                ts.dst.levels[0] = {1, static_cast<uint32_t>((rbnd - ra) * Wp)};
              }
              ts.src = ts.dst;
              ts.op0 = device::AluOp::multiply;
              const int64_t col =
                  (scale_chunk_base[ji] + cc) * scale_cols + (scale_cols == 1 ? 0 : b);
              ts.operand0 = KernelBuilder::sb(scale_sb + col * device::dtype_size(sv->dtype), cn,
                                              sv->dtype, 1);
              kb.emit(Engine::vector, ts);
            }
          }
        }
        // --- output chunks ---------------------------------------------------------------------
        for (int64_t oq = 0; oq < job.OJ; oq += P) {
          const int64_t on = std::min(P, job.OJ - oq);
          const int64_t o_abs = job.o0 + oq;
          uint32_t wbase = wt_slot[0];
          if (!w_resident) {
            wbase = wt_slot[w_iter++ % 2];
            for (int64_t cc = 0; cc < nC; ++cc) {
              const int64_t cl = cc * P, cn = std::min(P, job.CI - cl);
              kb.dma(KernelBuilder::sb(wbase + cc * on * KK * es, cn, mdt, on * KK),
                     KernelBuilder::hbm(w, o_abs * ws0 + w_chunk(cl), cn, w_pstride,
                                        {{static_cast<int32_t>(ws2), static_cast<uint32_t>(g.KH)},
                                         {static_cast<int32_t>(ws3), static_cast<uint32_t>(g.KW)},
                                         {static_cast<int32_t>(ws0), static_cast<uint32_t>(on)}}),
                     DmaRole::load);
            }
          }
          for (int64_t y0 = 0; y0 < rb; y0 += rc_max) {
            const int64_t rc = std::min(rc_max, rb - y0);
            for (int64_t x0 = 0; x0 < g.Wo; x0 += wc) {
              const int64_t cw = std::min(wc, g.Wo - x0);
              const int64_t y = Y0 + y0;
              const int slot = out_iter % out_slots;
              MemRef rt;
              if (res) {
                rt = KernelBuilder::sb(r_sb[slot], on, res->dtype, rc * cw);
                kb.dma(rt,
                       KernelBuilder::hbm(*res, b * rs0 + o_abs * rs1 + y * rs2 + x0 * rs3, on, rs1,
                                          {{static_cast<int32_t>(rs2), static_cast<uint32_t>(rc)},
                                           {static_cast<int32_t>(rs3), static_cast<uint32_t>(cw)}}),
                       DmaRole::load);
              }
              const MemRef acc = KernelBuilder::ps(kb.psum_bank(), on, rc * cw);
              bool first = true;
              auto matmul = [&](const MemRef& st, uint32_t tile, int64_t parts, int64_t off) {
                device::MatMul mm;
                mm.dst = acc;
                mm.stationary = st;
                MemRef mv = KernelBuilder::sb(tile + off * es, parts, mdt, 1);
                mv.partition_start = st.partition_start;  // the band's quadrant
                mv.num_levels = 2;
                mv.levels[0] = {static_cast<int32_t>(in_rows_per_out * Wp),
                                static_cast<uint32_t>(rc)};
                mv.levels[1] = {static_cast<int32_t>(g.sw), static_cast<uint32_t>(cw)};
                mm.moving = mv;
                mm.accumulate = !first;
                first = false;
                kb.emit(Engine::tensor, mm);
              };
              const int64_t base = y0 * in_rows_per_out * Wp + x0 * g.sw;
              if (mode == Mode::packed_taps) {
                MemRef st = KernelBuilder::sb(wbase + o_abs * es, KP, mdt, on);
                matmul(st, tiles[0], KP, base);
              } else if (mode == Mode::packed_rows) {
                for (int64_t kw = 0; kw < g.KW; ++kw) {
                  MemRef st = KernelBuilder::sb(wbase + (kw * g.O + o_abs) * es, KP, mdt, on);
                  st.partition_start = qbase;
                  matmul(st, tiles[0], KP, base + kw * g.dw);
                }
              } else if (depthwise) {
                for (int64_t kh = 0; kh < g.KH; ++kh)
                  for (int64_t kw = 0; kw < g.KW; ++kw) {
                    const int64_t tap = kh * g.KW + kw;
                    MemRef st = KernelBuilder::sb(dslot + tap * job.CI * es, job.CI, mdt, on);
                    matmul(st, tiles[0], job.CI, base + kh * g.dh * Wp + kw * g.dw);
                  }
              } else {
                for (int64_t cc = 0; cc < nC; ++cc) {
                  const int64_t cn = std::min(P, job.CI - cc * P);
                  for (int64_t kh = 0; kh < g.KH; ++kh)
                    for (int64_t kw = 0; kw < g.KW; ++kw) {
                      const int64_t tap = kh * g.KW + kw;
                      int64_t woff;
                      if (w_resident)
                        woff = cc * w_per_chunk_cols + tap * Og + (o_abs - job.o0);
                      else
                        woff = cc * on * KK + tap * on;
                      MemRef st = KernelBuilder::sb(wbase + woff * es, cn, mdt, on);
                      matmul(st, tiles[cc], cn, base + kh * g.dh * Wp + kw * g.dw);
                    }
                }
              }
              kb.add_flops(2.0 * on * rc * cw * Cg * KK);
              const MemRef ot =
                  KernelBuilder::sb(o_sb[static_cast<size_t>(out_resident ? out_iter : slot)], on,
                                    out.dtype, rc * cw);
              ++out_iter;
              device::Activation a;
              a.dst = res ? KernelBuilder::sb(s_sb[slot], on, sdt, rc * cw) : ot;
              a.src = acc;
              a.function = act;
              if (has_bias)
                a.bias =
                    KernelBuilder::sb(bias_sb + 4 * (job_chunk_base + oq / P), on, DType::f32, 1);
              kb.emit(Engine::scalar, a);
              if (res) {
                // The add of the unfused graph: staged + residual in fp32, then the activation.
                kb.residual_add(
                    sum_in_f32 ? KernelBuilder::sb(f_sb[slot], on, DType::f32, rc * cw) : ot, a.dst,
                    rt, ot,
                    post_activation ? std::optional<device::ActivationFunction>(post_act)
                                    : std::nullopt);
              }
              kb.dma(KernelBuilder::hbm(out, b * os0 + o_abs * os1 + y * os2 + x0 * os3, on, os1,
                                        {{static_cast<int32_t>(os2), static_cast<uint32_t>(rc)},
                                         {static_cast<int32_t>(os3), static_cast<uint32_t>(cw)}}),
                     ot, DmaRole::store);
            }
          }
        }
      }
    }
  }
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
