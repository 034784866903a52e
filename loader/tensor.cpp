// Public value types: Status text, DType helpers, Tensor storage.
#include "neuronc/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "neuronc/status.h"

namespace neuronc {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::ok:
      return "ok";
    case StatusCode::invalid_argument:
      return "invalid_argument";
    case StatusCode::not_found:
      return "not_found";
    case StatusCode::out_of_range:
      return "out_of_range";
    case StatusCode::io_error:
      return "io_error";
    case StatusCode::data_loss:
      return "data_loss";
    case StatusCode::incompatible_version:
      return "incompatible_version";
    case StatusCode::failed_precondition:
      return "failed_precondition";
    case StatusCode::unimplemented:
      return "unimplemented";
    case StatusCode::resource_exhausted:
      return "resource_exhausted";
    case StatusCode::internal:
      return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

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
