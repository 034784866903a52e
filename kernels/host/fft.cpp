// Host FFT kernels: aten.fft_rfft and aten.fft_fftn (training IR), aten._fft_r2c and
// aten._fft_c2c (core IR), and aten.real (FNet mixes tokens with fftn(...).real). Real or complex64
// input, complex64 output. Radix-2 Cooley-Tukey when the length is a power of two, a direct DFT
// otherwise; both accumulate in double.
#include <algorithm>
#include <cmath>
#include <complex>

#include "kernels/host_kernel.h"

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
  if (!dtype_is_float(x.dtype))
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

// The elements of `x` (real or complex64, contiguous) as complex doubles.
std::vector<cd> to_complex(const HostTensor& x) {
  std::vector<cd> data(static_cast<size_t>(x.numel()));
  if (x.dtype == TensorDType::c64) {
    const float* p = x.as<float>();
    for (size_t k = 0; k < data.size(); ++k) data[k] = cd(p[2 * k], p[2 * k + 1]);
  } else {
    const std::vector<double> v = to_double(x);
    for (size_t k = 0; k < data.size(); ++k) data[k] = v[k];
  }
  return data;
}

// Complex FFT of `x` over `dims`, forward or inverse (the conjugate of the forward transform of
// the conjugate), scaled per `norm_mode` (0 none, 1 1/sqrt(n), 2 1/n), into complex64 output 0.
Status c2c(const HostOpContext& c, const HostTensor& x, const std::vector<int64_t>& dims,
           bool forward, int norm_mode) {
  if (!dtype_is_float(x.dtype) && x.dtype != TensorDType::c64)
    return c.error("input is " + dtype_str(x.dtype) + ", expected a float or complex64 type");
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, TensorDType::c64, x.shape));
  if (c.dry_run()) return Status::ok();
  std::vector<cd> data = to_complex(x);
  if (!forward)
    for (cd& v : data) v = std::conj(v);
  double signal = 1;
  for (int64_t d : dims) {
    fft_along(data, x.shape, d);
    signal *= static_cast<double>(x.shape[d]);
  }
  const double scale = norm_mode == 1 ? 1 / std::sqrt(signal) : norm_mode == 2 ? 1 / signal : 1.0;
  float* out = c.output(0).as<float>();
  for (size_t k = 0; k < data.size(); ++k) {
    const cd v = forward ? data[k] : std::conj(data[k]);
    out[2 * k] = static_cast<float>(v.real() * scale);
    out[2 * k + 1] = static_cast<float>(v.imag() * scale);
  }
  return Status::ok();
}

// fft_fftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
Status fft_fftn(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  std::vector<int64_t> dims = c.get_ints("dim");
  if (dims.empty())
    for (int64_t d = 0; d < x->rank(); ++d) dims.push_back(d);
  for (int64_t& d : dims) {
    NEURONC_ASSIGN_OR_RETURN_(d, normalize_dim(c, d, x->rank()));
  }
  const std::vector<int64_t> s = c.get_ints("s");
  if (!s.empty() && s.size() != dims.size())
    return c.error("s has " + std::to_string(s.size()) + " sizes for " +
                   std::to_string(dims.size()) + " dims");
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != x->shape[dims[i]])
      return c.error("s[" + std::to_string(i) + "] = " + std::to_string(s[i]) +
                     " crops or pads dim " + std::to_string(dims[i]) + " of size " +
                     std::to_string(x->shape[dims[i]]) + ", which is not supported");
  const std::string norm = c.get_string("norm").value_or("backward");
  const int mode = norm == "ortho" ? 1 : norm == "forward" ? 2 : 0;
  if (mode == 0 && norm != "backward")
    return c.error("norm is '" + norm + "', expected backward, ortho or forward");
  return c2c(c, *x, dims, true, mode);
}

// _fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor
Status fft_c2c(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  std::vector<int64_t> dims = c.get_ints("dim");
  for (int64_t& d : dims) {
    NEURONC_ASSIGN_OR_RETURN_(d, normalize_dim(c, d, x->rank()));
  }
  const int64_t mode = c.get_int("normalization", 0);
  if (mode < 0 || mode > 2)
    return c.error("normalization is " + std::to_string(mode) + ", expected 0, 1 or 2");
  return c2c(c, *x, dims, c.get_bool("forward", true), static_cast<int>(mode));
}

// real(Tensor self) -> Tensor: the real parts of a complex64 tensor (view_as_real, the pairs,
// is a data-movement kernel).
Status real_part(const HostOpContext& c) {
  NEURONC_ASSIGN_OR_RETURN_(const HostTensor* x, c.required("self"));
  NEURONC_RETURN_IF_ERROR_(c.expect_outputs(1));
  if (x->dtype != TensorDType::c64)
    return c.error("input is " + dtype_str(x->dtype) + ", expected complex64");
  NEURONC_RETURN_IF_ERROR_(c.expect_output(0, TensorDType::f32, x->shape));
  if (c.dry_run()) return Status::ok();
  const float* p = x->as<float>();
  float* out = c.output(0).as<float>();
  for (int64_t k = 0; k < x->numel(); ++k) out[k] = p[2 * k];
  return Status::ok();
}

}  // namespace

void register_fft_kernels(KernelTable& t) {
  t.add("aten.fft_rfft.default", fft_rfft);
  t.add("aten._fft_r2c.default", fft_r2c);
  t.add("aten.fft_fftn.default", fft_fftn);
  t.add("aten._fft_c2c.default", fft_c2c);
  t.add("aten.real.default", real_part);
}

}  // namespace neuronc::host
