// Comparing an output with PyTorch's (output_comparison.h).
#include "tools/output_comparison.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace neuronc::tools {

std::string Tolerance::describe() const {
  char buf[160];
  int n = std::snprintf(buf, sizeof buf, "atol %.0e%s + rtol %.0e", atol,
                        atol_relative_to_max ? " x max|ref|" : "", rtol);
  if (min_cosine > -1 && n > 0 && size_t(n) < sizeof buf)
    std::snprintf(buf + n, sizeof buf - n, " (and cosine must reach %.8g)", min_cosine);
  return buf;
}

Tolerance output_tolerance(bool bf16_criterion, const ToleranceOverrides& o) {
  Tolerance tol;
  if (bf16_criterion) {
    tol.atol = 5e-2;
    tol.rtol = 5e-2;
    tol.atol_relative_to_max = o.atol < 0;
    tol.min_cosine = 0.999;
  }
  if (o.atol >= 0) tol.atol = o.atol;
  if (o.rtol >= 0) tol.rtol = o.rtol;
  if (o.min_cosine > -2) tol.min_cosine = o.min_cosine;
  return tol;
}

std::vector<double> to_doubles(const NpyArray& a) {
  std::vector<double> out(a.numel());
  const std::byte* p = a.data.data();
  for (size_t i = 0; i < out.size(); ++i) {
    switch (a.type) {
      case NpyType::f64: {
        double x;
        std::memcpy(&x, p + 8 * i, 8);
        out[i] = x;
        break;
      }
      case NpyType::f32: {
        float x;
        std::memcpy(&x, p + 4 * i, 4);
        out[i] = x;
        break;
      }
      case NpyType::f16: {
        _Float16 x;
        std::memcpy(&x, p + 2 * i, 2);
        out[i] = static_cast<float>(x);
        break;
      }
      case NpyType::bf16: {
        uint16_t x;
        std::memcpy(&x, p + 2 * i, 2);
        out[i] = std::bit_cast<float>(uint32_t{x} << 16);
        break;
      }
      case NpyType::i64: {
        int64_t x;
        std::memcpy(&x, p + 8 * i, 8);
        out[i] = static_cast<double>(x);
        break;
      }
      case NpyType::i32: {
        int32_t x;
        std::memcpy(&x, p + 4 * i, 4);
        out[i] = x;
        break;
      }
      case NpyType::i16: {
        int16_t x;
        std::memcpy(&x, p + 2 * i, 2);
        out[i] = x;
        break;
      }
      case NpyType::i8: {
        int8_t x;
        std::memcpy(&x, p + i, 1);
        out[i] = x;
        break;
      }
      case NpyType::u8:
      case NpyType::boolean:
        out[i] = static_cast<double>(static_cast<uint8_t>(p[i]));
        break;
      case NpyType::c64: {
        float x;
        std::memcpy(&x, p + 8 * i, 4);
        out[i] = x;
        break;
      }
    }
  }
  return out;
}

Comparison compare_output(const std::string& name, const NpyArray& got, const NpyArray& want,
                          const Tolerance& tol) {
  Comparison c;
  c.tol = tol;
  c.name = name;
  c.numel = want.numel();
  if (got.shape != want.shape) {
    c.shape_ok = c.pass = false;
    return c;
  }
  const std::vector<double> a = to_doubles(got), b = to_doubles(want);
  double max_ref = 0;
  for (double x : b)
    if (std::isfinite(x)) max_ref = std::max(max_ref, std::fabs(x));
  const double atol = tol.atol_relative_to_max ? tol.atol * max_ref : tol.atol;
  const double rtol = tol.rtol;
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(a[i] - b[i]);
    const bool same_special =
        (std::isnan(a[i]) && std::isnan(b[i])) || (std::isinf(b[i]) && a[i] == b[i]);
    if (!same_special) {
      if (!(d <= atol + rtol * std::fabs(b[i]))) {
        if (c.mismatches++ == 0) c.first_mismatch = i;
      }
      if (std::isfinite(d)) {
        c.max_abs = std::max(c.max_abs, d);
        if (std::fabs(b[i]) > 1e-6) c.max_rel = std::max(c.max_rel, d / std::fabs(b[i]));
      } else {
        c.max_abs = INFINITY;
      }
    }
    if (std::isfinite(a[i]) && std::isfinite(b[i])) {
      dot += a[i] * b[i];
      na += a[i] * a[i];
      nb += b[i] * b[i];
    }
  }
  c.cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  c.pass = c.mismatches == 0 && c.cosine >= tol.min_cosine;
  return c;
}

bool is_classifier_shaped(const NpyArray& a) {
  const bool floating = a.type == NpyType::f64 || a.type == NpyType::f32 ||
                        a.type == NpyType::f16 || a.type == NpyType::bf16;
  return floating && a.shape.size() == 2 && a.shape[1] >= 2;
}

namespace {

// torch.argmax's order: NaN above every number, then by value.
bool above(double a, double b) {
  if (std::isnan(a)) return !std::isnan(b);
  return !std::isnan(b) && a > b;
}

}  // namespace

void count_top_k_agreement(const NpyArray& got, const NpyArray& want, TopKAgreement& agreement) {
  const std::vector<double> g = to_doubles(got), w = to_doubles(want);
  const size_t rows = static_cast<size_t>(want.shape[0]);
  const size_t classes = static_cast<size_t>(want.shape[1]);
  agreement.classes = classes;
  std::vector<size_t> order(classes);
  for (size_t r = 0; r < rows; ++r) {
    const double* gr = g.data() + r * classes;
    const double* wr = w.data() + r * classes;
    size_t want_top = 0, got_top = 0;
    for (size_t c = 1; c < classes; ++c) {
      if (above(wr[c], wr[want_top])) want_top = c;
      if (above(gr[c], gr[got_top])) got_top = c;
    }
    // The row's 5 largest, ties to the lower index (a stable order of the indices).
    for (size_t c = 0; c < classes; ++c) order[c] = c;
    const size_t k = std::min<size_t>(5, classes);
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
        [&](size_t a, size_t b) { return above(gr[a], gr[b]) || (!above(gr[b], gr[a]) && a < b); });
    agreement.rows += 1;
    agreement.top1 += got_top == want_top;
    agreement.top5 += std::find(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k),
                                want_top) != order.begin() + static_cast<std::ptrdiff_t>(k);
  }
}

}  // namespace neuronc::tools
