// The one mapping between the project's element types (neuronc/dtype.h) and the two artifact.fbs
// enumerations that store them: TensorDType (plan values; the same numbers) and DeviceDType
// (instruction operands; the ISA's own order, kept for format compatibility). Internal to
// artifact_format's codecs.
#pragma once

#include <array>
#include <optional>

#include "artifact_format/artifact_generated.h"
#include "neuronc/dtype.h"

namespace neuronc::artifact {

// TensorDType is DType's first kNumTensorDTypes numbers.
static_assert(static_cast<int>(fb::TensorDType::MAX) + 1 == kNumTensorDTypes);
static_assert(static_cast<int>(fb::TensorDType::f32) == static_cast<int>(DType::f32) &&
              static_cast<int>(fb::TensorDType::f16) == static_cast<int>(DType::f16) &&
              static_cast<int>(fb::TensorDType::bf16) == static_cast<int>(DType::bf16) &&
              static_cast<int>(fb::TensorDType::f64) == static_cast<int>(DType::f64) &&
              static_cast<int>(fb::TensorDType::i64) == static_cast<int>(DType::i64) &&
              static_cast<int>(fb::TensorDType::i32) == static_cast<int>(DType::i32) &&
              static_cast<int>(fb::TensorDType::i16) == static_cast<int>(DType::i16) &&
              static_cast<int>(fb::TensorDType::i8) == static_cast<int>(DType::i8) &&
              static_cast<int>(fb::TensorDType::u8) == static_cast<int>(DType::u8) &&
              static_cast<int>(fb::TensorDType::bool_) == static_cast<int>(DType::boolean) &&
              static_cast<int>(fb::TensorDType::c64) == static_cast<int>(DType::c64) &&
              static_cast<int>(fb::TensorDType::f8e4m3) == static_cast<int>(DType::f8e4m3) &&
              static_cast<int>(fb::TensorDType::f8e5m2) == static_cast<int>(DType::f8e5m2));

inline fb::TensorDType to_fb_tensor_dtype(DType t) {
  return static_cast<fb::TensorDType>(t);
}
// nullopt for a number outside TensorDType.
inline std::optional<DType> from_fb_tensor_dtype(fb::TensorDType t) {
  if (static_cast<int>(t) >= kNumTensorDTypes) return std::nullopt;
  return static_cast<DType>(t);
}

// DeviceDType number -> DType: every type the engines read and write, in artifact.fbs order.
inline constexpr std::array<DType, 12> kDeviceDTypes = {
    DType::f32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2, DType::i32,
    DType::i16, DType::i8,   DType::u32, DType::u16,    DType::u8,     DType::tf32};
static_assert(static_cast<int>(fb::DeviceDType::MAX) + 1 == kDeviceDTypes.size());
static_assert(static_cast<int>(fb::DeviceDType::bf16) == 1 &&
              static_cast<int>(fb::DeviceDType::i32) == 5 &&
              static_cast<int>(fb::DeviceDType::u32) == 8 &&
              static_cast<int>(fb::DeviceDType::tf32) == 11);

// The DeviceDType of an engine type (is_engine_dtype). The program verifier refuses any other
// before a program is written; should one reach the encoder anyway, it is written as a number
// outside DeviceDType (its own number when that is outside DType, else 255), so the reader
// refuses it instead of reading another type.
inline fb::DeviceDType to_fb_device_dtype(DType t) {
  for (size_t i = 0; i < kDeviceDTypes.size(); ++i)
    if (kDeviceDTypes[i] == t) return static_cast<fb::DeviceDType>(i);
  if (static_cast<int>(t) >= kNumDTypes) return static_cast<fb::DeviceDType>(t);
  return static_cast<fb::DeviceDType>(255);
}
// nullopt for a number outside DeviceDType.
inline std::optional<DType> from_fb_device_dtype(fb::DeviceDType t) {
  const auto i = static_cast<size_t>(t);
  if (i >= kDeviceDTypes.size()) return std::nullopt;
  return kDeviceDTypes[i];
}

}  // namespace neuronc::artifact
