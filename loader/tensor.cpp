// Public value types: Tensor storage.
#include "neuronc/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "neuronc/status.h"

namespace neuronc {

int64_t numel(std::span<const int64_t> shape) {
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

size_t nbytes_of(int64_t numel, DType dtype) {
  if (numel < 0) return std::numeric_limits<size_t>::max();
  size_t n;
  if (__builtin_mul_overflow(static_cast<size_t>(numel), dtype_size(dtype), &n))
    return std::numeric_limits<size_t>::max();
  return n;
}

void Tensor::Free::operator()(std::byte* p) const {
  std::free(p);
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  const size_t n = nbytes();
  // A shape whose size saturated (or that has a negative dim) cannot be allocated.
  if (n > std::numeric_limits<size_t>::max() / 2) throw std::bad_alloc();
  // aligned_alloc needs a size that is a multiple of the alignment.
  const size_t rounded = (std::max<size_t>(n, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();  // caught at the API boundary
  std::memset(p, 0, rounded);
  storage_.reset(static_cast<std::byte*>(p));
  data_ = p;
}

Tensor Tensor::borrowed(const MutableTensorView& buffer) {
  Tensor t;
  t.dtype_ = buffer.dtype();
  t.shape_ = buffer.shape();
  t.data_ = buffer.data();
  return t;
}

}  // namespace neuronc
