// Symbolic shape arithmetic: element counts and exact division for reshape inference.
#include "ir/shape.h"

#include <algorithm>

namespace neuronc::ir {
namespace {

bool mul_overflows(int64_t a, int64_t b, int64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

Monomial Monomial::of(const Dim& d) {
  Monomial m;
  m.coeff = d.coeff;
  if (d.is_symbolic()) m.symbols.push_back(d.symbol);
  return m;
}

Monomial& Monomial::operator*=(const Dim& d) {
  return *this *= Monomial::of(d);
}

Monomial& Monomial::operator*=(const Monomial& m) {
  int64_t c = 0;
  if (mul_overflows(coeff, m.coeff, &c)) c = INT64_MAX;  // saturate; numel() checks
  coeff = c;
  symbols.insert(symbols.end(), m.symbols.begin(), m.symbols.end());
  std::sort(symbols.begin(), symbols.end());
  return *this;
}

std::optional<Monomial> Monomial::divide(const Monomial& other) const {
  if (other.coeff == 0 || coeff % other.coeff != 0) return std::nullopt;
  Monomial q;
  q.coeff = coeff / other.coeff;
  q.symbols = symbols;
  for (SymbolId s : other.symbols) {
    auto it = std::find(q.symbols.begin(), q.symbols.end(), s);
    if (it == q.symbols.end()) return std::nullopt;
    q.symbols.erase(it);
  }
  return q;
}

std::optional<Dim> Monomial::divide_to_dim(const Monomial& other) const {
  std::optional<Monomial> q = divide(other);
  if (!q) return std::nullopt;
  if (q->symbols.empty()) return Dim::constant(q->coeff);
  if (q->symbols.size() == 1) return Dim::sym(q->symbols[0], q->coeff);
  return std::nullopt;
}

std::optional<Monomial> numel(const Shape& shape) {
  Monomial m;
  for (const Dim& d : shape) {
    int64_t c = 0;
    if (mul_overflows(m.coeff, d.coeff, &c)) return std::nullopt;
    m.coeff = c;
    if (d.is_symbolic()) m.symbols.push_back(d.symbol);
  }
  std::sort(m.symbols.begin(), m.symbols.end());
  return m;
}

bool is_static(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Dim& d) { return d.is_constant(); });
}

std::vector<std::pair<int64_t, int64_t>> tensor_split_ranges(int64_t n,
                                                             const std::vector<int64_t>& indices) {
  auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t start = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    const int64_t s = clamp(start), e = i < indices.size() ? clamp(indices[i]) : n;
    out.emplace_back(s, std::max(s, e));
    if (i < indices.size()) start = indices[i];
  }
  return out;
}

std::vector<int64_t> tensor_split_section_points(int64_t n, int64_t sections) {
  std::vector<int64_t> points;
  int64_t at = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) {
    at += n / sections + (i < n % sections ? 1 : 0);
    points.push_back(at);
  }
  return points;
}

}  // namespace neuronc::ir
