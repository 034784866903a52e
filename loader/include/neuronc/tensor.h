// Tensors at the neuronc API boundary: a non-owning TensorView (inputs, read-only,
// zero-copy), a MutableTensorView (caller-provided output buffers) and an owning Tensor
// (outputs the session allocated). All tensors are dense, row-major and contiguous.
//
// Thread-safety: views are plain values (the caller owns the bytes and keeps them alive and
// unchanged while a run reads them); a Tensor is a value with no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "neuronc/dtype.h"

namespace neuronc {

// Element types (DType, dtype_size, dtype_name): neuronc/dtype.h.
using Shape = std::vector<int64_t>;

// Product of the dims (1 for a scalar); 0 if any dim is 0, -1 if any dim is negative (an
// invalid shape), and INT64_MAX when the product does not fit in int64.
int64_t numel(std::span<const int64_t> shape);

// numel elements of `dtype` in bytes; SIZE_MAX when that does not fit or numel is negative, so
// a capacity check on the result refuses the shape instead of wrapping around.
size_t nbytes_of(int64_t numel, DType dtype);

// A read-only view of caller memory. The loader never copies an input to host memory; it reads
// it in place (host ops) or DMAs it to the simulated device HBM (device partitions).
class TensorView {
 public:
  TensorView() = default;
  TensorView(const void* data, DType dtype, std::initializer_list<int64_t> shape)
      : data_(data), dtype_(dtype), shape_(shape) {}
  TensorView(const void* data, DType dtype, Shape shape)
      : data_(data), dtype_(dtype), shape_(std::move(shape)) {}

  const void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return neuronc::numel(shape_); }
  size_t nbytes() const { return nbytes_of(numel(), dtype_); }

 private:
  const void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Shape shape_;
};

// A caller-provided output buffer: the run writes the output straight into it. Its dtype and
// shape must match the output's exactly.
class MutableTensorView {
 public:
  MutableTensorView() = default;
  MutableTensorView(void* data, DType dtype, std::initializer_list<int64_t> shape)
      : data_(data), dtype_(dtype), shape_(shape) {}
  MutableTensorView(void* data, DType dtype, Shape shape)
      : data_(data), dtype_(dtype), shape_(std::move(shape)) {}

  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return neuronc::numel(shape_); }
  size_t nbytes() const { return nbytes_of(numel(), dtype_); }

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Shape shape_;
};

// An output tensor: owns its bytes (64-byte aligned), or, when the caller provided a buffer for
// it, refers to that buffer.
class Tensor {
 public:
  Tensor() = default;
  // Allocates zeroed storage.
  Tensor(DType dtype, Shape shape);
  // Refers to `buffer` (no ownership).
  static Tensor borrowed(const MutableTensorView& buffer);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return neuronc::numel(shape_); }
  size_t nbytes() const { return nbytes_of(numel(), dtype_); }
  const void* data() const { return data_; }
  void* mutable_data() { return data_; }
  bool owns_data() const { return storage_ != nullptr; }
  // Typed element access; T must match the dtype's size (e.g. float for f32).
  template <typename T>
  std::span<const T> as() const {
    return {static_cast<const T*>(data_), static_cast<size_t>(numel())};
  }
  TensorView view() const { return TensorView(data_, dtype_, shape_); }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  DType dtype_ = DType::f32;
  Shape shape_;
  std::unique_ptr<std::byte, Free> storage_;
  void* data_ = nullptr;
};

}  // namespace neuronc
