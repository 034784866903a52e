// Shapes with symbolic dimensions. A dimension is a constant or `coeff * symbol`, where each
// symbol has an inclusive [min, max] range (from torch.export's range_constraints). The product
// form covers what exported programs do with dynamic dims (flatten of [s0, 4] is 4*s0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neuronc::ir {

// Identifies a symbol in a Graph's symbol table.
using SymbolId = int32_t;

struct Dim {
  int64_t coeff = 0;     // the value when symbol < 0; else the multiplier of the symbol
  SymbolId symbol = -1;  // -1: constant dimension

  static Dim constant(int64_t v) { return Dim{v, -1}; }
  static Dim sym(SymbolId s, int64_t coeff = 1) { return Dim{coeff, s}; }

  bool is_constant() const { return symbol < 0; }
  bool is_symbolic() const { return symbol >= 0; }
  // The constant value; only meaningful when is_constant().
  int64_t value() const { return coeff; }
  // Constant value if known.
  std::optional<int64_t> as_constant() const {
    return is_constant() ? std::optional<int64_t>(coeff) : std::nullopt;
  }
  friend bool operator==(const Dim&, const Dim&) = default;
};

struct Symbol {
  std::string name;         // "s0", "s77", as in the input file
  int64_t min = 0;          // inclusive
  int64_t max = INT64_MAX;  // inclusive; INT64_MAX = unbounded
  // A product symbol stands for the product of these free symbols (sorted, with repetition;
  // named "s23*s27"): batch × seq after a flatten. Empty for a free symbol. Its value follows
  // from theirs and is never bound on its own.
  std::vector<SymbolId> factors;
  bool is_product() const { return !factors.empty(); }
  friend bool operator==(const Symbol&, const Symbol&) = default;
};

using Shape = std::vector<Dim>;

// A product of dims: coeff * (symbols...). Used for element counts and reshape inference.
struct Monomial {
  int64_t coeff = 1;
  std::vector<SymbolId> symbols;  // sorted, with repetition

  static Monomial of(const Dim& d);
  Monomial& operator*=(const Dim& d);
  Monomial& operator*=(const Monomial& m);
  // this / other if it is exact and yields a single Dim; nullopt otherwise.
  std::optional<Dim> divide_to_dim(const Monomial& other) const;
  // this / other if it is exact (a monomial with any number of symbols); nullopt otherwise.
  std::optional<Monomial> divide(const Monomial& other) const;
  bool is_constant() const { return symbols.empty(); }
  friend bool operator==(const Monomial&, const Monomial&) = default;
};

// Number of elements as a monomial; constant when the shape is static. Overflow of the
// constant coefficient is reported by returning nullopt.
std::optional<Monomial> numel(const Shape& shape);
bool is_static(const Shape& shape);

// The [start, end) rows of each part of tensor_split along a dim of size `n`: `indices` are the
// split points, each part taken as a slice would (negative points wrap, points clamp to
// [0, n], a part whose end precedes its start is empty at its start).
std::vector<std::pair<int64_t, int64_t>> tensor_split_ranges(int64_t n,
                                                             const std::vector<int64_t>& indices);
// tensor_split's `sections` form as split points: the first n % sections parts get one row more.
std::vector<int64_t> tensor_split_section_points(int64_t n, int64_t sections);

}  // namespace neuronc::ir
