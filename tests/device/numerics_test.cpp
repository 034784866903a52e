// Rounding of fp32 into bf16 / fp16 / fp8: ties to even, NaN, infinities, subnormals,
// overflow, stochastic rounding, and integer conversion.
#include "device/numerics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/zeroed_bytes.h"

namespace neuronc::device {
namespace {

float bits(uint32_t b) {
  return std::bit_cast<float>(b);
}
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(bits(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(bits(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(bits(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(f32_to_bf16(bits(0x3F807FFF)), 0x3F80);  // below the tie
  EXPECT_EQ(f32_to_bf16(-1.5f), 0xBFC0);
}

TEST(Bf16, SpecialValues) {
  EXPECT_EQ(f32_to_bf16(kInf), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-kInf), 0xFF80);
  const uint16_t nan = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  // A signalling NaN whose payload sits only in the low bits must stay NaN.
  const uint16_t snan = f32_to_bf16(bits(0x7F800001));
  EXPECT_TRUE(std::isnan(bf16_to_f32(snan)));
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflow -> inf
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, Subnormals) {
  EXPECT_EQ(f32_to_bf16(bits(0x00010000)), 0x0001);
  EXPECT_EQ(f32_to_bf16(bits(0x00008000)), 0x0000);  // tie to even (0)
  EXPECT_EQ(f32_to_bf16(bits(0x00018000)), 0x0002);  // tie to even (2)
  EXPECT_EQ(f32_to_bf16(bits(0x007FFFFF)), 0x0080);  // rounds up into the smallest normal
  EXPECT_EQ(bf16_to_f32(0x0001), bits(0x00010000));
}

TEST(F16, MatchesHardwareConversionOnManyValues) {
  // _Float16 conversion on x86 is IEEE round-to-nearest-even.
  StochasticRounder g(7);
  for (int i = 0; i < 200000; ++i) {
    const float x = bits(g.next_u32());
    if (std::isnan(x)) continue;
    const _Float16 h = static_cast<_Float16>(x);
    const uint16_t want = std::bit_cast<uint16_t>(h);
    ASSERT_EQ(f32_to_f16(x), want) << "x = " << x;
    ASSERT_EQ(std::bit_cast<uint32_t>(f16_to_f32(want)),
              std::bit_cast<uint32_t>(static_cast<float>(h)));
  }
}

TEST(F16, Limits) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // the tie above max overflows
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // tie 1.5 ulp -> 2
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);
}

TEST(F8e4m3, Limits) {
  EXPECT_EQ(f32_to_f8e4m3(240.0f), 0x77);
  EXPECT_EQ(f8e4m3_to_f32(0x77), 240.0f);
  EXPECT_EQ(f32_to_f8e4m3(247.0f), 0x77);
  EXPECT_EQ(f32_to_f8e4m3(248.0f), 0x78);  // tie above max -> inf
  EXPECT_TRUE(std::isinf(f8e4m3_to_f32(0x78)));
  EXPECT_EQ(f32_to_f8e4m3(-kInf), 0xF8);
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(f32_to_f8e4m3(NAN))));
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(f8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.0f, -10)), 0x00);  // tie -> 0
  EXPECT_EQ(f32_to_f8e4m3(1.0625f), 0x38);                // 1 + 1/16: tie between 1 and 1.125 -> 1
  EXPECT_EQ(f32_to_f8e4m3(1.1875f), 0x3A);                // tie between 1.125 and 1.25 -> 1.25
}

TEST(F8e5m2, Limits) {
  EXPECT_EQ(f32_to_f8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(f32_to_f8e5m2(61440.0f), 0x7C);  // tie above max -> inf
  EXPECT_EQ(f32_to_f8e5m2(61439.0f), 0x7B);
  EXPECT_EQ(f32_to_f8e5m2(std::ldexp(1.0f, -16)), 0x01);
  EXPECT_EQ(f8e5m2_to_f32(0x01), std::ldexp(1.0f, -16));
  EXPECT_TRUE(std::isnan(f8e5m2_to_f32(f32_to_f8e5m2(NAN))));
  EXPECT_EQ(f32_to_f8e5m2(kInf), 0x7C);
}

TEST(F8, RoundTripsEveryEncoding) {
  for (int i = 0; i < 256; ++i) {
    const float a = f8e4m3_to_f32(static_cast<uint8_t>(i));
    const float b = f8e5m2_to_f32(static_cast<uint8_t>(i));
    if (!std::isnan(a)) {
      EXPECT_EQ(f32_to_f8e4m3(a), i) << i;
    }
    if (!std::isnan(b)) {
      EXPECT_EQ(f32_to_f8e5m2(b), i) << i;
    }
  }
}

TEST(Stochastic, IsSeededAndUnbiased) {
  const float x = 1.0f + std::ldexp(1.0f, -9);  // a quarter of a bf16 ulp above 1
  StochasticRounder a(42), b(42);
  int up = 0;
  constexpr int kN = 20000;
  for (int i = 0; i < kN; ++i) {
    const uint32_t ra = a.next_u32();
    EXPECT_EQ(ra, b.next_u32());
    const uint16_t r = f32_to_bf16(x, Rounding::stochastic, ra);
    ASSERT_TRUE(r == 0x3F80 || r == 0x3F81);
    up += r == 0x3F81;
  }
  EXPECT_NEAR(static_cast<double>(up) / kN, 0.25, 0.02);
  // Representable values never move, and stochastic rounding never creates inf from a finite
  // value at the top of the range.
  EXPECT_EQ(f32_to_bf16(1.0f, Rounding::stochastic, 0xffffffffu), 0x3F80);
  EXPECT_EQ(f32_to_f8e4m3(239.0f, Rounding::stochastic, 0xffffffffu), 0x77);
}

TEST(Integers, RoundSaturateAndNan) {
  EXPECT_EQ(f32_to_int(2.5f, DType::i32), 2);
  EXPECT_EQ(f32_to_int(3.5f, DType::i32), 4);
  EXPECT_EQ(f32_to_int(-1.0f, DType::u8), 0);
  EXPECT_EQ(f32_to_int(300.0f, DType::u8), 255);
  EXPECT_EQ(f32_to_int(-200.0f, DType::i8), -128);
  EXPECT_EQ(f32_to_int(NAN, DType::i32), 0);
  std::byte buf[4];
  store_f32(buf, DType::i16, -7.0f);
  EXPECT_EQ(load_int(buf, DType::i16), -7);
  EXPECT_EQ(load_f32(buf, DType::i16), -7.0f);
}

// The strided bulk load reads every element exactly as load_f32 does, for every dtype; bf16
// signalling NaNs included (load_f32 widens through double, which quiets them).
TEST(LoadF32Strided, EqualsLoadF32ElementByElement) {
  constexpr size_t n = 37;
  constexpr int64_t stride = 24;  // bytes: larger than every element
  std::vector<std::byte> buf(n * stride);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (std::byte& b : buf) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  const uint16_t snan = 0x7f81;  // bf16 signalling NaN
  std::memcpy(buf.data() + 3 * stride, &snan, 2);
  for (DType t : {DType::f32, DType::tf32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2,
                  DType::i32, DType::i16, DType::i8, DType::u8, DType::boolean}) {
    std::vector<float> got(n);
    load_f32_strided(buf.data(), stride, t, got.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const float want = load_f32(buf.data() + i * stride, t);
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want))
          << dtype_name(t) << " element " << i;
    }
  }
}

// The run conversion to bf16 (vectorised where the CPU has AVX2) gives every element the bytes
// the one-element rounding does: ties to even, overflow to infinity, NaNs quieted with their
// sign and payload's top bits, for every run length around the vector width.
TEST(StoreF32N, Bf16RunEqualsRoundingEachElement) {
  std::vector<float> src;
  for (uint32_t bits :
       {0x00000000u, 0x80000000u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0xff7fffffu,
        0x7f800000u, 0xff800000u, 0x7f800001u, 0xff800001u, 0x7fc00000u, 0xffffffffu, 0x7fbfffffu,
        0x00000001u, 0x807fffffu, 0x4049ffffu})
    src.push_back(std::bit_cast<float>(bits));
  uint64_t x = 0x2545f4914f6cdd1dull;
  while (src.size() < 83) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    src.push_back(std::bit_cast<float>(static_cast<uint32_t>(x)));
  }
  for (size_t n = 0; n <= src.size(); ++n) {
    std::vector<std::byte> got(2 * n + 2, std::byte{0xcd});
    kernels::store_f32_n(got.data(), DType::bf16, src.data(), n);
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, got.data() + 2 * i, 2);
      EXPECT_EQ(h, kernels::f32_to_bf16_nearest(src[i]))
          << "run of " << n << ", element " << i << " bits " << std::bit_cast<uint32_t>(src[i]);
    }
    EXPECT_EQ(got[2 * n], std::byte{0xcd}) << "run of " << n << " wrote past its end";
  }
}

// Zeroed blocks (kernels/zeroed_bytes.h), small ones from the heap and large ones mapped with
// huge pages asked for: every byte zero, every byte writable, a distinct block each time, and a
// non-null block for no bytes.
TEST(ZeroedBytes, SmallAndLargeBlocksAreZeroAndWritable) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{4} << 20, (size_t{9} << 20) + 3}) {
    std::shared_ptr<std::byte> a = kernels::zeroed_bytes(n), b = kernels::zeroed_bytes(n);
    ASSERT_NE(a.get(), nullptr) << n;
    EXPECT_NE(a.get(), b.get()) << n;
    for (size_t i = 0; i < n; i += 4093) EXPECT_EQ(a.get()[i], std::byte{0}) << n << " at " << i;
    if (n == 0) continue;
    EXPECT_EQ(a.get()[n - 1], std::byte{0}) << n;
    std::memset(a.get(), 0x5a, n);
    EXPECT_EQ(a.get()[n - 1], std::byte{0x5a}) << n;
    EXPECT_EQ(b.get()[n - 1], std::byte{0}) << n;
  }
}

// An arena's blocks: zero, 64-byte aligned, disjoint, each keeping its chunk alive after the
// arena is gone; one of half a chunk or more is a block of its own.
TEST(ZeroedBytes, ArenaBlocksAreDisjointAlignedAndOutliveTheArena) {
  std::vector<std::pair<std::shared_ptr<std::byte>, size_t>> blocks;
  {
    kernels::ZeroedArena arena(size_t{1} << 20);
    for (size_t n : {size_t{1}, size_t{100}, size_t{300000}, size_t{0}, size_t{400000},
                     size_t{600000}, size_t{500000}, size_t{64}})
      blocks.emplace_back(arena.take(n), n);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& [p, n] = blocks[i];
    ASSERT_NE(p.get(), nullptr) << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % 64, 0u) << i;
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(p.get()[k], std::byte{0}) << i << " at " << k;
    std::memset(p.get(), static_cast<int>(i + 1), n);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& [p, n] = blocks[i];
    for (size_t k = 0; k < n; ++k)
      ASSERT_EQ(p.get()[k], static_cast<std::byte>(i + 1)) << "block " << i << " overwritten";
  }
}

}  // namespace
}  // namespace neuronc::device
