// Host FFT kernels: aten.fft_rfft (training IR) and aten._fft_r2c (core IR). Real input,
// complex64 output. Radix-2 Cooley-Tukey when the length is a power of two, a direct DFT
// otherwise; both accumulate in double.
#include <algorithm>
#include <cmath>
#include <complex>

#include "loader/host_kernel.h"

namespace neuronc::host {
namespace {

using cd = std::complex<double>;

void fft_inplace(std::vector<cd>& a) {
  const size_t n = a.size();
  if (n <= 1) return;
  if ((n & (n - 1)) == 0) {
    for (size_t i = 1, j = 0; i < n; ++i) {
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
      const double ang = -2 * M_PI / static_cast<double>(len);
      for (size_t i = 0; i < n; i += len)
        for (size_t k = 0; k < len / 2; ++k) {
          const cd w = std::polar(1.0, ang * static_cast<double>(k));
          const cd u = a[i + k], v = a[i + k + len / 2] * w;
          a[i + k] = u + v;
          a[i + k + len / 2] = u - v;
        }
    }
    return;
  }
  std::vector<cd> out(n);
  for (size_t k = 0; k < n; ++k) {
    cd s = 0;
    for (size_t t = 0; t < n; ++t)
      s += a[t] *
           std::polar(1.0, -2 * M_PI * static_cast<double>((k * t) % n) / static_cast<double>(n));
    out[k] = s;
  }
  a = std::move(out);
}

// Transforms `data` (complex, row-major `shape`) along dim `d` in place.
void fft_along(std::vector<cd>& data, const std::vector<int64_t>& shape, int64_t d) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= shape[i];
  for (size_t i = static_cast<size_t>(d) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[d];
  std::vector<cd> line(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      for (int64_t k = 0; k < n; ++k) line[k] = data[(o * n + k) * inner + in];
      fft_inplace(line);
      for (int64_t k = 0; k < n; ++k) data[(o * n + k) * inner + in] = line[k];
    }
}

// Real input `x` (cropped/zero-padded to `n` along `last`), full complex FFT over `dims`,
// keeping n/2+1 bins along `last` when onesided; scaled by `scale`.
Status r2c(const HostOpContext& c, const HostTensor& x, std::vector<int64_t> dims, int64_t last,
           int64_t n, bool onesided, int norm_mode /*0 none, 1 ortho, 2 forward*/) {
  if (!is_float(x.dtype))
    return c.error("input is " + dtype_str(x.dtype) + ", expected a float type");
  if (n < 1) return c.error("fft length is " + std::to_string(n) + ", expected >= 1");
  std::vector<int64_t> shape = x.shape;
  shape[last] = n;
  std::vector<int64_t> out_shape = shape;
  if (onesided) out_shape[last] = n / 2 + 1;
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, TensorDType::c64, out_shape));
  if (c.dry_run()) return Status::ok();
  // Copy into complex buffer with crop / zero pad along `last`.
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  std::vector<cd> data(static_cast<size_t>(total));
  const std::vector<double> xv = to_double(x);
  const auto xs = contiguous_strides(x.shape);
  const auto ds = contiguous_strides(shape);
  std::vector<int64_t> pos(shape.size(), 0);
  for (int64_t k = 0; k < total; ++k) {
    if (pos[last] < x.shape[last]) {
      int64_t src = 0;
      for (size_t i = 0; i < shape.size(); ++i) src += pos[i] * xs[i];
      data[k] = xv[src];
    }
    for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
      if (++pos[i] < shape[i]) break;
      pos[i] = 0;
    }
  }
  double signal = 1;
  for (int64_t d : dims) {
    fft_along(data, shape, d);
    signal *= static_cast<double>(shape[d]);
  }
  const double scale = norm_mode == 1 ? 1 / std::sqrt(signal) : norm_mode == 2 ? 1 / signal : 1.0;
  HostTensor& o = c.output(0);
  float* out = o.as<float>();
  std::fill(pos.begin(), pos.end(), 0);
  for (int64_t k = 0; k < o.numel(); ++k) {
    int64_t src = 0;
    for (size_t i = 0; i < shape.size(); ++i) src += pos[i] * ds[i];
    out[2 * k] = static_cast<float>(data[src].real() * scale);
    out[2 * k + 1] = static_cast<float>(data[src].imag() * scale);
    for (int64_t i = static_cast<int64_t>(out_shape.size()) - 1; i >= 0; --i) {
      if (++pos[i] < out_shape[i]) break;
      pos[i] = 0;
    }
  }
  return Status::ok();
}

// fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
Status fft_rfft(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->rank() == 0) return c.error("input must have at least one dim");
  NEURONC_ASSIGN_OR_RETURN_(int64_t d, normalize_dim(c, c.get_int("dim", -1), x->rank()));
  const int64_t n = c.opt_int("n").value_or(x->shape[d]);
  const std::string norm = c.get_string("norm").value_or("backward");
  int mode = 0;
  if (norm == "ortho")
    mode = 1;
  else if (norm == "forward")
    mode = 2;
  else if (norm != "backward")
    return c.error("norm is '" + norm + "', expected backward, ortho or forward");
  return r2c(c, *x, {d}, d, n, true, mode);
}

// _fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor
Status fft_r2c(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  std::vector<int64_t> dims = c.get_ints("dim");
  if (dims.empty()) return c.error("dim list is empty");
  for (int64_t& d : dims) {
    NEURONC_ASSIGN_OR_RETURN_(d, normalize_dim(c, d, x->rank()));
  }
  const int64_t mode = c.get_int("normalization", 0);
  if (mode < 0 || mode > 2)
    return c.error("normalization is " + std::to_string(mode) + ", expected 0, 1 or 2");
  const int64_t last = dims.back();
  return r2c(c, *x, dims, last, x->shape[last], c.get_bool("onesided", true),
             static_cast<int>(mode));
}

}  // namespace

void register_fft_kernels(KernelTable& t) {
  t.add("aten.fft_rfft.default", fft_rfft);
  t.add("aten._fft_r2c.default", fft_r2c);
}

}  // namespace neuronc::host
