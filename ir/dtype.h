// Element types of IR tensors. The set is what torch.export writes for models we compile;
// numbering is our own (never c10's nor the export schema's — the frontend maps those).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "neuronc/dtype.h"

namespace neuronc::ir {

enum class DType : uint8_t {
  f64,
  f32,
  f16,
  bf16,
  f8e4m3fn,
  f8e5m2,
  i64,
  i32,
  i16,
  i8,
  u8,
  boolean,
  c64,  // complex64: only host-fallback ops (fft) produce or consume it
};

inline constexpr int kNumDTypes = 13;

// The element type (the project's one vocabulary, neuronc/dtype.h) an IR dtype is stored as,
// and back (nullopt for the device-only types u32, u16 and tf32). The one mapping between them.
::neuronc::DType element_type(DType t);
std::optional<DType> from_element_type(::neuronc::DType t);

// Short name used by the text form and messages: "f32", "bf16", "i64", "bool", ...
std::string_view dtype_name(DType t);
// Inverse of dtype_name; nullopt for an unknown name.
std::optional<DType> parse_dtype(std::string_view name);
// Bytes per element (bool is one byte, as in PyTorch storage).
size_t dtype_size(DType t);
bool is_floating(DType t);
bool is_integral(DType t);  // integers, not bool
bool is_complex(DType t);

// PyTorch's type promotion for two tensor operands of the same category rank
// (e.g. f16 + bf16 -> f32, i32 + i64 -> i64, bool + i32 -> i32, i64 + f16 -> f16).
DType promote_types(DType a, DType b);

}  // namespace neuronc::ir
