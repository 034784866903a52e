// embedding (a gather of weight rows by data-dependent indices) as an indirect DMA: per tile of
// up to 128 tokens the indices load into SBUF (one per partition, as i32), one indirect
// dma_copy gathers the addressed table rows into the tile (converting when the output dtype
// differs) and a DMA stores it. HBM traffic is the gathered rows, not the table; an index
// outside the table stops the run with an error (device/isa.h, DmaCopy::row_index).
#include <algorithm>

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

}  // namespace

const Lowering* gather_lowering(const std::string& op) {
  static constexpr Lowering kEmbedding{&lower_embedding, nullptr};
  if (op == "aten.embedding.default") return &kEmbedding;
  return nullptr;
}

}  // namespace neuronc::codegen
