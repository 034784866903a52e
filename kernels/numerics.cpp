// Rounding and conversion routines for the narrow storage types, and element loads and stores
// (numerics.h). One generic
// routine handles every IEEE-like format: it rounds the 24-bit fp32 significand at the target
// precision with integer arithmetic so ties, subnormals and carries into the exponent fall out
// of the same code path.
#include "kernels/numerics.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace neuronc::kernels {
namespace {

// Shifts x right by s bits with round-to-nearest-even (or stochastic with `random`).
inline uint64_t round_shift(uint64_t x, int s, Rounding r, uint32_t random) {
  if (s <= 0) return x << (-s);
  if (s >= 40) return 0;
  uint64_t q = x >> s;
  uint64_t rem = x & ((uint64_t{1} << s) - 1);
  if (r == Rounding::nearest_even) {
    uint64_t half = uint64_t{1} << (s - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  } else {
    // Compare the discarded fraction with a uniform random fraction of the same width.
    uint64_t rnd = s >= 32 ? (uint64_t{random} << (s - 32)) : (random >> (32 - s));
    if (rem + rnd >= (uint64_t{1} << s)) ++q;
  }
  return q;
}

// fp32 -> format with E exponent bits, M mantissa bits, IEEE inf/NaN.
template <int E, int M>
uint32_t narrow(float x, Rounding r, uint32_t random) {
  constexpr int kBias = (1 << (E - 1)) - 1;
  constexpr int kEmin = 1 - kBias;
  constexpr uint32_t kExpAll = (1u << E) - 1;
  constexpr uint32_t kInf = kExpAll << M;
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (bits >> 31) << (E + M);
  const uint32_t e32 = (bits >> 23) & 0xff;
  const uint32_t m32 = bits & 0x7fffff;
  if (e32 == 0xff) {
    if (m32 == 0) return sign | kInf;
    // Quiet NaN, keep the top payload bits that fit.
    uint32_t payload = M >= 23 ? m32 : (m32 >> (23 - M));
    return sign | kInf | payload | (1u << (M - 1));
  }
  int e;
  uint64_t sig;
  if (e32 == 0) {
    if (m32 == 0) return sign;
    e = -126;
    sig = m32;
  } else {
    e = static_cast<int>(e32) - 127;
    sig = m32 | 0x800000;
  }
  uint64_t enc;
  if (e >= kEmin) {
    uint64_t rounded = round_shift(sig, 23 - M, r, random);
    // Adding the biased exponent carries into the exponent when the significand rounds up.
    enc = (static_cast<uint64_t>(e - kEmin + 1) << M) + rounded - (uint64_t{1} << M);
    if (e32 == 0) enc = rounded;  // fp32 subnormal input (only when kEmin == -126)
  } else {
    enc = round_shift(sig, 23 - M + (kEmin - e), r, random);
  }
  if (enc >= kInf) {
    // RNE overflow -> inf. Stochastic: a finite input below max+ulp saturates instead of
    // becoming inf (it rounded up past the largest finite value).
    if (r == Rounding::stochastic) {
      // Largest finite magnitude in fp32.
      float maxf = std::ldexp(2.0f - std::ldexp(1.0f, -M), (1 << (E - 1)) - 1);
      if (std::fabs(x) <= maxf) return sign | (kInf - 1);
    }
    return sign | kInf;
  }
  return sign | static_cast<uint32_t>(enc);
}

template <int E, int M>
float widen(uint32_t v) {
  constexpr int kBias = (1 << (E - 1)) - 1;
  const uint32_t sign = (v >> (E + M)) & 1;
  const uint32_t exp = (v >> M) & ((1u << E) - 1);
  const uint32_t man = v & ((1u << M) - 1);
  uint32_t out;
  if (exp == (1u << E) - 1) {
    out = (sign << 31) | 0x7f800000u | (man << (23 - M)) | (man ? 0x400000u : 0);
  } else if (exp == 0) {
    float f = std::ldexp(static_cast<float>(man), 1 - kBias - M);
    return sign ? -f : f;
  } else {
    out = (sign << 31) | ((exp - kBias + 127) << 23) | (man << (23 - M));
  }
  return std::bit_cast<float>(out);
}

struct Fp8Tables {
  float e4m3[256];
  float e5m2[256];
  Fp8Tables() {
    for (int i = 0; i < 256; ++i) {
      e4m3[i] = widen<4, 3>(static_cast<uint32_t>(i));
      e5m2[i] = widen<5, 2>(static_cast<uint32_t>(i));
    }
  }
};
const Fp8Tables& fp8_tables() {
  static const Fp8Tables t;
  return t;
}

// bf16 -> fp32 widening of a run: a shift of each 16-bit pattern into the top half.
void widen_bf16_scalar(const std::byte* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = std::bit_cast<float>(uint32_t{h} << 16);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void widen_bf16_avx2(const std::byte* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
  }
  widen_bf16_scalar(src + 2 * i, dst + i, n - i);
}
bool have_avx2() {
  static const bool kHave = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return kHave;
}
#endif

#if defined(__x86_64__)
// fp32 -> bf16 of a run, rounding to nearest even and quieting NaNs exactly as
// f32_to_bf16_nearest does, eight at a time (a folded weight cast is hundreds of millions).
__attribute__((target("avx2"))) void narrow_bf16_avx2(const float* src, std::byte* dst, size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i high = _mm256_srli_epi32(b, 16);
    const __m256i rne = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(b, bias), _mm256_and_si256(high, one)), 16);
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, abs_mask), inf);
    const __m256i r = _mm256_blendv_epi8(rne, _mm256_or_si256(high, quiet), is_nan);
    // Eight 32-bit results below 2^16 to eight 16-bit ones: pack within each 128-bit lane,
    // then bring the two lanes' low halves together.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0b1000);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) {
    const uint16_t h = f32_to_bf16_nearest(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

bool have_avx512bw() {
  static const bool kHave = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  }();
  return kHave;
}

// The same, sixteen at a time (the AVX2 one's arithmetic, with NaN lanes picked by a mask and
// the results narrowed by VPMOVDW).
__attribute__((target("avx512f,avx512bw"))) void narrow_bf16_avx512(const float* src,
                                                                    std::byte* dst, size_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  // The zero-masking forms: GCC 12 calls the unmasked ones' passthrough maybe-uninitialized.
  const __mmask16 all = 0xffff;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i b = _mm512_loadu_si512(src + i);
    const __m512i high = _mm512_maskz_srli_epi32(all, b, 16);
    const __m512i rne = _mm512_maskz_srli_epi32(
        all, _mm512_add_epi32(_mm512_add_epi32(b, bias), _mm512_and_si512(high, one)), 16);
    const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(b, abs_mask), inf);
    const __m512i r = _mm512_mask_blend_epi32(is_nan, rne, _mm512_or_si512(high, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * i),
                        _mm512_maskz_cvtepi32_epi16(all, r));
  }
  narrow_bf16_avx2(src + i, dst + 2 * i, n - i);
}
#endif

#if defined(__x86_64__)
// dst[i] = float(double(src[i]) * scale), eight at a time: exactly the scalar rounding (the
// product of two doubles rounded once to double, then to float, both to nearest even).
__attribute__((target("avx2"))) void scale_f32_avx2(float* dst, const float* src, size_t n,
                                                    double scale) {
  const __m256d s = _mm256_set1_pd(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d lo = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(src + i)), s);
    const __m256d hi = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(src + i + 4)), s);
    _mm_storeu_ps(dst + i, _mm256_cvtpd_ps(lo));
    _mm_storeu_ps(dst + i + 4, _mm256_cvtpd_ps(hi));
  }
  for (; i < n; ++i) dst[i] = static_cast<float>(static_cast<double>(src[i]) * scale);
}
#endif

void widen_bf16(const std::byte* src, float* dst, size_t n) {
#if defined(__x86_64__)
  if (have_avx2()) return widen_bf16_avx2(src, dst, n);
#endif
  widen_bf16_scalar(src, dst, n);
}

template <typename T>
T rd(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void wr(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace

uint16_t f32_to_bf16(float x, Rounding r, uint32_t random) {
  if (r == Rounding::nearest_even) return f32_to_bf16_nearest(x);
  return static_cast<uint16_t>(narrow<8, 7>(x, r, random));
}
uint16_t f32_to_f16(float x, Rounding r, uint32_t random) {
  return static_cast<uint16_t>(narrow<5, 10>(x, r, random));
}
uint8_t f32_to_f8e4m3(float x, Rounding r, uint32_t random) {
  return static_cast<uint8_t>(narrow<4, 3>(x, r, random));
}
uint8_t f32_to_f8e5m2(float x, Rounding r, uint32_t random) {
  return static_cast<uint8_t>(narrow<5, 2>(x, r, random));
}
uint32_t f32_to_tf32_bits(float x, Rounding r, uint32_t random) {
  return narrow<8, 10>(x, r, random) << 13;
}

float bf16_to_f32(uint16_t bits) {
  return std::bit_cast<float>(uint32_t{bits} << 16);
}
float f16_to_f32(uint16_t bits) {
  return widen<5, 10>(bits);
}
float f8e4m3_to_f32(uint8_t bits) {
  return fp8_tables().e4m3[bits];
}
float f8e5m2_to_f32(uint8_t bits) {
  return fp8_tables().e5m2[bits];
}

int64_t f32_to_int(float x, DType t) {
  if (std::isnan(x)) return 0;
  double lo, hi;
  switch (t) {
    case DType::i32:
      lo = -2147483648.0;
      hi = 2147483647.0;
      break;
    case DType::i16:
      lo = -32768.0;
      hi = 32767.0;
      break;
    case DType::i8:
      lo = -128.0;
      hi = 127.0;
      break;
    case DType::u32:
      lo = 0.0;
      hi = 4294967295.0;
      break;
    case DType::u16:
      lo = 0.0;
      hi = 65535.0;
      break;
    case DType::u8:
      lo = 0.0;
      hi = 255.0;
      break;
    case DType::i64:
      lo = -9223372036854775808.0;
      hi = 9223372036854774784.0;  // the largest double below 2^63
      break;
    case DType::boolean:
      return x != 0.0f ? 1 : 0;
    default:
      return 0;
  }
  double v = std::nearbyint(static_cast<double>(x));  // default mode: ties to even
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return static_cast<int64_t>(v);
}

// Every engine type is exact in double, so one rounding to fp32 is the datapath's widening
// (integers above 2^24 lose their low bits, as on the hardware).
float load_f32(const std::byte* p, DType t) {
  if (t == DType::f32 || t == DType::tf32) return rd<float>(p);
  return static_cast<float>(load_double(p, t));
}

void store_f32(std::byte* p, DType t, float x, Rounding r, StochasticRounder* rng) {
  uint32_t rnd = (r == Rounding::stochastic && rng) ? rng->next_u32() : 0;
  Rounding rr = (r == Rounding::stochastic && rng) ? r : Rounding::nearest_even;
  switch (t) {
    case DType::f32:
      wr<float>(p, x);
      return;
    case DType::tf32:
      wr<uint32_t>(p, f32_to_tf32_bits(x, rr, rnd));
      return;
    case DType::bf16:
      wr<uint16_t>(p, f32_to_bf16(x, rr, rnd));
      return;
    case DType::f16:
      wr<uint16_t>(p, f32_to_f16(x, rr, rnd));
      return;
    case DType::f8e4m3:
      wr<uint8_t>(p, f32_to_f8e4m3(x, rr, rnd));
      return;
    case DType::f8e5m2:
      wr<uint8_t>(p, f32_to_f8e5m2(x, rr, rnd));
      return;
    case DType::f64:
      wr<double>(p, x);
      return;
    case DType::c64:
      wr<float>(p, x);
      wr<float>(p + 4, 0.0f);
      return;
    default:
      store_int(p, t, f32_to_int(x, t));
      return;
  }
}

void load_f32_n(const std::byte* src, DType t, float* dst, size_t n) {
  switch (t) {
    case DType::f32:
    case DType::tf32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::bf16:
      widen_bf16(src, dst, n);
      return;
    default: {
      const uint32_t sz = dtype_size(t);
      for (size_t i = 0; i < n; ++i) dst[i] = load_f32(src + i * sz, t);
      return;
    }
  }
}

void load_f32_strided(const std::byte* src, int64_t stride, DType t, float* dst, size_t n) {
  switch (t) {
    case DType::f32:
    case DType::tf32:
      for (size_t i = 0; i < n; ++i) dst[i] = rd<float>(src + int64_t(i) * stride);
      return;
    case DType::bf16:
      for (size_t i = 0; i < n; ++i) {
        // load_f32 widens through double, and that conversion quiets a signalling NaN (sets
        // the mantissa's top bit, keeps the payload); so does this.
        uint32_t bits = uint32_t{rd<uint16_t>(src + int64_t(i) * stride)} << 16;
        if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) bits |= 0x00400000u;
        dst[i] = std::bit_cast<float>(bits);
      }
      return;
    default:
      for (size_t i = 0; i < n; ++i) dst[i] = load_f32(src + int64_t(i) * stride, t);
      return;
  }
}

void scale_f32_n(float* dst, const float* src, size_t n, double scale) {
#if defined(__x86_64__)
  if (have_avx2()) return scale_f32_avx2(dst, src, n, scale);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<double>(src[i]) * scale);
}

void store_f32_n(std::byte* dst, DType t, const float* src, size_t n, Rounding r,
                 StochasticRounder* rng) {
  if (r == Rounding::nearest_even || rng == nullptr) {
    switch (t) {
      case DType::f32:
        std::memcpy(dst, src, n * 4);
        return;
      case DType::bf16: {
#if defined(__x86_64__)
        if (have_avx512bw()) return narrow_bf16_avx512(src, dst, n);
        if (have_avx2()) return narrow_bf16_avx2(src, dst, n);
#endif
        auto* d = reinterpret_cast<unsigned char*>(dst);
        for (size_t i = 0; i < n; ++i) {
          const uint16_t b = f32_to_bf16_nearest(src[i]);
          d[2 * i] = static_cast<unsigned char>(b & 0xff);
          d[2 * i + 1] = static_cast<unsigned char>(b >> 8);
        }
        return;
      }
      default:
        break;
    }
  }
  const uint32_t sz = dtype_size(t);
  for (size_t i = 0; i < n; ++i) store_f32(dst + i * sz, t, src[i], r, rng);
}

int64_t load_int(const std::byte* p, DType t) {
  switch (t) {
    case DType::i32:
      return rd<int32_t>(p);
    case DType::i16:
      return rd<int16_t>(p);
    case DType::i8:
      return rd<int8_t>(p);
    case DType::u32:
    case DType::f32:
    case DType::tf32:
      return rd<uint32_t>(p);
    case DType::u16:
    case DType::bf16:
    case DType::f16:
      return rd<uint16_t>(p);
    case DType::u8:
    case DType::boolean:
    case DType::f8e4m3:
    case DType::f8e5m2:
      return rd<uint8_t>(p);
    case DType::i64:
    case DType::f64:
    case DType::c64:
      return rd<int64_t>(p);
  }
  return 0;
}

void store_int(std::byte* p, DType t, int64_t v) {
  switch (dtype_size(t)) {
    case 8:
      wr<int64_t>(p, v);
      return;
    case 4:
      wr<uint32_t>(p, static_cast<uint32_t>(v));
      return;
    case 2:
      wr<uint16_t>(p, static_cast<uint16_t>(v));
      return;
    default:
      wr<uint8_t>(p, static_cast<uint8_t>(v));
      return;
  }
}

// --- Host elements ----------------------------------------------------------------------------

double load_double(const std::byte* p, DType t) {
  switch (t) {
    case DType::f32:
      return rd<float>(p);
    case DType::f64:
      return rd<double>(p);
    case DType::f16:
      return f16_to_f32(rd<uint16_t>(p));
    case DType::bf16:
      return bf16_to_f32(rd<uint16_t>(p));
    case DType::f8e4m3:
      return f8e4m3_to_f32(rd<uint8_t>(p));
    case DType::f8e5m2:
      return f8e5m2_to_f32(rd<uint8_t>(p));
    case DType::i64:
      return static_cast<double>(rd<int64_t>(p));
    case DType::i32:
      return rd<int32_t>(p);
    case DType::i16:
      return rd<int16_t>(p);
    case DType::i8:
      return rd<int8_t>(p);
    case DType::u8:
      return rd<uint8_t>(p);
    case DType::boolean:
      return rd<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::c64:
      return rd<float>(p);  // real part
    case DType::u32:
      return rd<uint32_t>(p);
    case DType::u16:
      return rd<uint16_t>(p);
    case DType::tf32:
      return rd<float>(p);
  }
  return 0;
}

namespace {
// Float -> integer as PyTorch's static_cast (truncation), saturated instead of UB.
template <typename I>
I to_int(double v) {
  if (std::isnan(v)) return 0;
  const double lo = static_cast<double>(std::numeric_limits<I>::min());
  const double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}
}  // namespace

void store_double(std::byte* p, DType t, double v) {
  if (t == DType::f64) return wr<double>(p, v);
  // The other floats round once through f32, as the engines' stores do (nearest even).
  if (dtype_is_float(t) || t == DType::c64) return store_f32(p, t, static_cast<float>(v));
  switch (t) {
    case DType::i64:
      wr<int64_t>(p, to_int<int64_t>(v));
      return;
    case DType::i32:
      wr<int32_t>(p, to_int<int32_t>(v));
      return;
    case DType::i16:
      wr<int16_t>(p, to_int<int16_t>(v));
      return;
    case DType::i8:
      wr<int8_t>(p, to_int<int8_t>(v));
      return;
    case DType::u8:
      wr<uint8_t>(p, to_int<uint8_t>(v));
      return;
    case DType::boolean:
      wr<uint8_t>(p, v != 0 ? 1 : 0);
      return;
    case DType::u32:
      wr<uint32_t>(p, to_int<uint32_t>(v));
      return;
    case DType::u16:
      wr<uint16_t>(p, to_int<uint16_t>(v));
      return;
    default:  // the floats, above
      return;
  }
}

int64_t double_to_int64(double v) {
  return to_int<int64_t>(v);
}

double round_to(DType t, double v) {
  std::byte b[8];
  store_double(b, t, v);
  return load_double(b, t);
}

}  // namespace neuronc::kernels
