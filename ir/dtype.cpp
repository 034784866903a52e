// DType names, sizes and PyTorch's promotion lattice.
#include "ir/dtype.h"

#include <array>

namespace neuronc::ir {
namespace {

struct DTypeInfo {
  std::string_view name;
  ::neuronc::DType element;
};

using E = ::neuronc::DType;
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"f64", E::f64},
    {"f32", E::f32},
    {"f16", E::f16},
    {"bf16", E::bf16},
    {"f8e4m3fn", E::f8e4m3},
    {"f8e5m2", E::f8e5m2},
    {"i64", E::i64},
    {"i32", E::i32},
    {"i16", E::i16},
    {"i8", E::i8},
    {"u8", E::u8},
    {"bool", E::boolean},
    {"c64", E::c64},
}};

}  // namespace

std::string_view dtype_name(DType t) {
  return kInfo[static_cast<size_t>(t)].name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

::neuronc::DType element_type(DType t) {
  return kInfo[static_cast<size_t>(t)].element;
}

std::optional<DType> from_element_type(::neuronc::DType t) {
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].element == t) return static_cast<DType>(i);
  }
  return std::nullopt;
}

size_t dtype_size(DType t) {
  return ::neuronc::dtype_size(element_type(t));
}

bool is_floating(DType t) {
  return ::neuronc::dtype_is_float(element_type(t));
}

bool is_integral(DType t) {
  return t != DType::boolean && ::neuronc::dtype_is_integral(element_type(t));
}

bool is_complex(DType t) {
  return t == DType::c64;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::c64 || b == DType::c64) return DType::c64;
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;  // float wins over integer
  if (fa) {
    // f16 with bf16 (or either fp8 with another 16-bit float) has no common 16-bit type.
    auto rank = [](DType t) {
      switch (t) {
        case DType::f8e4m3fn:
        case DType::f8e5m2:
          return 0;
        case DType::f16:
        case DType::bf16:
          return 1;
        case DType::f32:
          return 2;
        default:
          return 3;
      }
    };
    const int ra = rank(a), rb = rank(b);
    if (ra == rb) return ra == 3 ? DType::f64 : (ra == 2 ? DType::f32 : DType::f32);
    if (ra == 0 || rb == 0) {
      // fp8 with a wider float promotes to the wider one.
      return ra > rb ? a : b;
    }
    return ra > rb ? a : b;
  }
  // Integers: u8 with a signed type needs the next wider signed type.
  auto bits = [](DType t) -> int { return static_cast<int>(dtype_size(t)) * 8; };
  if (a == DType::u8 || b == DType::u8) {
    const DType other = a == DType::u8 ? b : a;
    if (other == DType::i8) return DType::i16;
    return other;  // i16/i32/i64 hold every u8 value
  }
  return bits(a) >= bits(b) ? a : b;
}

}  // namespace neuronc::ir
