// Sliding-window geometry shared by the IR's shape rules (convolution and pooling) and the host
// kernels that compute those windows: one formula, as PyTorch's pooling_output_shape.
#pragma once

#include <cstdint>

namespace neuronc::kernels {

// Number of windows of `kernel` taps `dilation` apart, `stride` apart, over `in` elements padded
// by `pad` on each side; 0 when no window fits. With ceil_mode a last partial window counts when
// it starts inside the input or the left padding.
constexpr int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                             int64_t dilation, bool ceil_mode) {
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t num = in + 2 * pad - span;
  if (num < 0) return 0;
  int64_t out = (ceil_mode ? (num + stride - 1) / stride : num / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace neuronc::kernels
