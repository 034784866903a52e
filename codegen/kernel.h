// A kernel is the instruction sequence one fused group of IR nodes lowers to, written against a
// private SBUF region [0, sbuf_bytes) and private PSUM banks [0, psum_banks). Kernels are
// lowered independently (in parallel) and then placed, relocated and wired with semaphores
// in program order by the ProgramEmitter (emitter.h), which derives every dependency from the
// bytes instructions touch — a kernel only has to emit instructions in a correct order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/hbm_view.h"
#include "device/isa.h"
#include "device/target.h"
#include "device/verifier.h"

namespace neuronc::ir {
class Node;
}

namespace neuronc::codegen {

// How the emitter places a DMA: loads and HBM copies trigger from SyncE, stores from GpSimdE,
// so a store waiting for compute never blocks the next tile's prefetch.
enum class DmaRole : uint8_t { none, load, store };

// The engine whose stream triggers a DMA of `role` (emitter.h).
inline device::Engine dma_trigger_engine(DmaRole role) {
  return role == DmaRole::store ? device::Engine::gpsimd : device::Engine::sync;
}

// Byte footprints of accesses (one core's program): device/verifier.h.
using device::byte_rect;
using device::ByteRect;
using device::covers;
using device::overlaps;

struct PendingInstruction {
  device::Engine engine = device::Engine::sync;
  device::Operation op;
  uint32_t debug_id = device::kNoDebugId;
  DmaRole role = DmaRole::none;
  uint32_t group = 0;  // the kernel it belongs to, once placed in a program (scheduler.h)
};

struct KernelCode {
  std::vector<PendingInstruction> instructions;
  uint32_t sbuf_bytes = 0;  // per partition
  uint32_t psum_banks = 0;
  double flops = 0;  // model FLOPs (matmuls of the source graph)
};

// Calls fn(MemRef&) for every memory operand of `op` (scalar operands included), from the
// ISA's operand schema (device::for_each_operand).
template <typename Fn>
void for_each_memref(device::Operation& op, Fn&& fn) {
  device::for_each_operand(op, [&](device::MemRef& m, device::Access) { fn(m); });
}

// One tile of rows: `chunk` consecutive indices of the split row dimension times every index
// of the `inner` row dimensions (row-major), i.e. rows = chunk * prod(inner_sizes).
struct RowTile {
  int64_t rows = 1;
  int64_t chunk = 1;
  std::vector<int64_t> offset;        // per operand: element offset of the first row
  std::vector<int64_t> split_stride;  // per operand
  std::vector<int64_t> inner_sizes;
  std::vector<std::vector<int64_t>> inner_strides;  // per operand
};

// Covers the row space `sizes` (outermost first; per-operand `strides`) with tiles of at most
// `max_rows` rows using at most `max_inner` inner dimensions.
std::vector<RowTile> row_tiles(const std::vector<int64_t>& sizes,
                               const std::vector<std::vector<int64_t>>& strides, int64_t max_rows,
                               int max_inner);

// Builds one kernel. Not thread-safe; one per kernel.
class KernelBuilder {
 public:
  KernelBuilder(const device::Target& t, uint32_t debug_id) : t_(t), debug_id_(debug_id) {}
  const device::Target& target() const { return t_; }
  uint32_t debug_id() const { return debug_id_; }
  // Nodes fused into this kernel besides its own: element-wise producers (in order) for an
  // element-wise kernel, the activation applied in a matmul's epilogue.
  std::vector<const ir::Node*> fused;
  void set_debug_id(uint32_t id) { debug_id_ = id; }

  // Per-partition SBUF bytes, 64-byte aligned; throws codegen::Error when the kernel outgrows
  // SBUF (`what` names the caller).
  uint32_t alloc(uint64_t bytes, const char* what);
  // The SBUF bytes per partition alloc() takes for `bytes` (its 64-byte granule).
  static constexpr uint64_t aligned(uint64_t bytes) { return (bytes + 63) / 64 * 64; }
  uint32_t sbuf_used() const { return sbuf_; }
  uint32_t sbuf_capacity() const { return t_.sbuf_partition_bytes; }
  // Next PSUM bank of the kernel (rotates over the target's banks); returns its byte offset.
  uint32_t psum_bank();

  static device::MemRef sb(uint32_t offset, int64_t partitions, device::DType dt, int64_t free);
  static device::MemRef ps(uint32_t offset, int64_t partitions, int64_t free,
                           device::DType dt = device::DType::f32);
  // HBM operand of a DMA: `off` elements from the view's origin, partitions (count, stride)
  // and free levels (stride, count), outermost first; at most 4 levels.
  static device::MemRef hbm(const HbmView& v, int64_t off, int64_t pcount, int64_t pstride,
                            const std::vector<device::AccessLevel>& levels);

  void emit(device::Engine e, device::Operation op);
  // VectorE shorthands: dst = (src op0 a0) op1 a1; dst = in0 op in1; dst = [-]reduce(src).
  void tensor_scalar(const device::MemRef& dst, const device::MemRef& src, device::AluOp op0,
                     device::ScalarOperand a0, device::AluOp op1 = device::AluOp::bypass,
                     device::ScalarOperand a1 = 0.0f);
  void tensor_tensor(const device::MemRef& dst, const device::MemRef& in0,
                     const device::MemRef& in1, device::AluOp op);
  void tensor_reduce(const device::MemRef& dst, const device::MemRef& src, device::ReduceOp op,
                     bool negate = false);
  // ScalarE shorthand: dst = f(src * scale + bias), the row sum into `accumulate` when given.
  void activation(const device::MemRef& dst, const device::MemRef& src,
                  device::ActivationFunction f, device::ScalarOperand bias = 0.0f,
                  std::optional<device::MemRef> accumulate = {},
                  device::ScalarOperand scale = 1.0f);
  // The residual epilogue of a fused conv/matmul: sum = staged + residual (VectorE, fp32), then
  // out = act(sum) on ScalarE when there is an activation (else `sum` must be `out`).
  void residual_add(const device::MemRef& sum, const device::MemRef& staged,
                    const device::MemRef& residual, const device::MemRef& out,
                    std::optional<device::ActivationFunction> act);
  void dma(const device::MemRef& dst, const device::MemRef& src, DmaRole role);
  // Indirect DMA (a load): partition p of `dst` <- row index[p] of the HBM table whose row 0 is
  // `row` and whose rows are `row_stride` elements apart (device::DmaCopy::row_index).
  void dma_gather(const device::MemRef& dst, device::MemRef row, int64_t row_stride,
                  const device::MemRef& index, uint32_t rows);
  // Indirect DMA (a store): partition p of `src` -> row index[p] of the HBM table whose row 0 is
  // `row` and whose rows are `row_stride` elements apart (device::DmaCopy::scatter).
  void dma_scatter(device::MemRef row, int64_t row_stride, const device::MemRef& src,
                   const device::MemRef& index, uint32_t rows);
  void add_flops(double f) { flops_ += f; }

  KernelCode finish();

 private:
  // The table's `row` (row_stride elements apart, `rows` of them) and the SBUF `tile` whose
  // partition p is row index[p]: a gather into the tile, or a scatter from it.
  void indirect_dma(const device::MemRef& tile, device::MemRef row, int64_t row_stride,
                    const device::MemRef& index, uint32_t rows, bool scatter);

  const device::Target& t_;
  uint32_t debug_id_;
  uint32_t sbuf_ = 0;
  uint32_t next_bank_ = 0;
  uint32_t banks_used_ = 0;
  double flops_ = 0;
  std::vector<PendingInstruction> code_;
};

}  // namespace neuronc::codegen
