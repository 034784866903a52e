// The device GEMM against the fp32-FMA-in-increasing-K reference, bit for bit, on both of its
// paths: the fp32 kernels and (on hosts with AVX512-BF16) the bf16-pair kernel that is only
// taken for tiles whose exponent range makes it exact.
#include "device/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "device/numerics.h"

namespace neuronc::device {
namespace {

struct Bf16Matrix {
  int rows = 0, cols = 0;
  std::vector<uint16_t> bits;
  float at(int r, int c) const { return bf16_to_f32(bits[size_t(r) * cols + c]); }
  GemmOperand operand() const {
    return {reinterpret_cast<const std::byte*>(bits.data()), size_t(cols) * 2, DType::bf16};
  }
};

// Values m * 2^e with random sign, 8-bit mantissa and e uniform in [emin, emax]; `zeros` in
// 1/8ths of the entries are ±0.
Bf16Matrix random_bf16(int rows, int cols, int emin, int emax, uint64_t seed, int zeros = 1) {
  StochasticRounder g(seed);
  Bf16Matrix m{rows, cols, std::vector<uint16_t>(size_t(rows) * cols)};
  for (auto& b : m.bits) {
    const uint32_t r = g.next_u32();
    const uint16_t sign = (r & 1) ? 0x8000 : 0;
    if (int((r >> 1) & 7) < zeros) {
      b = sign;
      continue;
    }
    const int e = emin + int((r >> 4) % uint32_t(emax - emin + 1));
    const uint16_t mant = (r >> 16) & 0x7f;
    b = sign | uint16_t((e + 127) << 7) | mant;
  }
  return m;
}

std::vector<float> reference(const Bf16Matrix& a, const Bf16Matrix& b, const float* c0) {
  const int K = a.rows, M = a.cols, N = b.cols;
  std::vector<float> c(size_t(M) * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc = std::fma(a.at(k, i), b.at(k, j), acc);
      c[size_t(i) * N + j] = c0 ? c0[size_t(i) * N + j] + acc : acc;
    }
  return c;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Runs gemm_at_b (plain and accumulating onto `init`) and compares every bit with the reference.
void expect_exact(const Bf16Matrix& a, const Bf16Matrix& b, const char* what) {
  const int K = a.rows, M = a.cols, N = b.cols;
  std::vector<float> got(size_t(M) * N, 12345.0f);
  gemm_at_b(M, N, K, a.operand(), b.operand(), got.data(), N, false);
  const auto want = reference(a, b, nullptr);
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    ASSERT_TRUE(both_nan || bits_of(got[i]) == bits_of(want[i]))
        << what << " K=" << K << " M=" << M << " N=" << N << " element " << i << ": got " << got[i]
        << " want " << want[i];
  }
  std::vector<float> init(got.size());
  for (size_t i = 0; i < init.size(); ++i) init[i] = float(int(i % 7) - 3) * 0.375f;
  std::vector<float> acc = init;
  gemm_at_b(M, N, K, a.operand(), b.operand(), acc.data(), N, true);
  const auto want_acc = reference(a, b, init.data());
  for (size_t i = 0; i < acc.size(); ++i) {
    const bool both_nan = std::isnan(acc[i]) && std::isnan(want_acc[i]);
    ASSERT_TRUE(both_nan || bits_of(acc[i]) == bits_of(want_acc[i]))
        << what << " (accumulate) element " << i;
  }
}

bool host_has_bf16_dot() {
  return std::string(gemm_kernel_name()).find("+bf16") != std::string::npos;
}

TEST(Gemm, Bf16InRangeTakesTheDotProductPathAndMatchesFmaBitForBit) {
  int cases = 0;
  for (int K : {1, 2, 3, 7, 64, 127, 128, 129, 256})
    for (int M : {1, 8, 9, 128})
      for (int N : {1, 31, 32, 33, 96, 512}) {
        const auto a = random_bf16(K, M, -20, 20, 1000 + K * 7 + M);
        const auto b = random_bf16(K, N, -20, 20, 2000 + K * 11 + N);
        if (host_has_bf16_dot()) {
          ASSERT_EQ(gemm_path(M, N, K, a.operand(), b.operand()),
                    M <= 4 || N <= 4 ? GemmPath::thin : GemmPath::bf16_dot);
        }
        expect_exact(a, b, "random");
        ++cases;
      }
  EXPECT_EQ(cases, 9 * 4 * 6);
}

// Sums that cancel to ±0 and tiny survivors: signed zeros and exact cancellation must come out
// as the FMA chain gives them.
TEST(Gemm, Bf16CancellationAndSignedZeros) {
  const int K = 65, M = 16, N = 64;
  Bf16Matrix a{K, M, std::vector<uint16_t>(size_t(K) * M)};
  Bf16Matrix b{K, N, std::vector<uint16_t>(size_t(K) * N)};
  for (int k = 0; k < K; ++k) {
    for (int i = 0; i < M; ++i)
      a.bits[k * M + i] = (i % 4 == 0) ? 0x8000 : ((k + i) % 2 ? 0x3f80 : 0xbf80);  // -0, ±1
    for (int j = 0; j < N; ++j) b.bits[k * N + j] = (j % 3 == 0) ? 0x0000 : 0x4000 | (j & 0x7f);
  }
  if (host_has_bf16_dot()) {
    ASSERT_EQ(gemm_path(M, N, K, a.operand(), b.operand()), GemmPath::bf16_dot);
  }
  expect_exact(a, b, "cancellation");
}

// At the edge of the admitted range: products exactly at the smallest normal quantum, and sums
// of the largest admitted magnitude.
TEST(Gemm, Bf16AtTheEdgeOfTheExactRange) {
  const int K = 128, M = 8, N = 32;
  const auto a = random_bf16(K, M, -56, -50, 7, 0);
  const auto b = random_bf16(K, N, -56, -50, 8, 0);  // emin sum: 71 + 71 = 142 biased
  if (host_has_bf16_dot()) {
    EXPECT_EQ(gemm_path(M, N, K, a.operand(), b.operand()), GemmPath::bf16_dot);
  }
  expect_exact(a, b, "small edge");
  const auto c = random_bf16(K, M, 55, 58, 9, 0);
  const auto d = random_bf16(K, N, 55, 58, 10, 0);
  if (host_has_bf16_dot()) {
    EXPECT_EQ(gemm_path(M, N, K, c.operand(), d.operand()), GemmPath::bf16_dot);
  }
  expect_exact(c, d, "large edge");
}

// Tiles with subnormals, products that underflow or overflow, infinities or NaN are refused by
// the range check and computed by the fp32 path, with the reference's bits.
TEST(Gemm, Bf16OutOfRangeTilesFallBackAndStayExact) {
  const int K = 40, M = 9, N = 33;
  struct Case {
    const char* what;
    int emin, emax;
    uint16_t poke;  // written into a[3][2]
  };
  const Case cases[] = {
      {"subnormal input", -20, 20, 0x0005},
      {"products underflow", -70, -60, 0},
      {"products overflow", 60, 100, 0},
      {"infinity", -5, 5, 0x7f80},
      {"nan", -5, 5, 0x7fc1},
  };
  for (const Case& c : cases) {
    auto a = random_bf16(K, M, c.emin, c.emax, 31, 0);
    const auto b = random_bf16(K, N, c.emin, c.emax, 32, 0);
    if (c.poke) a.bits[3 * M + 2] = c.poke;
    EXPECT_EQ(gemm_path(M, N, K, a.operand(), b.operand()), GemmPath::fp32) << c.what;
    expect_exact(a, b, c.what);
  }
}

// A decode step's shapes: one side 1 to 4 wide, read in place. Out-of-range values (NaN,
// infinities, subnormals, overflow) that keep a tile off the bf16 dot product do not matter
// there, fp32 elements on the wide side are widened in place too, and rows may lie further
// apart than they are long (an SBUF partition's pitch).
TEST(Gemm, ThinProblemsAreTheFmaChainForAnyValues) {
  struct Range {
    const char* what;
    int emin, emax;
    uint16_t poke;
  };
  const Range ranges[] = {{"in range", -20, 20, 0},    {"subnormal", -20, 20, 0x0005},
                          {"overflow", 60, 100, 0},    {"underflow", -70, -60, 0},
                          {"infinity", -5, 5, 0xff80}, {"nan", -5, 5, 0x7fc1}};
  int thin = 0;
  for (const Range& r : ranges)
    for (int K : {1, 2, 129})
      for (int narrow : {1, 2, 3, 4})
        for (int wide : {1, 15, 16, 17, 64, 65, 127, 128, 129, 512}) {
          for (bool narrow_is_a : {true, false}) {
            const int M = narrow_is_a ? narrow : wide, N = narrow_is_a ? wide : narrow;
            auto a = random_bf16(K, M, r.emin, r.emax, 300 + K + M, 1);
            const auto b = random_bf16(K, N, r.emin, r.emax, 400 + K + N, 1);
            if (r.poke) a.bits[size_t(K / 2) * M + M / 2] = r.poke;
            if (gemm_path(M, N, K, a.operand(), b.operand()) == GemmPath::thin) ++thin;
            expect_exact(a, b, r.what);
            // The wide side as fp32 rows, 3 elements longer than the row they hold.
            const Bf16Matrix& w = narrow_is_a ? b : a;
            const int cols = w.cols, pitch = cols + 3;
            std::vector<float> wf(size_t(K) * pitch, -7.0f);
            for (int k = 0; k < K; ++k)
              for (int c = 0; c < cols; ++c) wf[size_t(k) * pitch + c] = w.at(k, c);
            const GemmOperand wop{reinterpret_cast<const std::byte*>(wf.data()), size_t(pitch) * 4,
                                  DType::f32};
            std::vector<float> got(size_t(M) * N);
            gemm_at_b(M, N, K, narrow_is_a ? a.operand() : wop, narrow_is_a ? wop : b.operand(),
                      got.data(), N, false);
            const auto want = reference(a, b, nullptr);
            for (size_t i = 0; i < got.size(); ++i)
              ASSERT_TRUE((std::isnan(got[i]) && std::isnan(want[i])) ||
                          bits_of(got[i]) == bits_of(want[i]))
                  << r.what << " fp32 wide side K=" << K << " M=" << M << " N=" << N << " element "
                  << i;
          }
        }
  if (host_has_bf16_dot()) {
    EXPECT_EQ(thin, 6 * 3 * 4 * 10 * 2);
  }
}

TEST(Gemm, Fp32PathMatchesFmaReference) {
  for (int K : {1, 5, 128})
    for (int M : {3, 8, 128})
      for (int N : {7, 32, 100}) {
        const auto a = random_bf16(K, M, -10, 10, 50 + K, 1);
        const auto b = random_bf16(K, N, -10, 10, 60 + N, 1);
        std::vector<float> af(size_t(K) * M), bf(size_t(K) * N), c(size_t(M) * N);
        for (size_t i = 0; i < af.size(); ++i) af[i] = bf16_to_f32(a.bits[i]);
        for (size_t i = 0; i < bf.size(); ++i) bf[i] = bf16_to_f32(b.bits[i]);
        gemm_at_b_f32(M, N, K, af.data(), M, bf.data(), N, c.data(), N);
        const auto want = reference(a, b, nullptr);
        for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(bits_of(c[i]), bits_of(want[i])) << i;
      }
}

// Full-precision fp32 operands (products not exact, so an FMA and a multiply-then-add differ):
// every block, the edges included, is the fma chain in increasing K, bit for bit.
TEST(Gemm, Fp32EdgesAreTheFmaChain) {
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<int64_t>(state >> 33) % 20001 - 10000) / 997.0f;
  };
  for (int K : {1, 3, 77})
    for (int M : {1, 5, 8, 9, 13})
      for (int N : {1, 15, 17, 31, 33, 50}) {
        std::vector<float> a(size_t(K) * M), b(size_t(K) * N), c(size_t(M) * N);
        for (float& x : a) x = next();
        for (float& x : b) x = next();
        gemm_at_b_f32(M, N, K, a.data(), M, b.data(), N, c.data(), N);
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
              acc = std::fma(a[size_t(k) * M + m], b[size_t(k) * N + n], acc);
            ASSERT_EQ(bits_of(c[size_t(m) * N + n]), bits_of(acc))
                << "K=" << K << " M=" << M << " N=" << N << " at " << m << "," << n;
          }
      }
}

}  // namespace
}  // namespace neuronc::device
