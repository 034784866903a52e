// The indirect-DMA family: data-dependent row addressing (device/isa.h, DmaCopy::row_index).
//  - embedding (a gather of weight rows by data-dependent indices): per tile of up to 128
//    tokens the indices load into SBUF (one per partition, as i32), one indirect dma_copy
//    gathers the addressed table rows into the tile (converting when the output dtype differs)
//    and a DMA stores it. HBM traffic is the gathered rows, not the table.
//  - index_copy (out = self with rows of `source` written at data-dependent positions along
//    `dim`: a KV-cache update): the source rows load into SBUF and one indirect scatter writes
//    them to their rows. When the driver lets the result share self's buffer (self is read by
//    nothing else), only the written rows move; otherwise self is copied first.
// An index outside the table stops the run with an error.
#include <algorithm>
#include <optional>
#include <string>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::DType;
using device::MemRef;

void lower_embedding(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& w = ctx.view(n.input(0));
  const HbmView& ix = ctx.view(n.input(1));
  const HbmView& out = ctx.view(n.output());
  if (w.rank() != 2) fail(n, "embedding weight must be 2-D");
  const int64_t V = w.shape[0], D = w.shape[1];
  if (V > UINT32_MAX) fail(n, "embedding table of " + std::to_string(V) + " rows exceeds 2^32");
  if (ix.dtype != DType::i32 && ix.dtype != DType::u32)
    fail(n, "embedding indices must be 32-bit integers on the device, found " +
                std::string(device::dtype_name(ix.dtype)));
  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  const uint32_t os = device::dtype_size(out.dtype);
  if (D * os > t.sbuf_partition_bytes / 4)
    fail(n, "embedding rows of " + std::to_string(D * os) + " bytes exceed a quarter of a " +
                std::to_string(t.sbuf_partition_bytes) + "-byte SBUF partition");

  // Token tiles: never straddle the innermost index dimension.
  std::vector<int64_t> sizes = ix.shape;
  std::vector<std::vector<int64_t>> strides = {ix.strides};
  coalesce(sizes, strides);
  const int64_t inner = sizes.back();
  const int64_t inner_stride = strides[0].back();
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < sizes.size(); ++d) outer *= sizes[d];
  const int64_t TT = std::min(P, inner);

  uint32_t idx_b[2], rows_b[2];
  for (int s = 0; s < 2; ++s) {
    idx_b[s] = kb.alloc(4, "embedding indices");
    rows_b[s] = kb.alloc(D * os, "embedding rows");
  }
  // One table row: D elements from the row's start; the row stride walks the table.
  const MemRef table = KernelBuilder::hbm(
      w, 0, 1, 0, {{static_cast<int32_t>(w.strides[1]), static_cast<uint32_t>(D)}});
  int iter = 0;
  int64_t token = 0;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = 0, rem = o;
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) {
      base += (rem % sizes[d]) * strides[0][d];
      rem /= sizes[d];
    }
    for (int64_t t0 = 0; t0 < inner; t0 += TT, ++iter) {
      const int64_t tt = std::min(TT, inner - t0);
      const MemRef idx = KernelBuilder::sb(idx_b[iter % 2], tt, ix.dtype, 1);
      kb.dma(idx, KernelBuilder::hbm(ix, base + t0 * inner_stride, tt, inner_stride, {{1, 1}}),
             DmaRole::load);
      const MemRef rows = KernelBuilder::sb(rows_b[iter % 2], tt, out.dtype, D);
      kb.dma_gather(rows, table, w.strides[0], idx, static_cast<uint32_t>(V));
      kb.dma(KernelBuilder::hbm(out, (token + t0) * D, tt, D, {{1, static_cast<uint32_t>(D)}}),
             rows, DmaRole::store);
    }
    token += inner;
  }
}

int64_t index_copy_dim(const ir::Node& n) {
  const int64_t r = static_cast<int64_t>(n.output()->shape().size());
  int64_t d = n.attr("dim") ? n.attr_int("dim") : 0;
  return d < 0 ? d + r : d;
}

std::optional<std::string> refuse_index_copy(const ir::Node& n, const device::Target&) {
  const int64_t r = static_cast<int64_t>(n.output()->shape().size());
  const int64_t d = index_copy_dim(n);
  if (r == 0 || d < 0 || d >= r)
    return "index_copy along dim " + std::to_string(d) + " of a rank-" + std::to_string(r) +
           " tensor";
  const ir::Value* ix = n.input(1);
  if (ix->shape().size() > 1 || !ir::is_integral(ix->dtype()))
    return "index_copy index must be a 0-D or 1-D integer tensor";
  if (device_dtype(n.input(2)->dtype()) != device_dtype(n.input(0)->dtype()))
    return "index_copy source and self differ in dtype";
  if (n.output()->shape()[d].value() > UINT32_MAX)
    return "index_copy along a dim of more than 2^32 rows";
  return std::nullopt;
}

// out[a, index[j], k] = source[a, j, k] over (outer a, index j, inner k), out contiguous.
void lower_index_copy(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& self = ctx.view(n.input(0));
  const HbmView& ix = ctx.view(n.input(1));
  const HbmView& src = ctx.view(n.input(2));
  const HbmView& out = ctx.view(n.output());
  if (auto why = refuse_index_copy(n, kb.target())) fail(n, *why);
  if (!out.is_contiguous()) fail(n, "internal: index_copy result is not contiguous");
  if (ix.dtype != DType::i32 && ix.dtype != DType::u32)
    fail(n, "index_copy indices must be 32-bit integers on the device, found " +
                std::string(device::dtype_name(ix.dtype)));
  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  const int64_t d = index_copy_dim(n);
  const int64_t r = out.rank();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= out.shape[i];
  for (int64_t i = d + 1; i < r; ++i) inner *= out.shape[i];
  const int64_t rows = out.shape[d];
  const int64_t m = ix.rank() == 0 ? 1 : ix.shape[0];
  const int64_t ix_stride = ix.rank() == 0 ? 0 : ix.strides[0];
  // Without the driver's aliasing (the result in self's own buffer), self is copied first.
  const bool in_place = ctx.info(n.input(0)).buffer == ctx.info(n.output()).buffer &&
                        self.offset == out.offset && self.strides == out.strides;
  if (!in_place) copy_view(kb, out, self);
  if (outer * inner * m == 0) return;

  // Inner dims (after `dim`), coalesced over out and source: lead dims are looped, the last is
  // the row the DMAs move, in chunks that fit a quarter of a partition.
  std::vector<int64_t> isz(out.shape.begin() + d + 1, out.shape.end());
  std::vector<std::vector<int64_t>> ist = {
      std::vector<int64_t>(out.strides.begin() + d + 1, out.strides.end()),
      std::vector<int64_t>(src.strides.begin() + d + 1, src.strides.end())};
  if (isz.empty()) {
    isz = {1};
    ist = {{1}, {1}};
  }
  coalesce(isz, ist);
  const uint32_t es = device::dtype_size(out.dtype);
  const int64_t L = isz.back(), out_last = ist[0].back(), src_last = ist[1].back();
  const int64_t C = std::max<int64_t>(1, std::min<int64_t>(L, t.sbuf_partition_bytes / 4 / es));
  int64_t leads = 1;
  for (size_t i = 0; i + 1 < isz.size(); ++i) leads *= isz[i];
  auto lead_offsets = [&](int64_t l) {
    std::pair<int64_t, int64_t> off{0, 0};
    for (int64_t i = static_cast<int64_t>(isz.size()) - 2; i >= 0; --i) {
      off.first += (l % isz[i]) * ist[0][i];
      off.second += (l % isz[i]) * ist[1][i];
      l /= isz[i];
    }
    return off;
  };
  // Outer dims: out walks them contiguously (a * rows * inner); the source by its strides.
  auto src_outer = [&](int64_t a) {
    int64_t off = 0;
    for (int64_t i = d - 1; i >= 0; --i) {
      off += (a % src.shape[i]) * src.strides[i];
      a /= src.shape[i];
    }
    return off;
  };
  uint32_t idx_b = kb.alloc(4, "index_copy indices");
  uint32_t rows_b[2];
  for (int s2 = 0; s2 < 2; ++s2) rows_b[s2] = kb.alloc(C * es, "index_copy rows");
  auto table_row = [&](int64_t off, int64_t count) {
    return KernelBuilder::hbm(out, off, 1, 0,
                              {{static_cast<int32_t>(out_last), static_cast<uint32_t>(count)}});
  };
  int iter = 0;

  // One index (decode): every outer row a is written at a * rows + index[0], so one scatter
  // covers up to P of them. The row numbers are computed on the device: the index broadcast over
  // the partitions plus an iota of a * rows (exact in VectorE's fp32 below 2^24).
  std::vector<int64_t> osz(out.shape.begin(), out.shape.begin() + d);
  std::vector<std::vector<int64_t>> ost = {
      std::vector<int64_t>(out.strides.begin(), out.strides.begin() + d),
      std::vector<int64_t>(src.strides.begin(), src.strides.begin() + d)};
  if (osz.empty()) {
    osz = {1};
    ost = {{1}, {1}};
  }
  coalesce(osz, ost);
  const bool combined = m == 1 && outer > 1 && osz.size() == 1 && leads == 1 && C == L &&
                        outer * rows < (int64_t{1} << 24);
  if (combined) {
    const int64_t sa = ost[1][0];
    const uint32_t bcast_b = kb.alloc(4, "index_copy index broadcast");
    const uint32_t iota_b = kb.alloc(4, "index_copy row bases");
    const uint64_t table_rows = static_cast<uint64_t>(outer * rows);
    if (table_rows > UINT32_MAX) fail(n, "index_copy table of more than 2^32 rows");
    for (int64_t a0 = 0; a0 < outer; a0 += P, ++iter) {
      const int64_t ac = std::min(P, outer - a0);
      const MemRef bcast = KernelBuilder::sb(bcast_b, ac, ix.dtype, 1);
      kb.dma(bcast, KernelBuilder::hbm(ix, 0, ac, 0, {{1, 1}}), DmaRole::load);
      const MemRef bases = KernelBuilder::sb(iota_b, ac, DType::i32, 1);
      device::Iota io;
      io.dst = bases;
      io.offset = static_cast<int32_t>(a0 * rows);
      io.channel_multiplier = static_cast<int32_t>(rows);
      kb.emit(device::Engine::gpsimd, io);
      const MemRef idx = KernelBuilder::sb(idx_b, ac, DType::i32, 1);
      kb.tensor_tensor(idx, bases, bcast, device::AluOp::add);
      const MemRef tile = KernelBuilder::sb(rows_b[iter % 2], ac, out.dtype, L);
      kb.dma(tile,
             KernelBuilder::hbm(src, src_outer(a0), ac, sa,
                                {{static_cast<int32_t>(src_last), static_cast<uint32_t>(L)}}),
             DmaRole::load);
      kb.dma_scatter(table_row(0, L), inner, tile, idx, static_cast<uint32_t>(table_rows));
    }
    return;
  }

  // General: per chunk of up to P indices, the indices load once; then per outer row a, lead
  // index and inner chunk, the source rows load and one scatter writes them into a's table.
  const int64_t sd = src.strides[d];
  for (int64_t j0 = 0; j0 < m; j0 += P) {
    const int64_t mc = std::min(P, m - j0);
    const MemRef idx = KernelBuilder::sb(idx_b, mc, ix.dtype, 1);
    kb.dma(idx, KernelBuilder::hbm(ix, j0 * ix_stride, mc, ix_stride, {{1, 1}}), DmaRole::load);
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t l = 0; l < leads; ++l) {
        const auto [lo, ls] = lead_offsets(l);
        for (int64_t k0 = 0; k0 < L; k0 += C, ++iter) {
          const int64_t kc = std::min(C, L - k0);
          const MemRef tile = KernelBuilder::sb(rows_b[iter % 2], mc, out.dtype, kc);
          kb.dma(tile,
                 KernelBuilder::hbm(src, src_outer(a) + ls + k0 * src_last + j0 * sd, mc, sd,
                                    {{static_cast<int32_t>(src_last), static_cast<uint32_t>(kc)}}),
                 DmaRole::load);
          kb.dma_scatter(table_row(a * rows * inner + lo + k0 * out_last, kc), inner, tile, idx,
                         static_cast<uint32_t>(rows));
        }
      }
    }
  }
}

}  // namespace

const Lowering* gather_lowering(const std::string& op) {
  static constexpr Lowering kEmbedding{&lower_embedding, nullptr};
  static constexpr Lowering kIndexCopy{&lower_index_copy, &refuse_index_copy};
  if (op == "aten.embedding.default") return &kEmbedding;
  if (op == "aten.index_copy.default") return &kIndexCopy;
  return nullptr;
}

}  // namespace neuronc::codegen
