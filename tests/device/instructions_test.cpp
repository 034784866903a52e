// Each instruction against plain reference code on the functional model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "device/simulator.h"
#include "tests/device/device_test_util.h"

namespace neuronc::device {
namespace {

using ::testing::HasSubstr;
using namespace neuronc::device::device_test;

class Instructions : public ::testing::Test {
 protected:
  Instructions() : sim_(target(TargetKind::trn1)) { sim_.reset(1); }
  RunReport run(const Program& p) {
    auto r = sim_.run(p, hbm_);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return r.is_ok() ? r.value() : RunReport{};
  }
  Simulator sim_;
  std::vector<std::byte> hbm_ = std::vector<std::byte>(1 << 20);
};

// Reference: fp32 fused multiply-add in increasing K (TRAINIUM.md §7 assumption).
std::vector<float> ref_matmul(const std::vector<float>& s, const std::vector<float>& m, int K,
                              int M, int N) {
  std::vector<float> d(size_t(M) * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;
      for (int k = 0; k < K; ++k) acc = std::fma(s[k * M + i], m[k * N + j], acc);
      d[i * N + j] = acc;
    }
  return d;
}

TEST_F(Instructions, MatmulBf16MatchesReferenceAndAccumulates) {
  const int K = 128, M = 128, N = 512;
  const MemRef st = sbuf(0, K, 0, DType::bf16, M);
  const MemRef mv = sbuf(0, K, 4096, DType::bf16, N);
  const MemRef mv2 = sbuf(0, K, 8192, DType::bf16, N);
  const MemRef dst = psum(0, M, 0, DType::f32, N);
  auto s = random_values(K * M, DType::bf16, 1);
  auto m = random_values(K * N, DType::bf16, 2);
  auto m2 = random_values(K * N, DType::bf16, 3);
  write(sim_, 0, st, s);
  write(sim_, 0, mv, m);
  write(sim_, 0, mv2, m2);
  Program p = program();
  p.cores[0].stream(Engine::tensor).push_back(inst(MatMul{dst, st, mv, false}));
  p.cores[0].stream(Engine::tensor).push_back(inst(MatMul{dst, st, mv2, true}));
  run(p);
  const auto a = ref_matmul(s, m, K, M, N);
  const auto b = ref_matmul(s, m2, K, M, N);
  const auto got = read(sim_, 0, dst);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], a[i] + b[i]) << i;
}

TEST_F(Instructions, MatmulSmallEdgeShapes) {
  const int K = 7, M = 13, N = 37;
  const MemRef st = sbuf(0, K, 0, DType::f32, M);
  const MemRef mv = sbuf(0, K, 1024, DType::f32, N);
  const MemRef dst = psum(0, M, 2048, DType::f32, N);
  auto s = random_values(K * M, DType::f32, 4);
  auto m = random_values(K * N, DType::f32, 5);
  write(sim_, 0, st, s);
  write(sim_, 0, mv, m);
  run(single(Engine::tensor, MatMul{dst, st, mv, false}));
  EXPECT_EQ(read(sim_, 0, dst), ref_matmul(s, m, K, M, N));
}

// Dense operands take the GEMM's packing fast path; a strided one takes the gather/scatter
// path. Both must give the reference bits, accumulation included.
TEST_F(Instructions, MatmulStridedStationaryMatchesTheReference) {
  const int K = 96, M = 40, N = 72;
  MemRef st = sbuf(0, K, 0, DType::bf16, M);
  st.levels[0] = {2, uint32_t(M)};  // every other element of a 2M row
  const MemRef st_wide = sbuf(0, K, 0, DType::bf16, 2 * M);
  const MemRef mv = sbuf(0, K, 4096, DType::bf16, N);
  const MemRef mv2 = sbuf(0, K, 8192, DType::bf16, N);
  auto wide = random_values(2 * K * M, DType::bf16, 21);
  std::vector<float> s(size_t(K) * M);
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < M; ++i) s[k * M + i] = wide[size_t(k) * 2 * M + 2 * i];
  auto m = random_values(K * N, DType::bf16, 22);
  auto m2 = random_values(K * N, DType::bf16, 23);
  write(sim_, 0, st_wide, wide);
  write(sim_, 0, mv, m);
  write(sim_, 0, mv2, m2);
  const auto a = ref_matmul(s, m, K, M, N);
  const auto b = ref_matmul(s, m2, K, M, N);

  const MemRef dst = psum(0, M, 0, DType::f32, N);
  Program p = program();
  p.cores[0].stream(Engine::tensor).push_back(inst(MatMul{dst, st, mv, false}));
  p.cores[0].stream(Engine::tensor).push_back(inst(MatMul{dst, st, mv2, true}));
  run(p);
  auto got = read(sim_, 0, dst);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], a[i] + b[i]) << i;
}

TEST_F(Instructions, MatmulFp8AndFp16InputsWidenExactly) {
  for (DType dt : {DType::f8e4m3, DType::f8e5m2, DType::f16}) {
    const int K = 64, M = 32, N = 96;
    const MemRef st = sbuf(0, K, 0, dt, M);
    const MemRef mv = sbuf(0, K, 512, dt, N);
    const MemRef dst = psum(0, M, 0, DType::f32, N);
    auto s = random_values(K * M, dt, 11);
    auto m = random_values(K * N, dt, 12);
    write(sim_, 0, st, s);
    write(sim_, 0, mv, m);
    run(single(Engine::tensor, MatMul{dst, st, mv, false}));
    EXPECT_EQ(read(sim_, 0, dst), ref_matmul(s, m, K, M, N)) << dtype_name(dt);
  }
}

TEST_F(Instructions, PoisonMakesUninitialisedReadsNaN) {
  SimulatorOptions o;
  o.poison = true;
  Simulator sim(target(TargetKind::trn2), o);
  sim.reset(1);
  const MemRef src = sbuf(0, 1, 0, DType::f32, 4);
  const MemRef dst = sbuf(0, 1, 64, DType::f32, 4);
  ASSERT_TRUE(sim.run(single(Engine::vector, TensorScalar{dst, src}), hbm_).is_ok());
  for (float v : read(sim, 0, dst)) EXPECT_TRUE(std::isnan(v));
}

TEST_F(Instructions, MatmulAccumulateWithoutGroupIsAnError) {
  const MemRef st = sbuf(0, 4, 0, DType::bf16, 4);
  const MemRef dst = psum(0, 4, 0, DType::f32, 4);
  Program p = program();
  p.cores[0].stream(Engine::vector).push_back(inst(Memset{dst, 1.0}, {}, {{0, 1}}));
  p.cores[0].stream(Engine::tensor).push_back(inst(MatMul{dst, st, st, true}, {{0, 1}}));
  auto r = sim_.run(p, hbm_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("core 0 tensor[0] (matmul)"));
  EXPECT_THAT(r.status().message(), HasSubstr("psum partition 0 byte 0"));
  EXPECT_THAT(r.status().message(), HasSubstr("accumulate=false"));
}

TEST_F(Instructions, TensorTransposeSpreadsInfOnV2AndIsExactOnV3) {
  const MemRef src = sbuf(0, 4, 0, DType::f32, 3);
  const MemRef dst = psum(0, 3, 0, DType::f32, 4);
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  write(sim_, 0, src, v);
  run(single(Engine::tensor, Transpose{dst, src}));
  auto got = read(sim_, 0, dst);
  EXPECT_EQ(got, (std::vector<float>{1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12}));
  v[0] = INFINITY;  // src[0][0]
  write(sim_, 0, src, v);
  run(single(Engine::tensor, Transpose{dst, src}));
  got = read(sim_, 0, dst);
  EXPECT_TRUE(std::isinf(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));  // inf * 0 reaches the other outputs of that column
  Simulator v3(target(TargetKind::trn2));
  v3.reset(1);
  write(v3, 0, src, v);
  ASSERT_TRUE(v3.run(single(Engine::tensor, Transpose{dst, src}), hbm_).is_ok());
  got = read(v3, 0, dst);
  EXPECT_TRUE(std::isinf(got[0]));
  EXPECT_EQ(got[1], 4.0f);
}

TEST_F(Instructions, ActivationFunctionsWithScaleBiasAndAccumulate) {
  const MemRef src = sbuf(0, 2, 0, DType::f32, 5);
  const MemRef dst = sbuf(0, 2, 64, DType::f32, 5);
  const MemRef bias = sbuf(0, 2, 128, DType::f32, 1);
  const MemRef acc = sbuf(0, 2, 192, DType::f32, 1);
  const std::vector<float> x = {-2, -0.5f, 0, 0.5f, 2, -1, 0.25f, 1, 1.5f, 3};
  write(sim_, 0, src, x);
  write(sim_, 0, bias, {0.5f, -0.25f});
  struct Case {
    ActivationFunction f;
    float (*ref)(float);
  };
  const Case cases[] = {
      {ActivationFunction::relu, [](float v) { return v > 0 ? v : 0.0f; }},
      {ActivationFunction::exp, [](float v) { return std::exp(v); }},
      {ActivationFunction::tanh, [](float v) { return std::tanh(v); }},
      {ActivationFunction::sigmoid, [](float v) { return 1.0f / (1.0f + std::exp(-v)); }},
      {ActivationFunction::silu, [](float v) { return v / (1.0f + std::exp(-v)); }},
      {ActivationFunction::gelu_erf,
       [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); }},
      {ActivationFunction::square, [](float v) { return v * v; }},
      {ActivationFunction::abs, [](float v) { return std::fabs(v); }},
      {ActivationFunction::sign, [](float v) { return v > 0 ? 1.0f : (v < 0 ? -1.0f : 0.0f); }},
      {ActivationFunction::sin, [](float v) { return std::sin(v); }},
      {ActivationFunction::erf, [](float v) { return std::erf(v); }},
  };
  for (const Case& c : cases) {
    Activation a;
    a.dst = dst;
    a.src = src;
    a.function = c.f;
    a.scale = 2.0f;
    a.bias = bias;
    a.accumulate_dst = acc;
    run(single(Engine::scalar, a));
    const auto got = read(sim_, 0, dst);
    const auto sums = read(sim_, 0, acc);
    for (int p = 0; p < 2; ++p) {
      float sum = 0;
      for (int i = 0; i < 5; ++i) {
        const float want = c.ref(x[p * 5 + i] * 2.0f + (p ? -0.25f : 0.5f));
        EXPECT_FLOAT_EQ(got[p * 5 + i], want) << activation_name(c.f);
        sum += want;
      }
      EXPECT_FLOAT_EQ(sums[p], sum) << activation_name(c.f);
    }
  }
}

// The simulator's row loops are specialised per function and vectorised: every result, and the
// accumulated sum, must still be bit for bit the scalar definition (device/numerics.h's
// activate, in order), on rows of odd length and on NaN, infinities, signed zeros and
// subnormals. A NaN may be any NaN: which operand's NaN an addition keeps is up to the order the
// compiler gives the operands of a commutative add (IEEE 754 leaves it open), so no build can
// promise a NaN's sign and payload.
TEST_F(Instructions, ActivationRowsAreBitExactToTheScalarDefinition) {
  auto same = [](float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
  };
  constexpr int kParts = 128, kN = 999;
  const MemRef src = sbuf(0, kParts, 0, DType::f32, kN);
  const MemRef dst = sbuf(0, kParts, 4096, DType::f32, kN);
  const MemRef bias = sbuf(0, kParts, 8192, DType::f32, 1);
  const MemRef acc = sbuf(0, kParts, 8256, DType::f32, 1);
  std::vector<float> x(size_t{kParts} * kN), b(kParts);
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  const float specials[] = {std::nanf(""), INFINITY, -INFINITY, 0.0f,    -0.0f,
                            1e-40f,        -1e-40f,  88.0f,     -104.0f, 1e30f};
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t r = next();
    x[i] = r % 17 == 0 ? specials[r / 17 % 10] : (static_cast<float>(r % 20001) / 1000.0f - 10.0f);
  }
  for (float& v : b) v = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
  write(sim_, 0, src, x);
  write(sim_, 0, bias, b);
  using A = ActivationFunction;
  for (A f : {A::identity, A::relu, A::gelu_erf, A::gelu_tanh, A::silu, A::sigmoid, A::tanh, A::exp,
              A::log, A::sqrt, A::rsqrt, A::reciprocal, A::square, A::abs, A::sign, A::sin, A::cos,
              A::erf}) {
    for (bool with_acc : {false, true}) {
      Activation a;
      a.dst = dst;
      a.src = src;
      a.function = f;
      a.scale = 1.5f;
      a.bias = bias;
      if (with_acc) a.accumulate_dst = acc;
      run(single(Engine::scalar, a));
      const auto got = read(sim_, 0, dst);
      const auto sums = read(sim_, 0, acc);
      int mismatches = 0;
      for (int p = 0; p < kParts; ++p) {
        float sum = 0;
        for (int i = 0; i < kN; ++i) {
          const float want = activate(f, x[size_t(p) * kN + i] * 1.5f + b[p]);
          sum += want;
          mismatches += !same(want, got[size_t(p) * kN + i]);
        }
        if (with_acc) mismatches += !same(sum, sums[p]);
      }
      EXPECT_EQ(mismatches, 0) << activation_name(f) << (with_acc ? " with a sum" : "");
    }
  }
}

TEST_F(Instructions, TensorTensorOpsAndRoundingToBf16) {
  const MemRef a = sbuf(0, 1, 0, DType::f32, 4);
  const MemRef b = sbuf(0, 1, 64, DType::f32, 4);
  const MemRef d = sbuf(0, 1, 128, DType::bf16, 4);
  write(sim_, 0, a, {1.0f, -3.0f, 2.0f, 1.0f});
  write(sim_, 0, b, {std::ldexp(1.0f, -8), 2.0f, 2.0f, 3.0f});
  run(single(Engine::vector, TensorTensor{d, a, b, AluOp::add}));
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{1.0f, -1.0f, 4.0f, 4.0f}));  // 1+2^-8 ties to 1
  run(single(Engine::vector, TensorTensor{d, a, b, AluOp::max}));
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{1.0f, 2.0f, 2.0f, 3.0f}));
  run(single(Engine::vector, TensorTensor{d, a, b, AluOp::is_ge}));
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{1, 0, 1, 0}));
  run(single(Engine::gpsimd, TensorTensor{d, a, b, AluOp::pow}));
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{1.0f, 9.0f, 4.0f, 1.0f}));
}

// fp32 element-wise instructions compute straight from their source rows into their destination
// rows; a destination row that overlaps its source row only in part must still see the whole
// source row as it was (the instruction reads before it writes), and one that is the source row
// is updated in place.
TEST_F(Instructions, ElementwiseDestinationsOverlappingTheirSourcesSeeTheWholeSource) {
  const int P = 4, F = 64;
  for (const int shift : {0, 4, -4}) {  // destination offset from the source, in elements
    const MemRef src = sbuf(0, P, 1024, DType::f32, F);
    const MemRef dst = sbuf(0, P, 1024 + shift * 4, DType::f32, F);
    const MemRef other = sbuf(0, P, 4096, DType::f32, F);
    const auto x = random_values(P * F, DType::f32, 11);
    const auto y = random_values(P * F, DType::f32, 12);
    auto expect = [&](const char* what, auto f) {
      const auto got = read(sim_, 0, dst);
      for (int i = 0; i < P * F; ++i)
        ASSERT_EQ(got[i], f(x[i], y[i])) << what << " shift " << shift << " element " << i;
    };
    Activation a;
    a.dst = dst, a.src = src, a.scale = 2.0f, a.bias = 1.0f;
    write(sim_, 0, src, x);
    run(single(Engine::scalar, a));
    expect("activation", [](float v, float) { return v * 2.0f + 1.0f; });
    write(sim_, 0, src, x);
    write(sim_, 0, other, y);
    run(single(Engine::vector, TensorTensor{dst, src, other, AluOp::subtract}));
    expect("tensor_tensor", [](float v, float w) { return v - w; });
    TensorScalar t;
    t.dst = dst, t.src = src, t.operand0 = 3.0f, t.op0 = AluOp::multiply;
    write(sim_, 0, src, x);
    run(single(Engine::vector, t));
    expect("tensor_scalar", [](float v, float) { return v * 3.0f; });
  }
}

TEST_F(Instructions, BitwiseOnIntegersUsesRawBits) {
  const MemRef a = sbuf(0, 1, 0, DType::i32, 2);
  const MemRef b = sbuf(0, 1, 64, DType::i32, 2);
  const MemRef d = sbuf(0, 1, 128, DType::i32, 2);
  auto mem = sim_.sbuf(0, 0);
  const int32_t av[2] = {0x7fffffff, 0x12345678}, bv[2] = {0x0000ffff, 0x0f0f0f0f};
  std::memcpy(mem.data(), av, 8);
  std::memcpy(mem.data() + 64, bv, 8);
  run(single(Engine::vector, TensorTensor{d, a, b, AluOp::bitwise_and}));
  int32_t out[2];
  std::memcpy(out, mem.data() + 128, 8);
  EXPECT_EQ(out[0], 0x0000ffff);
  EXPECT_EQ(out[1], 0x12345678 & 0x0f0f0f0f);
}

TEST_F(Instructions, TensorTensorScanIsALinearRecurrence) {
  const MemRef a = sbuf(0, 2, 0, DType::f32, 4);
  const MemRef b = sbuf(0, 2, 64, DType::f32, 4);
  const MemRef d = sbuf(0, 2, 128, DType::f32, 4);
  write(sim_, 0, a, {0.5f, 0.5f, 2, 1, 1, 1, 1, 1});
  write(sim_, 0, b, {1, 1, 1, 1, 1, 2, 3, 4});
  run(single(Engine::vector, TensorTensorScan{d, a, b, 0.0f, AluOp::multiply, AluOp::add}));
  // p0: s = 0.5*0+1 = 1, 0.5*1+1 = 1.5, 2*1.5+1 = 4, 1*4+1 = 5; p1: prefix sums.
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{1, 1.5f, 4, 5, 1, 3, 6, 10}));
}

TEST_F(Instructions, TensorScalarTwoOpsWithReverseAndVectorOperand) {
  const MemRef s = sbuf(0, 2, 0, DType::f32, 3);
  const MemRef d = sbuf(0, 2, 64, DType::f32, 3);
  const MemRef v = sbuf(0, 2, 128, DType::f32, 1);
  write(sim_, 0, s, {1, 2, 4, 1, 2, 4});
  write(sim_, 0, v, {10, 20});
  TensorScalar ts;
  ts.dst = d;
  ts.src = s;
  ts.op0 = AluOp::divide;
  ts.operand0 = 8.0f;
  ts.reverse0 = true;  // 8 / x
  ts.op1 = AluOp::subtract;
  ts.operand1 = v;
  ts.reverse1 = true;  // v - t
  run(single(Engine::vector, ts));
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{2, 6, 8, 12, 16, 18}));
}

TEST_F(Instructions, TensorReduceOverInnerAxes) {
  MemRef s = sbuf(0, 2, 0, DType::f32, 6);
  s.num_levels = 2;
  s.levels[0] = {3, 2};  // [2, 3]
  s.levels[1] = {1, 3};
  const MemRef d = sbuf(0, 2, 64, DType::f32, 2);
  write(sim_, 0, sbuf(0, 2, 0, DType::f32, 6), {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  run(single(Engine::vector, TensorReduce{d, s, ReduceOp::sum, 1, false}));
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{6, 15, -6, -15}));
  run(single(Engine::vector, TensorReduce{d, s, ReduceOp::max, 1, true}));
  EXPECT_EQ(read(sim_, 0, d), (std::vector<float>{-3, -6, 1, 4}));
  const MemRef d1 = sbuf(0, 2, 128, DType::f32, 1);
  run(single(Engine::vector, TensorReduce{d1, s, ReduceOp::min, 2, false}));
  EXPECT_EQ(read(sim_, 0, d1), (std::vector<float>{1, -6}));
}

TEST_F(Instructions, TensorCopyCastsAndStridedAccessPatterns) {
  MemRef src = sbuf(0, 1, 0, DType::f32, 4);
  src.levels[0] = {2, 4};  // every other element
  const MemRef dst = sbuf(0, 1, 64, DType::f16, 4);
  write(sim_, 0, sbuf(0, 1, 0, DType::f32, 8), {1, 0, 65520.0f, 0, 0.1f, 0, -2, 0});
  run(single(Engine::vector, TensorCopy{dst, src}));
  const auto got = read(sim_, 0, dst);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_TRUE(std::isinf(got[1]));
  EXPECT_EQ(got[2], f16_to_f32(f32_to_f16(0.1f)));
  EXPECT_EQ(got[3], -2.0f);
}

TEST_F(Instructions, MemsetIotaAndAffineSelect) {
  const MemRef d = sbuf(0, 3, 0, DType::i32, 4);
  run(single(Engine::vector, Memset{d, -7}));
  EXPECT_EQ(read(sim_, 0, d), std::vector<float>(12, -7.0f));
  Iota io;
  io.dst = d;
  io.offset = 5;
  io.channel_multiplier = 100;
  io.pattern = {2, 0, 0, 0};
  run(single(Engine::gpsimd, io));
  EXPECT_EQ(read(sim_, 0, d),
            (std::vector<float>{5, 7, 9, 11, 105, 107, 109, 111, 205, 207, 209, 211}));
  // Causal mask: keep x[p][i] where p - i >= 0.
  const MemRef x = sbuf(0, 3, 64, DType::f32, 3);
  const MemRef y = sbuf(0, 3, 128, DType::f32, 3);
  write(sim_, 0, x, std::vector<float>(9, 1.0f));
  AffineSelect as;
  as.dst = y;
  as.src = x;
  as.channel_multiplier = 1;
  as.pattern = {-1, 0, 0, 0};
  as.compare = CompareOp::ge;
  as.on_false = -1e9f;
  run(single(Engine::gpsimd, as));
  EXPECT_EQ(read(sim_, 0, y), (std::vector<float>{1, -1e9f, -1e9f, 1, 1, -1e9f, 1, 1, 1}));
}

TEST_F(Instructions, CopyPredicatedAndSelect) {
  const MemRef src = sbuf(0, 1, 0, DType::f32, 4);
  const MemRef dst = sbuf(0, 1, 64, DType::f32, 4);
  const MemRef pred = sbuf(0, 1, 128, DType::u8, 4);
  write(sim_, 0, src, {1, 2, 3, 4});
  write(sim_, 0, dst, {9, 9, 9, 9});
  write(sim_, 0, pred, {1, 0, 0, 1});
  run(single(Engine::vector, CopyPredicated{dst, src, pred, false}));
  EXPECT_EQ(read(sim_, 0, dst), (std::vector<float>{1, 9, 9, 4}));
  run(single(Engine::vector, Select{dst, pred, src, -5.0f}));
  EXPECT_EQ(read(sim_, 0, dst), (std::vector<float>{1, -5, -5, 4}));
}

TEST_F(Instructions, LocalGatherWithinA16PartitionGroup) {
  const MemRef src = sbuf(0, 16, 0, DType::f32, 2);  // group holds 32 elements
  const MemRef idx = sbuf(0, 16, 64, DType::u16, 1);
  const MemRef dst = sbuf(0, 16, 128, DType::f32, 2);
  std::vector<float> s(32);
  for (int i = 0; i < 32; ++i) s[i] = static_cast<float>(i);
  write(sim_, 0, src, s);
  std::vector<float> ix(16);
  for (int i = 0; i < 16; ++i) ix[i] = static_cast<float>(15 - i);  // chunk j = 15 - j
  write(sim_, 0, idx, ix);
  run(single(Engine::gpsimd, LocalGather{dst, src, idx, 2, 16}));
  const auto got = read(sim_, 0, dst);
  EXPECT_EQ(got[0], 30.0f);
  EXPECT_EQ(got[1], 31.0f);
  EXPECT_EQ(got[31], 1.0f);
  ix[3] = 16;  // chunk 16 of a 16-chunk group
  write(sim_, 0, idx, ix);
  auto r = sim_.run(single(Engine::gpsimd, LocalGather{dst, src, idx, 2, 16}), hbm_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("local_gather index 16 (position 3"));
}

TEST_F(Instructions, DmaRoundTripWithCast) {
  std::vector<float> in(8 * 32);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) + 0.3f;
  std::memcpy(hbm_.data(), in.data(), in.size() * 4);
  const MemRef h_in = hbm(0, DType::f32, 8, 32, 32);
  const MemRef s = sbuf(0, 8, 0, DType::bf16, 32);
  const MemRef h_out = hbm(4096, DType::f32, 8, 32, 32);
  Program p = program();
  p.cores[0].stream(Engine::sync).push_back(inst(DmaCopy{s, h_in, 0}, {}, {{0, 16}}));
  p.cores[0].stream(Engine::sync).push_back(inst(DmaCopy{h_out, s, 1}, {{0, 16}}));
  run(p);
  std::vector<float> out(in.size());
  std::memcpy(out.data(), hbm_.data() + 4096, out.size() * 4);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], bf16_to_f32(f32_to_bf16(in[i])));
}

// Indirect DMA: partition p receives table row index[p] (converted to the destination dtype); an
// index outside the table stops the run naming the index and the partition.
DmaCopy gather(const MemRef& dst, const MemRef& idx, uint32_t rows) {
  DmaCopy d{dst, hbm(0, DType::f32, 1, 6, 0)};
  d.src.partition_stride = 8;  // table rows 8 elements apart, 6 used
  d.row_index = idx;
  d.table_rows = rows;
  return d;
}

TEST_F(Instructions, IndirectDmaGathersTableRows) {
  std::vector<float> table(10 * 8);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i) + 0.3f;
  std::memcpy(hbm_.data(), table.data(), table.size() * 4);
  const MemRef idx = sbuf(0, 4, 0, DType::i32, 1);
  const MemRef dst = sbuf(0, 4, 64, DType::bf16, 6);
  write(sim_, 0, idx, {7, 0, 9, 7});
  run(single(Engine::sync, gather(dst, idx, 10)));
  const std::vector<float> got = read(sim_, 0, dst);
  const int rows[4] = {7, 0, 9, 7};
  for (int p = 0; p < 4; ++p)
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(got[p * 6 + i], bf16_to_f32(f32_to_bf16(table[rows[p] * 8 + i]))) << p << " " << i;
  for (float bad : {10.0f, -1.0f}) {
    write(sim_, 0, idx, {1, 2, bad, 3});
    auto r = sim_.run(single(Engine::sync, gather(dst, idx, 10)), hbm_);
    ASSERT_FALSE(r.is_ok());
    EXPECT_THAT(r.status().message(),
                HasSubstr("dma_copy row index " + std::to_string(static_cast<int>(bad)) +
                          " at partition 2 is outside the table's 10 rows"));
  }
}

// Indirect scatter: partition p of the source is written to table row index[p] (converted to
// the table's dtype); the rows not named keep their bytes, a repeated row keeps the later
// partition's data, and a bad index stops the run before any row is written.
TEST_F(Instructions, IndirectDmaScattersIntoTableRows) {
  std::vector<float> table(10 * 8, -1.0f);
  std::memcpy(hbm_.data(), table.data(), table.size() * 4);
  const MemRef idx = sbuf(0, 4, 0, DType::i32, 1);
  const MemRef src = sbuf(0, 4, 64, DType::f32, 6);
  write(sim_, 0, idx, {7, 0, 9, 7});
  std::vector<float> rows(4 * 6);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i) + 0.3f;
  write(sim_, 0, src, rows);
  DmaCopy d{hbm(0, DType::bf16, 1, 6, 0), src};
  d.dst.partition_stride = 8;  // bf16 table rows 8 elements apart, 6 used
  d.row_index = idx;
  d.table_rows = 10;
  d.scatter = true;
  std::vector<uint16_t> before(10 * 8, 0x1234);
  std::memcpy(hbm_.data(), before.data(), before.size() * 2);
  run(single(Engine::sync, d));
  std::vector<uint16_t> got(10 * 8);
  std::memcpy(got.data(), hbm_.data(), got.size() * 2);
  for (int r = 0; r < 10; ++r) {
    const int p = r == 7 ? 3 : r == 0 ? 1 : r == 9 ? 2 : -1;
    for (int i = 0; i < 8; ++i) {
      if (p < 0 || i >= 6)
        EXPECT_EQ(got[r * 8 + i], 0x1234) << r << " " << i;
      else
        EXPECT_EQ(got[r * 8 + i], f32_to_bf16(rows[p * 6 + i])) << r << " " << i;
    }
  }
  std::memcpy(hbm_.data(), before.data(), before.size() * 2);
  write(sim_, 0, idx, {1, 2, 10, 3});
  auto r = sim_.run(single(Engine::sync, d), hbm_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("dma_copy row index 10 at partition 2 is outside the table's 10 rows"));
  std::memcpy(got.data(), hbm_.data(), got.size() * 2);
  EXPECT_EQ(got, before);  // nothing written
}

TEST_F(Instructions, AllReduceAndAllGatherAcrossTwoCores) {
  Simulator sim(target(TargetKind::trn2));
  std::vector<std::byte> mem(4096);
  const float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  std::memcpy(mem.data(), a, 16);
  std::memcpy(mem.data() + 16, b, 16);
  Program p = program(2, 4096);
  p.cores[0]
      .stream(Engine::sync)
      .push_back(inst(Collective{CollectiveKind::all_reduce, ReduceOp::sum,
                                 hbm(64, DType::f32, 1, 4, 4), hbm(0, DType::f32, 1, 4, 4)}));
  p.cores[1]
      .stream(Engine::sync)
      .push_back(inst(Collective{CollectiveKind::all_reduce, ReduceOp::sum,
                                 hbm(128, DType::f32, 1, 4, 4), hbm(16, DType::f32, 1, 4, 4)}));
  p.cores[0]
      .stream(Engine::sync)
      .push_back(inst(Collective{CollectiveKind::all_gather, ReduceOp::sum,
                                 hbm(256, DType::f32, 1, 8, 8), hbm(0, DType::f32, 1, 4, 4)}));
  p.cores[1]
      .stream(Engine::sync)
      .push_back(inst(Collective{CollectiveKind::all_gather, ReduceOp::sum,
                                 hbm(512, DType::f32, 1, 8, 8), hbm(16, DType::f32, 1, 4, 4)}));
  auto r = sim.run(p, mem);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  float out[4], g[8];
  std::memcpy(out, mem.data() + 128, 16);
  EXPECT_EQ(out[0], 11.0f);
  EXPECT_EQ(out[3], 44.0f);
  std::memcpy(g, mem.data() + 256, 32);
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[4], 10.0f);
  EXPECT_GT(r->total_time_ns, 2 * target(TargetKind::trn2).collective_hop_latency_ns);
}

}  // namespace
}  // namespace neuronc::device
