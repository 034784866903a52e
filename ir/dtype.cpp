// DType names, sizes and PyTorch's promotion lattice.
#include "ir/dtype.h"

#include <array>

namespace neuronc::ir {
namespace {

struct DTypeInfo {
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"f64", 8},
    {"f32", 4},
    {"f16", 2},
    {"bf16", 2},
    {"f8e4m3fn", 1},
    {"f8e5m2", 1},
    {"i64", 8},
    {"i32", 4},
    {"i16", 2},
    {"i8", 1},
    {"u8", 1},
    {"bool", 1},
    {"c64", 8},
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

size_t dtype_size(DType t) {
  return kInfo[static_cast<size_t>(t)].size;
}

bool is_floating(DType t) {
  switch (t) {
    case DType::f64:
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::f8e4m3fn:
    case DType::f8e5m2:
      return true;
    default:
      return false;
  }
}

bool is_integral(DType t) {
  switch (t) {
    case DType::i64:
    case DType::i32:
    case DType::i16:
    case DType::i8:
    case DType::u8:
      return true;
    default:
      return false;
  }
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
