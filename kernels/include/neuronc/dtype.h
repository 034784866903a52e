// Element types: the one vocabulary of the whole project. The public API's tensors, the
// artifact's plan values (artifact.fbs TensorDType, the same numbers), the device ISA's operand
// types (artifact.fbs DT, mapped in artifact_format/isa_codec.cpp) and the host kernels all use
// it; the compiler's IR keeps its own DType and maps to this one in one place
// (ir::element_type, ir/dtype.h).
//
// Numbering is stable (it is the artifact's TensorDType): append only, never reorder.
#pragma once

#include <cstdint>
#include <string_view>

namespace neuronc {

enum class DType : uint8_t {
  f32 = 0,
  f16,
  bf16,
  f64,
  i64,
  i32,
  i16,
  i8,
  u8,
  boolean,  // one byte, 0 or 1
  c64,      // complex64: (real, imag) f32 pairs
  f8e4m3,   // IEEE-like, bias 7, max 240, has inf/NaN (ml_dtypes float8_e4m3; assumption)
  f8e5m2,   // IEEE-like, bias 15, max 57344
  // Device-only types: engines compute in them, but no plan value (so no tensor a caller
  // passes or receives) has one.
  u32,
  u16,
  tf32,  // stored as 4 bytes; TensorE reads the top 19 bits
};
inline constexpr int kNumDTypes = 16;
// Plan values and API tensors have one of the first kNumTensorDTypes types (f32 ... f8e5m2).
inline constexpr int kNumTensorDTypes = 13;

// Bytes per element.
constexpr uint32_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
    case DType::c64:
      return 8;
    case DType::f32:
    case DType::i32:
    case DType::u32:
    case DType::tf32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
    case DType::f8e4m3:
    case DType::f8e5m2:
      return 1;
  }
  return 0;
}

// "f32", "bool", "c64", ...; "unknown" for a value outside the enumeration.
constexpr std::string_view dtype_name(DType t) {
  constexpr std::string_view kNames[kNumDTypes] = {"f32",    "f16", "bf16", "f64",  "i64", "i32",
                                                   "i16",    "i8",  "u8",   "bool", "c64", "f8e4m3",
                                                   "f8e5m2", "u32", "u16",  "tf32"};
  const auto i = static_cast<unsigned>(t);
  return i < static_cast<unsigned>(kNumDTypes) ? kNames[i] : "unknown";
}

// Real floating-point types (c64 is neither float nor integral).
constexpr bool dtype_is_float(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::f64:
    case DType::f8e4m3:
    case DType::f8e5m2:
    case DType::tf32:
      return true;
    default:
      return false;
  }
}

// Signed and unsigned integers and bool.
constexpr bool dtype_is_integral(DType t) {
  switch (t) {
    case DType::i64:
    case DType::i32:
    case DType::i16:
    case DType::i8:
    case DType::u8:
    case DType::u32:
    case DType::u16:
    case DType::boolean:
      return true;
    default:
      return false;
  }
}

// A type a plan value (and an API tensor) may have.
constexpr bool is_tensor_dtype(DType t) {
  return static_cast<int>(t) < kNumTensorDTypes;
}

// A type the engines read and write (TRAINIUM.md §4): not f64, i64, bool or c64, which the
// compiler stores on the device as f32, i32 and u8.
constexpr bool is_engine_dtype(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
    case DType::boolean:
    case DType::c64:
      return false;
    default:
      return static_cast<int>(t) < kNumDTypes;
  }
}

}  // namespace neuronc
