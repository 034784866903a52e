// KernelBuilder and row tiling (kernel.h).
#include "codegen/kernel.h"

#include <algorithm>

#include "codegen/codegen.h"
#include "device/verifier.h"

namespace neuronc::codegen {

using device::MemRef;

std::vector<RowTile> row_tiles(const std::vector<int64_t>& sizes_in,
                               const std::vector<std::vector<int64_t>>& strides_in,
                               int64_t max_rows, int max_inner) {
  std::vector<int64_t> sizes = sizes_in;
  std::vector<std::vector<int64_t>> strides = strides_in;
  if (sizes.empty()) {
    sizes.push_back(1);
    for (auto& s : strides) s.push_back(0);
  }
  const int64_t m = static_cast<int64_t>(sizes.size());
  const size_t nops = strides.size();
  // Split dimension q; dims q+1.. are whole inside every tile.
  int64_t q = m - 1;
  int64_t inner = 1;
  while (q > 0 && sizes[q] * inner <= max_rows && (m - q) <= max_inner) {
    inner *= sizes[q];
    --q;
  }
  const int64_t chunk = std::max<int64_t>(1, std::min(sizes[q], max_rows / inner));
  std::vector<RowTile> tiles;
  std::vector<int64_t> idx(static_cast<size_t>(q), 0);
  while (true) {
    for (int64_t c0 = 0; c0 < sizes[q]; c0 += chunk) {
      RowTile t;
      t.chunk = std::min(chunk, sizes[q] - c0);
      t.rows = t.chunk * inner;
      t.offset.assign(nops, 0);
      t.split_stride.resize(nops);
      t.inner_strides.resize(nops);
      for (int64_t d = q + 1; d < m; ++d) t.inner_sizes.push_back(sizes[d]);
      for (size_t k = 0; k < nops; ++k) {
        int64_t off = c0 * strides[k][q];
        for (int64_t d = 0; d < q; ++d) off += idx[d] * strides[k][d];
        t.offset[k] = off;
        t.split_stride[k] = strides[k][q];
        for (int64_t d = q + 1; d < m; ++d) t.inner_strides[k].push_back(strides[k][d]);
      }
      tiles.push_back(std::move(t));
    }
    int64_t d = q - 1;
    while (d >= 0 && ++idx[d] == sizes[d]) idx[d--] = 0;
    if (d < 0) break;
  }
  return tiles;
}

uint32_t KernelBuilder::alloc(uint64_t bytes, const char* what) {
  const uint64_t aligned = KernelBuilder::aligned(bytes);
  if (sbuf_ + aligned > t_.sbuf_partition_bytes)
    throw Error(std::string(what) + ": kernel needs " + std::to_string(sbuf_ + aligned) +
                " SBUF bytes per partition but " + std::string(t_.name) + " has " +
                std::to_string(t_.sbuf_partition_bytes));
  const uint32_t off = sbuf_;
  sbuf_ += static_cast<uint32_t>(aligned);
  return off;
}

uint32_t KernelBuilder::psum_bank() {
  const uint32_t b = next_bank_;
  next_bank_ = (next_bank_ + 1) % static_cast<uint32_t>(t_.psum_banks);
  banks_used_ = std::max(banks_used_, b + 1);
  return b * t_.psum_bank_bytes;
}

MemRef KernelBuilder::sb(uint32_t offset, int64_t partitions, device::DType dt, int64_t free) {
  return device::sbuf(0, static_cast<uint16_t>(partitions), offset, dt,
                      static_cast<uint32_t>(free));
}

MemRef KernelBuilder::ps(uint32_t offset, int64_t partitions, int64_t free, device::DType dt) {
  return device::psum(0, static_cast<uint16_t>(partitions), offset, dt,
                      static_cast<uint32_t>(free));
}

MemRef KernelBuilder::hbm(const HbmView& v, int64_t off, int64_t pcount, int64_t pstride,
                          const std::vector<device::AccessLevel>& levels) {
  MemRef m;
  m.memory = device::MemoryKind::hbm;
  m.dtype = v.dtype;
  m.partition_start = 0;
  m.partition_count = static_cast<uint16_t>(pcount);
  m.offset = v.byte_offset(off);
  m.partition_stride = pcount > 1 ? pstride : 0;
  std::vector<device::AccessLevel> lv;
  for (const auto& l : levels)
    if (l.count != 1) lv.push_back(l);
  if (lv.empty()) lv.push_back({1, 1});
  if (lv.size() > 4) throw Error("internal: hbm access pattern needs more than 4 levels");
  m.num_levels = static_cast<uint8_t>(lv.size());
  for (size_t i = 0; i < lv.size(); ++i) m.levels[i] = lv[i];
  return m;
}

void KernelBuilder::emit(device::Engine e, device::Operation op) {
  code_.push_back({e, std::move(op), debug_id_, DmaRole::none});
}

void KernelBuilder::tensor_scalar(const MemRef& dst, const MemRef& src, device::AluOp op0,
                                  device::ScalarOperand a0, device::AluOp op1,
                                  device::ScalarOperand a1) {
  device::TensorScalar ts;
  ts.dst = dst;
  ts.src = src;
  ts.op0 = op0;
  ts.operand0 = a0;
  ts.op1 = op1;
  ts.operand1 = a1;
  emit(device::Engine::vector, ts);
}

void KernelBuilder::activation(const MemRef& dst, const MemRef& src, device::ActivationFunction f,
                               device::ScalarOperand bias, std::optional<MemRef> accumulate,
                               device::ScalarOperand scale) {
  device::Activation a;
  a.dst = dst;
  a.src = src;
  a.function = f;
  a.bias = bias;
  a.scale = scale;
  a.accumulate_dst = std::move(accumulate);
  emit(device::Engine::scalar, a);
}

void KernelBuilder::tensor_tensor(const MemRef& dst, const MemRef& in0, const MemRef& in1,
                                  device::AluOp op) {
  device::TensorTensor tt;
  tt.dst = dst;
  tt.in0 = in0;
  tt.in1 = in1;
  tt.op = op;
  emit(device::Engine::vector, tt);
}

void KernelBuilder::tensor_reduce(const MemRef& dst, const MemRef& src, device::ReduceOp op,
                                  bool negate) {
  device::TensorReduce tr;
  tr.dst = dst;
  tr.src = src;
  tr.op = op;
  tr.negate = negate;
  emit(device::Engine::vector, tr);
}

void KernelBuilder::residual_add(const MemRef& sum, const MemRef& staged, const MemRef& residual,
                                 const MemRef& out, std::optional<device::ActivationFunction> act) {
  tensor_tensor(sum, staged, residual, device::AluOp::add);
  if (!act) return;
  device::Activation a;
  a.dst = out;
  a.src = sum;
  a.function = *act;
  emit(device::Engine::scalar, a);
}

void KernelBuilder::dma(const MemRef& dst, const MemRef& src, DmaRole role) {
  device::DmaCopy d;
  d.dst = dst;
  d.src = src;
  code_.push_back({device::Engine::sync, d, debug_id_, role});
}

void KernelBuilder::dma_gather(const MemRef& dst, MemRef row, int64_t row_stride,
                               const MemRef& index, uint32_t rows) {
  indirect_dma(dst, row, row_stride, index, rows, /*scatter=*/false);
}

void KernelBuilder::dma_scatter(MemRef row, int64_t row_stride, const MemRef& src,
                                const MemRef& index, uint32_t rows) {
  indirect_dma(src, row, row_stride, index, rows, /*scatter=*/true);
}

void KernelBuilder::indirect_dma(const MemRef& tile, MemRef row, int64_t row_stride,
                                 const MemRef& index, uint32_t rows, bool scatter) {
  device::DmaCopy d;
  row.partition_count = 1;
  row.partition_stride = row_stride;
  d.dst = scatter ? row : tile;
  d.src = scatter ? tile : row;
  d.row_index = index;
  d.table_rows = rows;
  d.scatter = scatter;
  code_.push_back({device::Engine::sync, d, debug_id_, scatter ? DmaRole::store : DmaRole::load});
}

KernelCode KernelBuilder::finish() {
  KernelCode k;
  k.instructions = std::move(code_);
  k.sbuf_bytes = sbuf_;
  k.psum_banks = banks_used_;
  k.flops = flops_;
  return k;
}

}  // namespace neuronc::codegen
