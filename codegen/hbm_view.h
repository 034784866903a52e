// Strided views of tensors in the HBM arena. Data-movement ops (view, permute, expand, slice,
// select, split) become views of their input's buffer instead of copies; kernels read any view
// through DMA access patterns.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device/isa.h"

namespace neuronc::codegen {

struct HbmView {
  device::DType dtype = device::DType::f32;
  uint64_t base = 0;   // byte offset of the buffer in the arena (set after planning)
  int64_t offset = 0;  // elements from `base` to element [0, ..., 0]
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements; 0 for broadcast dimensions

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;
  bool is_contiguous() const;  // row-major dense, offset anywhere
  uint64_t byte_offset(int64_t element_offset) const {
    return base + static_cast<uint64_t>(offset + element_offset) * device::dtype_size(dtype);
  }

  static HbmView contiguous(device::DType dtype, uint64_t base, std::vector<int64_t> shape);
  HbmView permute(const std::vector<int64_t>& dims) const;
  // Broadcast to `shape` (numpy rules: new leading dims, size-1 dims stretched, stride 0).
  HbmView expand(const std::vector<int64_t>& shape) const;
  HbmView slice(int64_t dim, int64_t start, int64_t end, int64_t step) const;
  HbmView select(int64_t dim, int64_t index) const;
  // A view with `shape` over the same elements in row-major order, when the strides allow it
  // without a copy (PyTorch's computeStride rule); nullopt otherwise.
  std::optional<HbmView> reshape(const std::vector<int64_t>& shape) const;
};

// Merges adjacent dimensions that every operand walks contiguously (stride[i] ==
// stride[i+1] * size[i+1] for all operands) and drops size-1 dimensions. `strides[k]` holds
// operand k's strides over `sizes`. Always leaves at least one dimension.
void coalesce(std::vector<int64_t>& sizes, std::vector<std::vector<int64_t>>& strides);

}  // namespace neuronc::codegen
