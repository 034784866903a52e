// Pooling (max_pool1d/2d, max_pool2d_with_indices when the indices are unused, avg_pool1d/2d,
// adaptive_avg_pool1d/2d) on VectorE: (batch, channel) rows on the partitions, the padded
// plane of each row on the free axis. One TensorReduce per block of output rows walks a
// four-level access pattern [out row, out col, kernel row, kernel col] over the padded tile
// and reduces the two inner levels (max or sum): no im2col, no per-tap instructions. Padding
// is -inf (max) or 0 (avg); avg then scales by 1/(KH*KW) on the way out. Adaptive pooling
// with uneven windows reduces each output cell with its own window. A plane over the tile
// budget (VGG's and Inception's first pools) is pooled in chunks of output rows, each tile
// holding just the input rows its windows read; few (batch, channel) rows spread their chunks
// over the partitions.
#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/lowering.h"

namespace neuronc::codegen {

namespace {

using device::DType;
using device::Engine;
using device::MemRef;

std::vector<int64_t> ints_or(const ir::Node& n, const char* name, std::vector<int64_t> dflt,
                             size_t k) {
  std::vector<int64_t> v;
  if (n.attr(name) && !n.attr_is_none(name)) v = n.attr_ints(name);
  if (v.empty()) v = std::move(dflt);
  while (v.size() < k) v.push_back(v.back());
  return v;
}

// Bytes per partition a pooling kernel may use for its padded input tile: a fixed share of
// the target's partition (64 KiB of trn1's 192 KiB).
int64_t pool_tile_budget(const device::Target& t) {
  return static_cast<int64_t>(t.sbuf_partition_bytes) / 3;
}

}  // namespace

std::optional<std::string> pool_geometry(const ir::Node& n, const device::Target& t,
                                         PoolGeometry& g) {
  const std::string& op = n.op();
  const ir::Value* xv = n.input(0);
  const int64_t r = xv->type().rank();
  const bool one_d = op.find("pool1d") != std::string::npos;
  const size_t k = one_d ? 1 : 2;
  if (r != static_cast<int64_t>(k) + 2 && r != static_cast<int64_t>(k) + 1)
    return "pooling input of rank " + std::to_string(r) + " is not lowered";
  if (op == "aten.max_pool2d_with_indices.default" &&
      (n.output(1)->has_uses() || n.graph()->is_graph_output(n.output(1))))
    return "max-pool indices are used";
  const auto x = static_shape(xv), o = static_shape(n.output());
  g.rows = 1;
  for (int64_t d = 0; d < r - static_cast<int64_t>(k); ++d) g.rows *= x[d];
  g.H = one_d ? 1 : x[r - 2];
  g.W = x[r - 1];
  g.Ho = one_d ? 1 : o[r - 2];
  g.Wo = o[r - 1];
  g.kind = op.find("max_pool") != std::string::npos ? PoolGeometry::max : PoolGeometry::avg;
  g.adaptive = op.find("adaptive") != std::string::npos;
  g.divisor = 0;
  if (g.adaptive) {
    g.uneven = g.H % g.Ho != 0 || g.W % g.Wo != 0;
    g.KH = g.H / g.Ho, g.KW = g.W / g.Wo, g.sh = g.KH, g.sw = g.KW;
    g.dh = g.dw = 1, g.pt = g.pl = 0;
    if (g.uneven) {
      g.KH = g.H, g.KW = g.W;  // whole plane in SBUF
      g.sh = g.sw = 1;
    }
  } else {
    g.uneven = false;
    const auto ks = ints_or(n, "kernel_size", {1}, k);
    const auto st = ints_or(n, "stride", ks, k);
    const auto pd = ints_or(n, "padding", {0}, k);
    const auto dl = ints_or(n, "dilation", {1}, k);
    g.KH = one_d ? 1 : ks[0], g.KW = ks[k - 1];
    g.sh = one_d ? 1 : st[0], g.sw = st[k - 1];
    g.pt = one_d ? 0 : pd[0], g.pl = pd[k - 1];
    g.dh = one_d ? 1 : dl[0], g.dw = dl[k - 1];
    if (g.kind == PoolGeometry::avg) {
      if (n.attr("divisor_override") && !n.attr_is_none("divisor_override"))
        g.divisor = static_cast<double>(n.attr_int("divisor_override"));
      const bool include_pad = !n.attr("count_include_pad") || n.attr_bool("count_include_pad");
      // A window that leaves the padded input (ceil_mode) or skips padding changes the divisor
      // per position.
      const bool pads = g.pt > 0 || g.pl > 0;
      const bool overhang =
          (g.Ho - 1) * g.sh + g.KH > g.H + 2 * g.pt || (g.Wo - 1) * g.sw + g.KW > g.W + 2 * g.pl;
      if (g.divisor == 0 && (overhang || (pads && !include_pad)))
        return "avg pooling with a position-dependent divisor (ceil_mode or "
               "count_include_pad=False with padding) is not lowered";
    }
  }
  g.Hp = std::max(g.H + g.pt, (g.Ho - 1) * g.sh + (g.KH - 1) * g.dh + 1);
  g.Wp = std::max(g.W + g.pl, (g.Wo - 1) * g.sw + (g.KW - 1) * g.dw + 1);
  // The kernel's SBUF per partition: two input tiles, two f32 results and two output tiles.
  const int64_t osz = device::dtype_size(device_dtype(n.output()->dtype()));
  auto footprint = [&](int64_t out_rows, int64_t in_rows) {
    return 2 * in_rows * g.Wp * 4 + 2 * out_rows * g.Wo * (4 + osz);
  };
  const int64_t budget = pool_tile_budget(t);
  const int64_t P = t.partitions;
  const int64_t window = (g.KH - 1) * g.dh + 1;  // padded input rows of one output row
  // Unchunked: the whole plane per partition, or, with few (batch, channel) rows, bands.
  g.chunk_rows = 0;
  g.bands = !g.uneven && g.rows * 2 <= P && g.Ho > 1 ? std::min(P / g.rows, g.Ho) : 1;
  g.passes = 1;
  g.band_rows = ceil_div(g.Ho, g.bands);
  const int64_t band_in = g.bands > 1 ? (g.band_rows - 1) * g.sh + window : g.Hp;
  if (g.Hp * g.Wp * 4 > budget ||
      footprint(g.band_rows, band_in) > static_cast<int64_t>(t.sbuf_partition_bytes)) {
    // Chunks of output rows, each with the padded input rows its windows span, (rows - 1) * sh
    // + (KH - 1) * dh + 1, in one tile of the budget; the whole kernel within two budgets.
    // Uneven adaptive windows need the whole plane.
    const int64_t fit = budget / (g.Wp * 4);  // padded input rows a tile holds
    int64_t rows = g.uneven || fit < window ? 0 : std::min(g.Ho, (fit - window) / g.sh + 1);
    while (rows > 0 && footprint(rows, (rows - 1) * g.sh + window) > 2 * budget) --rows;
    if (rows == 0)
      return "pooling plane of " + std::to_string(g.Hp) + " x " + std::to_string(g.Wp) +
             " elements does not fit the SBUF tile budget" +
             (g.uneven ? " (uneven adaptive windows need the whole plane)"
                       : " even one output row at a time");
    g.chunk_rows = rows;
    const int64_t chunks = ceil_div(g.Ho, rows);
    g.bands = g.rows * 2 <= P ? std::min(P / g.rows, chunks) : 1;
    g.passes = ceil_div(chunks, g.bands);
    g.band_rows = ceil_div(g.Ho, g.bands * g.passes);  // evens the chunks out; at most `rows`
  }
  if (g.sh * g.Wp > 32767 || g.dh * g.Wp > 32767) return "pooling row stride too large";
  return std::nullopt;
}

std::optional<int64_t> pool_row_stride(const HbmView& v, int64_t spatial) {
  const int64_t lead = v.rank() - spatial;
  if (lead <= 0) return int64_t{0};
  for (int64_t d = lead - 2; d >= 0; --d)
    if (v.shape[d] != 1 && v.strides[d] != v.strides[d + 1] * v.shape[d + 1]) return std::nullopt;
  return v.strides[lead - 1];
}

int64_t pool_spatial_dims(const ir::Node& n) {
  if (!pool_lowering(n.op())) return 0;
  return n.op().find("pool1d") != std::string::npos ? 1 : 2;
}

namespace {

void lower_pool(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  PoolGeometry g;
  if (auto why = pool_geometry(n, kb.target(), g)) fail(n, *why);
  const HbmView& x = ctx.view(n.input(0));
  const HbmView& out = ctx.view(n.output());
  const int64_t P = kb.target().partitions;
  // Rows (leading dims) must be one uniform stride for both sides: true for contiguous NCHW,
  // and codegen copies a view that is not (compile_partition's bind_view).
  const int64_t r = x.rank();
  const int64_t spatial = pool_spatial_dims(n);
  const auto xrs = pool_row_stride(x, spatial), ors = pool_row_stride(out, spatial);
  if (!xrs || !ors) fail(n, "internal: pooling over a non-uniform row layout");
  const int64_t xh = spatial == 2 ? x.strides[r - 2] : 0, xw = x.strides[r - 1];
  const int64_t oh = spatial == 2 ? out.strides[r - 2] : 0, ow = out.strides[r - 1];
  const bool is_max = g.kind == PoolGeometry::max;
  const double pad_value = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
  // Few (batch, channel) rows (a ResNet stem's 64 channels): the output rows split into `bands`
  // bands, band s on partitions [s * rows, (s + 1) * rows), so every partition, VectorE lane and
  // DMA engine works. Each band holds the padded input rows its output rows read.
  // A plane over the tile budget is also cut into chunks of output rows, spread over the bands
  // and then over passes, one tile load each (pool_geometry plans them).
  const int64_t bands = g.bands, passes = g.passes, Hb = g.band_rows;  // Hb: rows per chunk
  const bool chunked = bands > 1 || passes > 1;
  const int64_t Hp = chunked ? (Hb - 1) * g.sh + (g.KH - 1) * g.dh + 1 : g.Hp, Wp = g.Wp;
  const bool needs_pad = chunked || g.pt > 0 || g.pl > 0 || Hp > g.H + g.pt || Wp > g.W + g.pl;
  uint32_t tile[2] = {kb.alloc(Hp * Wp * 4, "pool input"), kb.alloc(Hp * Wp * 4, "pool input")};
  const int64_t Ho_t = chunked ? Hb : g.Ho;  // output rows per partition
  const int64_t No = Ho_t * g.Wo;
  const uint32_t osz = device::dtype_size(out.dtype);
  uint32_t red[2] = {kb.alloc(No * 4, "pool result"), kb.alloc(No * 4, "pool result")};
  uint32_t ot[2] = {kb.alloc(No * osz, "pool out"), kb.alloc(No * osz, "pool out")};
  const int64_t limit = kb.target().max_free_elems_sbuf;
  int it = 0;
  for (int64_t step = 0; step < ceil_div(g.rows, P) * passes; ++step, ++it) {
    const int64_t r0 = step / passes * P, pass = step % passes;
    const int64_t rn = std::min(P, g.rows - r0);  // (batch, channel) rows of this tile
    const int64_t pn = rn * bands;                // partitions
    const uint32_t tl = tile[it % 2], rd = red[it % 2], oo = ot[it % 2];
    if (needs_pad) {
      device::Memset ms;
      ms.dst = KernelBuilder::sb(tl, pn, DType::f32, Hp * Wp);
      ms.value = pad_value;
      kb.emit(Engine::vector, ms);
    }
    for (int64_t s = 0; s < bands; ++s) {
      // Padded input rows of chunk c (band s of this pass): [c * Hb * sh - pt, ... + Hp),
      // clipped to the input.
      const int64_t c = pass * bands + s;
      const int64_t top = c * Hb * g.sh - (chunked ? g.pt : 0);
      const int64_t first = std::max<int64_t>(0, top), last = std::min(g.H, top + Hp);
      if (chunked && first >= last) continue;
      const int64_t dst_row = chunked ? first - top : g.pt;
      const int64_t nrows = chunked ? last - first : g.H;
      MemRef dst = KernelBuilder::sb(tl + (dst_row * Wp + g.pl) * 4, rn, DType::f32, 1);
      dst.partition_start = static_cast<uint16_t>(s * rn);
      dst.num_levels = 2;
      dst.levels[0] = {static_cast<int32_t>(Wp), static_cast<uint32_t>(nrows)};
      dst.levels[1] = {1, static_cast<uint32_t>(g.W)};
      kb.dma(dst,
             KernelBuilder::hbm(x, r0 * *xrs + first * xh, rn, *xrs,
                                {{static_cast<int32_t>(xh), static_cast<uint32_t>(nrows)},
                                 {static_cast<int32_t>(xw), static_cast<uint32_t>(g.W)}}),
             DmaRole::load);
    }
    auto reduce = [&](uint32_t dst_off, int64_t src_off, std::vector<device::AccessLevel> lv,
                      int64_t count) {
      device::TensorReduce tr;
      tr.dst = KernelBuilder::sb(dst_off, pn, DType::f32, count);
      MemRef s = KernelBuilder::sb(tl + src_off * 4, pn, DType::f32, 1);
      s.num_levels = static_cast<uint8_t>(lv.size());
      for (size_t i = 0; i < lv.size(); ++i) s.levels[i] = lv[i];
      tr.src = s;
      tr.op = is_max ? device::ReduceOp::max : device::ReduceOp::sum;
      tr.num_axes = 2;
      kb.emit(Engine::vector, tr);
    };
    if (g.uneven) {
      // Adaptive windows [floor(i*H/Ho), ceil((i+1)*H/Ho)): one reduce per output cell.
      for (int64_t i = 0; i < g.Ho; ++i)
        for (int64_t j = 0; j < g.Wo; ++j) {
          const int64_t h0 = i * g.H / g.Ho, h1 = ((i + 1) * g.H + g.Ho - 1) / g.Ho;
          const int64_t w0 = j * g.W / g.Wo, w1 = ((j + 1) * g.W + g.Wo - 1) / g.Wo;
          reduce(rd + (i * g.Wo + j) * 4, h0 * Wp + w0,
                 {{static_cast<int32_t>(Wp), static_cast<uint32_t>(h1 - h0)},
                  {1, static_cast<uint32_t>(w1 - w0)}},
                 1);
          device::TensorScalar ts;  // scale this cell by 1 / its window size
          ts.dst = ts.src = KernelBuilder::sb(rd + (i * g.Wo + j) * 4, pn, DType::f32, 1);
          ts.op0 = device::AluOp::multiply;
          ts.operand0 = static_cast<float>(1.0 / static_cast<double>((h1 - h0) * (w1 - w0)));
          kb.emit(Engine::vector, ts);
        }
    } else {
      const int64_t per_row = g.Wo * g.KH * g.KW;
      const int64_t rows_per = std::max<int64_t>(1, std::min(Ho_t, limit / per_row));
      for (int64_t y0 = 0; y0 < Ho_t; y0 += rows_per) {
        const int64_t rc = std::min(rows_per, Ho_t - y0);
        reduce(rd + y0 * g.Wo * 4, y0 * g.sh * Wp,
               {{static_cast<int32_t>(g.sh * Wp), static_cast<uint32_t>(rc)},
                {static_cast<int32_t>(g.sw), static_cast<uint32_t>(g.Wo)},
                {static_cast<int32_t>(g.dh * Wp), static_cast<uint32_t>(g.KH)},
                {static_cast<int32_t>(g.dw), static_cast<uint32_t>(g.KW)}},
               rc * g.Wo);
      }
    }
    // Scale (avg) and cast into the output dtype on ScalarE, then store.
    device::Activation a;
    a.dst = KernelBuilder::sb(oo, pn, out.dtype, No);
    a.src = KernelBuilder::sb(rd, pn, DType::f32, No);
    if (!is_max && !g.uneven)
      a.scale =
          static_cast<float>(1.0 / (g.divisor > 0 ? g.divisor : static_cast<double>(g.KH * g.KW)));
    kb.emit(Engine::scalar, a);
    for (int64_t s = 0; s < bands; ++s) {
      const int64_t y0 = (pass * bands + s) * Ho_t, yn = std::min(Ho_t, g.Ho - y0);
      if (yn <= 0) continue;
      MemRef src = KernelBuilder::sb(oo, rn, out.dtype, yn * g.Wo);
      src.partition_start = static_cast<uint16_t>(s * rn);
      kb.dma(KernelBuilder::hbm(out, r0 * *ors + y0 * oh, rn, *ors,
                                {{static_cast<int32_t>(oh), static_cast<uint32_t>(yn)},
                                 {static_cast<int32_t>(ow), static_cast<uint32_t>(g.Wo)}}),
             src, DmaRole::store);
    }
  }
}

}  // namespace

const Lowering* pool_lowering(const std::string& op) {
  static constexpr Lowering kPool{&lower_pool, [](const ir::Node& n, const device::Target& t) {
                                    PoolGeometry g;
                                    return pool_geometry(n, t, g);
                                  }};
  static const char* kOps[] = {"aten.max_pool2d.default",
                               "aten.max_pool1d.default",
                               "aten.max_pool2d_with_indices.default",
                               "aten.avg_pool2d.default",
                               "aten.avg_pool1d.default",
                               "aten.adaptive_avg_pool2d.default",
                               "aten._adaptive_avg_pool2d.default",
                               "aten.adaptive_avg_pool1d.default"};
  for (const char* s : kOps)
    if (op == s) return &kPool;
  return nullptr;
}

}  // namespace neuronc::codegen
