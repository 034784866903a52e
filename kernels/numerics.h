// Element numerics, the one definition for the device model, the host kernels, constant folding
// and the tests (TRAINIUM.md §7):
// - conversions between fp32 and the narrow storage types (bf16, f16, fp8, tf32) with
//   round-to-nearest-even or stochastic rounding, NaN/Inf/subnormal handling;
// - the engines' element loads and stores (an fp32 datapath: load_f32, store_f32);
// - the host's element loads and stores in double precision with PyTorch's conversions
//   (load_double, store_double, round_to).
// All functions are pure and thread-safe; a StochasticRounder is not (one per thread or run).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "neuronc/dtype.h"

namespace neuronc::kernels {

enum class Rounding : uint8_t { nearest_even = 0, stochastic = 1 };

// Seeded generator for stochastic rounding (splitmix64): same seed, same bits.
class StochasticRounder {
 public:
  explicit StochasticRounder(uint64_t seed = 0) : state_(seed) {}
  uint32_t next_u32() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
  }

 private:
  uint64_t state_;
};

// fp32 -> narrow float. `random` supplies the bits for stochastic rounding (ignored for RNE):
// the value rounds away from zero when the discarded bits plus random bits carry.
// NaN stays NaN (quiet, sign kept, top payload bits kept where they fit); overflow gives inf
// under RNE (IEEE), and stochastic rounding never rounds past the largest finite value unless
// the input already exceeds it.
uint16_t f32_to_bf16(float x, Rounding r = Rounding::nearest_even, uint32_t random = 0);
// f32_to_bf16 under RNE, inline so loops over it vectorise: bf16 is f32's top half, so RNE adds
// half an ulp (less one when the kept half is even) and truncates; NaN stays a quiet NaN.
inline uint16_t f32_to_bf16_nearest(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
uint16_t f32_to_f16(float x, Rounding r = Rounding::nearest_even, uint32_t random = 0);
uint8_t f32_to_f8e4m3(float x, Rounding r = Rounding::nearest_even, uint32_t random = 0);
uint8_t f32_to_f8e5m2(float x, Rounding r = Rounding::nearest_even, uint32_t random = 0);
// tf32 keeps the fp32 layout with the low 13 mantissa bits cleared (RNE).
uint32_t f32_to_tf32_bits(float x, Rounding r = Rounding::nearest_even, uint32_t random = 0);

float bf16_to_f32(uint16_t bits);
float f16_to_f32(uint16_t bits);
float f8e4m3_to_f32(uint8_t bits);
float f8e5m2_to_f32(uint8_t bits);

// --- The engines' fp32 datapath -------------------------------------------------------------

// fp32 -> integer: round to nearest even, saturate to the type's range, NaN -> 0
// (assumption: NKI does not document float-to-int conversion).
int64_t f32_to_int(float x, DType t);

// Load one element stored as `t` at `p` and widen it to fp32 (integers convert, losing bits
// above 2^24 as the hardware's fp32 datapath does, TRAINIUM.md §7).
float load_f32(const std::byte* p, DType t);
// Round `x` to `t` and store it at `p`. `rng` may be null when r == nearest_even.
void store_f32(std::byte* p, DType t, float x, Rounding r = Rounding::nearest_even,
               StochasticRounder* rng = nullptr);

// Bulk conversions of `n` contiguous elements (vectorisable fast paths for the common types).
void load_f32_n(const std::byte* src, DType t, float* dst, size_t n);
void store_f32_n(std::byte* dst, DType t, const float* src, size_t n,
                 Rounding r = Rounding::nearest_even, StochasticRounder* rng = nullptr);
// dst[i] = float(double(src[i]) * scale) for `n` contiguous elements (dst may be src), rounded
// as that expression rounds.
void scale_f32_n(float* dst, const float* src, size_t n, double scale);
// `n` elements `stride` bytes apart, each exactly as load_f32 reads it.
void load_f32_strided(const std::byte* src, int64_t stride, DType t, float* dst, size_t n);

// Raw integer view of an element (bit-vector ops and bit-exact copies).
int64_t load_int(const std::byte* p, DType t);
void store_int(std::byte* p, DType t, int64_t v);

// --- The host's double-precision elements (PyTorch's conversions) ---------------------------

// One element as a double: exact for every integer up to 2^53 and every narrow float; c64
// gives its real part.
double load_double(const std::byte* p, DType t);
// Stores `v` as `t`: floats round to nearest even (through f32 for the narrow types); floats to
// integers truncate as PyTorch's cast does, saturated to the type's range (NaN -> 0); bool is
// v != 0; c64 gets (v, 0).
void store_double(std::byte* p, DType t, double v);
// A double as int64 as store_double converts it: truncated, saturated, NaN -> 0.
int64_t double_to_int64(double v);
// What `t` makes of `v`: store_double then load_double.
double round_to(DType t, double v);

}  // namespace neuronc::kernels
