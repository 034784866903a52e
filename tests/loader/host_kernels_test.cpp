// Host-fallback kernels, one op at a time through Model + Session, against reference values
// worked out by hand or by an independent naive computation in the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "tests/loader/host_op_harness.h"

namespace neuronc::testing {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using T = art::TensorDType;
using A = art::Arg;

std::vector<double> run1(const std::string& op, const std::vector<In>& ins,
                         const std::vector<art::Arg>& attrs, const Out& out) {
  auto r = run_host_op(op, ins, attrs, {out});
  EXPECT_TRUE(r.is_ok()) << op << ": " << r.status().message();
  return r.is_ok() ? (*r)[0] : std::vector<double>();
}

MATCHER_P(Near, expected, "") {
  if (arg.size() != expected.size()) return false;
  for (size_t i = 0; i < arg.size(); ++i)
    if (!(std::fabs(arg[i] - expected[i]) <= 1e-5 * (1 + std::fabs(expected[i])))) return false;
  return true;
}

// ---- Required ops -----------------------------------------------------------------------------

TEST(HostKernels, CumsumFloatAndIntegerPromotion) {
  EXPECT_THAT(run1("aten.cumsum.default", {{"self", T::f32, {2, 3}, {1, 2, 3, 4, 5, 6}}},
                   {A::integer("dim", 1)}, {T::f32, {2, 3}}),
              ElementsAre(1, 3, 6, 4, 9, 15));
  EXPECT_THAT(run1("aten.cumsum.default", {{"self", T::i32, {3, 1}, {7, -2, 5}}},
                   {A::integer("dim", 0), A::scalar_type("dtype", T::i64)}, {T::i64, {3, 1}}),
              ElementsAre(7, 5, 10));
}

TEST(HostKernels, Diff) {
  EXPECT_THAT(run1("aten.diff.default", {{"self", T::f32, {4}, {1, 4, 9, 16}}}, {}, {T::f32, {3}}),
              ElementsAre(3, 5, 7));
  EXPECT_THAT(run1("aten.diff.default", {{"self", T::f32, {4}, {1, 4, 9, 16}}},
                   {A::integer("n", 2)}, {T::f32, {2}}),
              ElementsAre(2, 2));
  EXPECT_THAT(run1("aten.diff.default",
                   {{"self", T::i64, {2, 2}, {1, 5, 2, 9}}, {"prepend", T::i64, {1, 2}, {0, 0}}},
                   {A::integer("dim", 0)}, {T::i64, {2, 2}}),
              ElementsAre(1, 5, 1, 4));
  EXPECT_THAT(
      run1("aten.diff.default", {{"self", T::boolean, {3}, {1, 1, 0}}}, {}, {T::boolean, {2}}),
      ElementsAre(0, 1));
}

// Naive DFT reference.
std::vector<double> rdft(const std::vector<double>& x, size_t bins, double scale) {
  std::vector<double> out;
  const size_t n = x.size();
  for (size_t k = 0; k < bins; ++k) {
    std::complex<double> s = 0;
    for (size_t t = 0; t < n; ++t)
      s += x[t] * std::polar(1.0, -2 * M_PI * double(k * t) / double(n));
    out.push_back(s.real() * scale);
    out.push_back(s.imag() * scale);
  }
  return out;
}

TEST(HostKernels, FftRfftMatchesNaiveDft) {
  EXPECT_THAT(
      run1("aten.fft_rfft.default", {{"self", T::f32, {4}, {1, 2, 3, 4}}}, {}, {T::c64, {3}}),
      Near(std::vector<double>{10, 0, -2, 2, -2, 0}));
  const std::vector<double> x = {0.5, -1, 2, 3.25, -0.75, 1.5};  // length 6: not a power of two
  EXPECT_THAT(run1("aten.fft_rfft.default", {{"self", T::f32, {1, 6}, x}},
                   {A::integer("dim", -1), A::str("norm", "ortho")}, {T::c64, {1, 4}}),
              Near(rdft(x, 4, 1 / std::sqrt(6.0))));
  // n pads with zeros.
  EXPECT_THAT(run1("aten.fft_rfft.default", {{"self", T::f32, {2}, {1, 1}}}, {A::integer("n", 4)},
                   {T::c64, {3}}),
              Near(rdft({1, 1, 0, 0}, 3, 1)));
  // Core IR form.
  EXPECT_THAT(
      run1("aten._fft_r2c.default", {{"self", T::f32, {2, 4}, {1, 2, 3, 4, 0, 1, 0, -1}}},
           {A::integers("dim", {1}), A::integer("normalization", 2), A::boolean("onesided", true)},
           {T::c64, {2, 3}}),
      Near([] {
        auto a = rdft({1, 2, 3, 4}, 3, 0.25), b = rdft({0, 1, 0, -1}, 3, 0.25);
        a.insert(a.end(), b.begin(), b.end());
        return a;
      }()));
}

TEST(HostKernels, AbsOfComplexIsMagnitude) {
  auto bytes =
      host_op_artifact("aten.fft_rfft.default", {{"self", T::f32, {4}, {}}}, {}, {{T::c64, {3}}});
  ASSERT_TRUE(bytes.is_ok());
  // Chain rfft -> abs by building the artifact by hand.
  art::ArtifactWriter w;
  const uint32_t x = w.add_input("x", T::f32, {art::Dim::constant(4)});
  const uint32_t z = w.add_value("z", T::c64, {art::Dim::constant(3)});
  const uint32_t m = w.add_value("m", T::f32, {art::Dim::constant(3)});
  w.add_host_op({"aten.fft_rfft.default", {A::tensor("self", int32_t(x))}, {z}});
  w.add_host_op({"aten.abs.default", {A::tensor("self", int32_t(z))}, {m}});
  w.add_output("m", m);
  auto b = w.write_memory();
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  auto model = Model::load_from_memory(*b);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Session s(*model);
  const float in[4] = {1, 2, 3, 4};
  auto out = s.run({{"x", TensorView(in, DType::f32, {4})}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_THAT(read(out->at("m")), Near(std::vector<double>{10, std::sqrt(8.0), 2}));
}

// FNet's mixing: fftn over both dims of a real [2, 3] input, then its real part; and the core IR
// form, _fft_c2c forward then inverse with 1/n (the input again) seen through view_as_real.
TEST(HostKernels, FftnC2cRealAndViewAsReal) {
  const std::vector<double> x = {1, 2, 0, -1, 0.5, 3};
  // 2-D DFT by definition.
  std::vector<double> want_re, want_ri;
  for (int k0 = 0; k0 < 2; ++k0)
    for (int k1 = 0; k1 < 3; ++k1) {
      std::complex<double> s = 0;
      for (int t0 = 0; t0 < 2; ++t0)
        for (int t1 = 0; t1 < 3; ++t1)
          s += x[t0 * 3 + t1] * std::polar(1.0, -2 * M_PI * (k0 * t0 / 2.0 + k1 * t1 / 3.0));
      want_re.push_back(s.real());
      want_ri.push_back(s.real());
      want_ri.push_back(s.imag());
    }
  art::ArtifactWriter w;
  const uint32_t in = w.add_input("x", T::f32, {art::Dim::constant(2), art::Dim::constant(3)});
  auto value = [&](const char* name, T dt, std::vector<int64_t> shape) {
    std::vector<art::Dim> dims;
    for (int64_t d : shape) dims.push_back(art::Dim::constant(d));
    return w.add_value(name, dt, dims);
  };
  const uint32_t f = value("f", T::c64, {2, 3}), re = value("re", T::f32, {2, 3});
  const uint32_t fr = value("fr", T::f32, {2, 3, 2});
  const uint32_t c = value("c", T::c64, {2, 3}), back = value("back", T::c64, {2, 3});
  const uint32_t br = value("br", T::f32, {2, 3, 2});
  const uint32_t xc = value("xc", T::c64, {2, 3}), xcr = value("xcr", T::f32, {2, 3, 2});
  const uint32_t xr = value("xr", T::f32, {2, 3});
  // Real -> complex (imaginary 0) -> real (the real part), as PyTorch casts.
  w.add_host_op({"aten._to_copy.default",
                 {A::tensor("self", int32_t(in)), A::scalar_type("dtype", T::c64)},
                 {xc}});
  w.add_host_op({"aten.view_as_real.default", {A::tensor("self", int32_t(xc))}, {xcr}});
  w.add_host_op(
      {"aten.fft_fftn.default", {A::tensor("self", int32_t(in)), A::integers("dim", {0, 1})}, {f}});
  w.add_host_op({"aten.real.default", {A::tensor("self", int32_t(f))}, {re}});
  w.add_host_op({"aten._to_copy.default",
                 {A::tensor("self", int32_t(f)), A::scalar_type("dtype", T::f32)},
                 {xr}});
  w.add_host_op({"aten.view_as_real.default", {A::tensor("self", int32_t(f))}, {fr}});
  w.add_host_op({"aten._fft_c2c.default",
                 {A::tensor("self", int32_t(f)), A::integers("dim", {0, 1}),
                  A::integer("normalization", 2), A::boolean("forward", false)},
                 {back}});
  w.add_host_op({"aten._fft_c2c.default",
                 {A::tensor("self", int32_t(back)), A::integers("dim", {1}),
                  A::integer("normalization", 0), A::boolean("forward", true)},
                 {c}});
  w.add_host_op({"aten.view_as_real.default", {A::tensor("self", int32_t(back))}, {br}});
  w.add_output("re", re);
  w.add_output("fr", fr);
  w.add_output("br", br);
  w.add_output("c", c);
  w.add_output("xcr", xcr);
  w.add_output("xr", xr);
  auto b = w.write_memory();
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  auto model = Model::load_from_memory(*b);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Session s(*model);
  const float xs[6] = {1, 2, 0, -1, 0.5, 3};
  auto out = s.run({{"x", TensorView(xs, DType::f32, {2, 3})}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_THAT(read(out->at("re")), Near(want_re));
  EXPECT_THAT(read(out->at("fr")), Near(want_ri));
  std::vector<double> x_as_complex;
  for (double v : x) x_as_complex.insert(x_as_complex.end(), {v, 0.0});
  EXPECT_THAT(read(out->at("br")), Near(x_as_complex));  // the inverse undoes the transform
  EXPECT_THAT(read(out->at("xcr")), Near(x_as_complex));
  EXPECT_THAT(read(out->at("xr")), Near(want_re));
  // A 1-D transform along dim 1 of the recovered input equals rfft's bins, then their mirror.
  const auto c_out = read(out->at("c"));
  EXPECT_NEAR(c_out[0], 3, 1e-5);    // 1 + 2 + 0
  EXPECT_NEAR(c_out[6], 2.5, 1e-5);  // -1 + 0.5 + 3
}

// im2col (unfold): each window as a column; ConvBERT's [k, 1] span with zero padding.
TEST(HostKernels, Im2col) {
  EXPECT_THAT(
      run1("aten.im2col.default", {{"self", T::f32, {1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}}},
           {A::integers("kernel_size", {2, 2}), A::integers("dilation", {1, 1}),
            A::integers("padding", {0, 0}), A::integers("stride", {1, 1})},
           {T::f32, {1, 4, 4}}),
      ElementsAre(0, 1, 3, 4, 1, 2, 4, 5, 3, 4, 6, 7, 4, 5, 7, 8));
  EXPECT_THAT(run1("aten.im2col.default", {{"self", T::f32, {1, 1, 3, 1}, {1, 2, 3}}},
                   {A::integers("kernel_size", {3, 1}), A::integers("dilation", {1, 1}),
                    A::integers("padding", {1, 0}), A::integers("stride", {1, 1})},
                   {T::f32, {1, 3, 3}}),
              ElementsAre(0, 1, 2, 1, 2, 3, 2, 3, 0));
  auto bad = run_host_op("aten.im2col.default", {{"self", T::f32, {1, 1, 2, 2}, {1, 2, 3, 4}}},
                         {A::integers("kernel_size", {3, 3}), A::integers("dilation", {1, 1}),
                          A::integers("padding", {0, 0}), A::integers("stride", {1, 1})},
                         {{T::f32, {1, 9, 1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("window does not fit the padded 2 x 2 input"));
}

// The host convolution (what the NeuronCore kernel refuses): padding, stride and bias; groups
// and dilation in 1-D; "same" padding with an even kernel (the extra element on the far side);
// a 3-D video convolution.
TEST(HostKernels, Convolution) {
  const std::vector<double> x9 = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_THAT(
      run1("aten.conv2d.default",
           {{"input", T::f32, {1, 1, 3, 3}, x9}, {"weight", T::f32, {1, 1, 2, 2}, {1, 1, 1, 1}}},
           {}, {T::f32, {1, 1, 2, 2}}),
      ElementsAre(8, 12, 20, 24));
  EXPECT_THAT(run1("aten.convolution.default",
                   {{"input", T::f32, {1, 1, 3, 3}, x9},
                    {"weight", T::f32, {1, 1, 3, 3}, std::vector<double>(9, 1)},
                    {"bias", T::f32, {1}, {0.5}}},
                   {A::integers("stride", {2, 2}), A::integers("padding", {1, 1}),
                    A::integers("dilation", {1, 1}), A::boolean("transposed", false),
                    A::integers("output_padding", {0, 0}), A::integer("groups", 1)},
                   {T::f32, {1, 1, 2, 2}}),
              ElementsAre(8.5, 12.5, 20.5, 24.5));
  EXPECT_THAT(run1("aten.conv1d.default",
                   {{"input", T::f32, {1, 2, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50}},
                    {"weight", T::f32, {2, 1, 2}, {1, -1, 2, 0}}},
                   {A::integers("dilation", {2}), A::integer("groups", 2)}, {T::f32, {1, 2, 3}}),
              ElementsAre(-2, -2, -2, 20, 40, 60));
  EXPECT_THAT(
      run1("aten.conv1d.padding",
           {{"input", T::f32, {1, 1, 4}, {1, 2, 3, 4}}, {"weight", T::f32, {1, 1, 2}, {1, 1}}},
           {A::str("padding", "same")}, {T::f32, {1, 1, 4}}),
      ElementsAre(3, 5, 7, 4));
  EXPECT_THAT(run1("aten.conv3d.default",
                   {{"input", T::f32, {1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}},
                    {"weight", T::f32, {1, 1, 2, 2, 2}, std::vector<double>(8, 1)}},
                   {}, {T::f32, {1, 1, 1, 1, 1}}),
              ElementsAre(36));
  auto bad = run_host_op("aten.conv2d.default",
                         {{"input", T::f32, {1, 3, 4, 4}, std::vector<double>(48, 1)},
                          {"weight", T::f32, {2, 2, 3, 3}, std::vector<double>(36, 1)}},
                         {}, {{T::f32, {1, 2, 2, 2}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("with groups 1 does not fit input [1, 3, 4, 4]"));
}

TEST(HostKernels, IndexPut) {
  // x[[0, 2]] = [1, 2, 3, 4] (values broadcast over the indexed rows).
  EXPECT_THAT(run1("aten.index_put.default",
                   {{"self", T::f32, {3, 4}, std::vector<double>(12, 0)},
                    {"indices", T::i64, {2}, {0, 2}, true},
                    {"values", T::f32, {4}, {1, 2, 3, 4}}},
                   {}, {T::f32, {3, 4}}),
              ElementsAre(1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 3, 4));
  // accumulate with a repeated, negative index.
  EXPECT_THAT(run1("aten.index_put.default",
                   {{"self", T::f32, {3}, {1, 1, 1}},
                    {"indices", T::i64, {3}, {1, -2, 0}, true},
                    {"values", T::f32, {3}, {5, 5, 7}}},
                   {A::boolean("accumulate", true)}, {T::f32, {3}}),
              ElementsAre(8, 11, 1));
  // x[:, [1, 3]] = [[9, 8]] with a None first index.
  EXPECT_THAT(run1("aten.index_put.default",
                   {{"self", T::i64, {2, 4}, std::vector<double>(8, 0)},
                    {"indices", T::i64, {}, {}, true, true},
                    {"indices", T::i64, {2}, {1, 3}, true},
                    {"values", T::i64, {1, 2}, {9, 8}}},
                   {}, {T::i64, {2, 4}}),
              ElementsAre(0, 9, 0, 8, 0, 9, 0, 8));
  // Bool mask.
  EXPECT_THAT(run1("aten.index_put.default",
                   {{"self", T::f32, {4}, {1, 2, 3, 4}},
                    {"indices", T::boolean, {4}, {1, 0, 1, 0}, true},
                    {"values", T::f32, {}, {0}}},
                   {}, {T::f32, {4}}),
              ElementsAre(0, 2, 0, 4));
  auto bad = run_host_op("aten.index_put.default",
                         {{"self", T::f32, {3}, {0, 0, 0}},
                          {"indices", T::i64, {1}, {3}, true},
                          {"values", T::f32, {1}, {1}}},
                         {}, {{T::f32, {3}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("index 3 is out of bounds for dim 0 of size 3"));
}

// x[rows, cols] with index tensors that broadcast, and a gather along the last dim, with
// indices known only at run time; an index outside the dim is an error, never a wrong read.
TEST(HostKernels, IndexAndGather) {
  EXPECT_THAT(run1("aten.index.Tensor",
                   {{"self", T::f32, {2, 3}, {10, 11, 12, 20, 21, 22}},
                    {"indices", T::i64, {2, 1}, {1, 0}, true},
                    {"indices", T::i64, {2}, {2, -3}, true}},
                   {}, {T::f32, {2, 2}}),
              ElementsAre(22, 20, 12, 10));
  EXPECT_THAT(run1("aten.index.Tensor",
                   {{"self", T::i64, {2, 3}, {1, 2, 3, 4, 5, 6}},
                    {"indices", T::i64, {}, {}, true, true},
                    {"indices", T::i64, {2}, {2, 0}, true}},
                   {}, {T::i64, {2, 2}}),
              ElementsAre(3, 1, 6, 4));
  EXPECT_THAT(
      run1("aten.gather.default",
           {{"self", T::f32, {2, 3}, {1, 2, 3, 4, 5, 6}}, {"index", T::i64, {2, 2}, {2, 0, 1, -1}}},
           {A::integer("dim", 1)}, {T::f32, {2, 2}}),
      ElementsAre(3, 1, 5, 6));
  auto bad =
      run_host_op("aten.gather.default",
                  {{"self", T::f32, {2, 3}, {1, 2, 3, 4, 5, 6}}, {"index", T::i64, {2, 1}, {0, 3}}},
                  {A::integer("dim", 1)}, {{T::f32, {2, 1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("index 3 is out of bounds for dim 1 of size 3"));
  auto bad2 = run_host_op("aten.index.Tensor",
                          {{"self", T::f32, {3}, {0, 0, 0}}, {"indices", T::i64, {1}, {-4}, true}},
                          {}, {{T::f32, {1}}});
  ASSERT_FALSE(bad2.is_ok());
  EXPECT_THAT(bad2.status().message(), HasSubstr("index -4 is out of bounds for dim 0 of size 3"));
}

// pow's schemas name the second operand `exponent`: the kernel read `other`, so every host pow
// failed at load time (found by the differential tester, docs/DIFFTEST.md).
TEST(HostKernels, PowReadsItsExponent) {
  EXPECT_THAT(run1("aten.pow.Tensor_Scalar", {{"self", T::f32, {3}, {2, -3, 0.25}}},
                   {A::real("exponent", 2.0)}, {T::f32, {3}}),
              ElementsAre(4, 9, 0.0625));
  EXPECT_THAT(
      run1("aten.pow.Tensor_Tensor",
           {{"self", T::f32, {3}, {2, 3, 4}}, {"exponent", T::f32, {1}, {3}}}, {}, {T::f32, {3}}),
      ElementsAre(8, 27, 64));
}

// fmod keeps the dividend's sign, remainder the divisor's (Python's %), both exact.
TEST(HostKernels, FmodAndRemainder) {
  EXPECT_THAT(run1("aten.fmod.Scalar", {{"self", T::f32, {4}, {5.5, -5.5, 0.7, -0.3}}},
                   {A::real("other", 2.0)}, {T::f32, {4}}),
              ElementsAre(1.5, -1.5, 0.699999988079071, -0.30000001192092896));
  EXPECT_THAT(run1("aten.remainder.Scalar", {{"self", T::f32, {4}, {5.5, -5.5, 0.7, -0.3}}},
                   {A::real("other", 2.0)}, {T::f32, {4}}),
              ElementsAre(1.5, 0.5, 0.699999988079071, 1.7000000476837158));
}

// A mixture-of-experts router's kernels: tokens per expert (histc), the experts' grouped
// matmul over row ranges, and softplus (Mamba's step size).
TEST(HostKernels, HistcGroupedMmSoftplus) {
  EXPECT_THAT(run1("aten.histc.default", {{"self", T::f32, {6}, {0, 1, 1, 3, 3, 3}}},
                   {A::integer("bins", 4), A::real("min", 0), A::real("max", 3)}, {T::f32, {4}}),
              ElementsAre(1, 2, 0, 3));
  // rows 0-1 use expert 0 (identity), row 2 expert 1 (doubling), row 3 past the last offset.
  EXPECT_THAT(run1("transformers.grouped_mm_fallback.default",
                   {{"input", T::f32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}},
                    {"weight", T::f32, {2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2}},
                    {"offs", T::i64, {2}, {2, 3}}},
                   {}, {T::f32, {4, 2}}),
              ElementsAre(1, 2, 3, 4, 10, 12, 0, 0));
  auto bad = run_host_op("transformers.grouped_mm_fallback.default",
                         {{"input", T::f32, {2, 1}, {1, 2}},
                          {"weight", T::f32, {2, 1, 1}, {1, 1}},
                          {"offs", T::i64, {2}, {2, 1}}},
                         {}, {{T::f32, {2, 1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("offs[1] = 1 is not a cumulative row count"));
  const auto sp =
      run1("aten.softplus.default", {{"self", T::f32, {3}, {0, 30, -2}}}, {}, {T::f32, {3}});
  EXPECT_NEAR(sp[0], std::log(2.0), 1e-6);
  EXPECT_EQ(sp[1], 30);  // above the threshold: x itself
  EXPECT_NEAR(sp[2], std::log1p(std::exp(-2.0)), 1e-6);
}

// Inverse and hyperbolic trigonometry (positional encodings, rotary variants, Fourier
// features): as the C library computes them, to f32 precision.
TEST(HostKernels, Trigonometry) {
  const std::vector<double> x = {-0.5, 0.0, 0.25, 0.9};
  const std::pair<const char*, double (*)(double)> fns[] = {
      {"aten.acos.default", [](double v) { return std::acos(v); }},
      {"aten.asin.default", [](double v) { return std::asin(v); }},
      {"aten.atan.default", [](double v) { return std::atan(v); }},
      {"aten.sinh.default", [](double v) { return std::sinh(v); }},
      {"aten.cosh.default", [](double v) { return std::cosh(v); }},
      {"aten.tan.default", [](double v) { return std::tan(v); }}};
  for (const auto& [op, f] : fns) {
    SCOPED_TRACE(op);
    const auto y = run1(op, {{"self", T::f32, {4}, x}}, {}, {T::f32, {4}});
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(y[i], static_cast<float>(f(x[i])));
  }
}

TEST(HostKernels, IndexCopy) {
  EXPECT_THAT(run1("aten.index_copy.default",
                   {{"self", T::f32, {4, 2}, std::vector<double>(8, 0)},
                    {"index", T::i64, {2}, {3, 0}},
                    {"source", T::f32, {2, 2}, {1, 2, 3, 4}}},
                   {A::integer("dim", 0)}, {T::f32, {4, 2}}),
              ElementsAre(3, 4, 0, 0, 0, 0, 1, 2));
  EXPECT_THAT(run1("aten.index_copy.default",
                   {{"self", T::f32, {2, 3}, std::vector<double>(6, 0)},
                    {"index", T::i64, {1}, {2}},
                    {"source", T::f32, {2, 1}, {5, 6}}},
                   {A::integer("dim", 1)}, {T::f32, {2, 3}}),
              ElementsAre(0, 0, 5, 0, 0, 6));
}

TEST(HostKernels, SortTopkArgsort) {
  auto r = run_host_op("aten.sort.default", {{"self", T::f32, {5}, {3, NAN, 1, 2, 1}}}, {},
                       {{T::f32, {5}}, {T::i64, {5}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_THAT((*r)[1], ElementsAre(2, 4, 3, 0, 1));  // stable; NaN last
  EXPECT_TRUE(std::isnan((*r)[0][4]));
  r = run_host_op("aten.topk.default", {{"self", T::f32, {2, 3}, {1, 5, 3, 9, 7, 8}}},
                  {A::integer("k", 2)}, {{T::f32, {2, 2}}, {T::i64, {2, 2}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_THAT((*r)[0], ElementsAre(5, 3, 9, 8));
  EXPECT_THAT((*r)[1], ElementsAre(1, 2, 0, 2));
  EXPECT_THAT(run1("aten.argsort.default", {{"self", T::i64, {3}, {30, 10, 20}}},
                   {A::boolean("descending", true)}, {T::i64, {3}}),
              ElementsAre(0, 2, 1));
}

TEST(HostKernels, BatchNormFunctionalTraining) {
  // N=2, C=2, HW=1: channel 0 = {1, 3} (mean 2, biased var 1, unbiased 2); channel 1 = {4, 4}.
  const double eps = 1e-5;
  auto r = run_host_op(
      "aten._native_batch_norm_legit_functional.default",
      {{"input", T::f32, {2, 2, 1, 1}, {1, 4, 3, 4}},
       {"weight", T::f32, {2}, {2, 1}},
       {"bias", T::f32, {2}, {0, 0.5}},
       {"running_mean", T::f32, {2}, {0, 1}},
       {"running_var", T::f32, {2}, {1, 1}}},
      {A::boolean("training", true), A::real("momentum", 0.1), A::real("eps", eps)},
      {{T::f32, {2, 2, 1, 1}}, {T::f32, {2}}, {T::f32, {2}}, {T::f32, {2}}, {T::f32, {2}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const double inv0 = 1 / std::sqrt(1 + eps), inv1 = 1 / std::sqrt(eps);
  EXPECT_THAT((*r)[0], Near(std::vector<double>{-2 * inv0, 0.5, 2 * inv0, 0.5}));
  EXPECT_THAT((*r)[1], Near(std::vector<double>{2, 4}));
  EXPECT_THAT((*r)[2], Near(std::vector<double>{inv0, inv1}));
  EXPECT_THAT((*r)[3], Near(std::vector<double>{0.2, 1.3}));
  EXPECT_THAT((*r)[4], Near(std::vector<double>{0.9 + 0.2, 0.9}));
}

TEST(HostKernels, BatchNormPlainBothModes) {
  // aten.batch_norm.default: one result. Channel 0 = {1, 3}, channel 1 = {4, 4}.
  const double eps = 1e-5;
  const std::vector<In> in = {{"input", T::f32, {2, 2, 1, 1}, {1, 4, 3, 4}},
                              {"weight", T::f32, {2}, {2, 1}},
                              {"bias", T::f32, {2}, {0, 0.5}},
                              {"running_mean", T::f32, {2}, {0, 1}},
                              {"running_var", T::f32, {2}, {4, 1}}};
  // Training: batch statistics (mean 2, var 1; mean 4, var 0).
  const double inv0 = 1 / std::sqrt(1 + eps);
  EXPECT_THAT(run1("aten.batch_norm.default", in,
                   {A::boolean("training", true), A::real("momentum", 0.1), A::real("eps", eps),
                    A::boolean("cudnn_enabled", false)},
                   {T::f32, {2, 2, 1, 1}}),
              Near(std::vector<double>{-2 * inv0, 0.5, 2 * inv0, 0.5}));
  // Inference: running statistics.
  const double r0 = 2 / std::sqrt(4 + eps), r1 = 1 / std::sqrt(1 + eps);
  EXPECT_THAT(run1("aten.batch_norm.default", in,
                   {A::boolean("training", false), A::real("momentum", 0.1), A::real("eps", eps),
                    A::boolean("cudnn_enabled", false)},
                   {T::f32, {2, 2, 1, 1}}),
              Near(std::vector<double>{1 * r0, 3 * r1 + 0.5, 3 * r0, 3 * r1 + 0.5}));
  // Inference without running statistics is refused.
  auto r = run_host_op("aten.batch_norm.default", {in[0]},
                       {A::boolean("training", false), A::real("momentum", 0.1),
                        A::real("eps", eps), A::boolean("cudnn_enabled", false)},
                       {{T::f32, {2, 2, 1, 1}}});
  EXPECT_FALSE(r.is_ok());
}

// ---- Generic element-wise and data movement ---------------------------------------------------

TEST(HostKernels, ElementwiseBroadcastAndModes) {
  EXPECT_THAT(run1("aten.add.Tensor",
                   {{"self", T::f32, {2, 2}, {1, 2, 3, 4}}, {"other", T::f32, {2}, {10, 20}}},
                   {A::real("alpha", 2)}, {T::f32, {2, 2}}),
              ElementsAre(21, 42, 23, 44));
  EXPECT_THAT(
      run1("aten.div.Tensor_mode", {{"self", T::f32, {2}, {-7, 7}}, {"other", T::f32, {2}, {2, 2}}},
           {A::str("rounding_mode", "floor")}, {T::f32, {2}}),
      ElementsAre(-4, 3));
  EXPECT_THAT(run1("aten.mul.Scalar", {{"self", T::f32, {2}, {1.5, -2}}}, {A::real("other", 4)},
                   {T::f32, {2}}),
              ElementsAre(6, -8));
  EXPECT_THAT(
      run1("aten.lt.Tensor", {{"self", T::f32, {3}, {1, 2, 3}}, {"other", T::f32, {1}, {2}}}, {},
           {T::boolean, {3}}),
      ElementsAre(1, 0, 0));
  EXPECT_THAT(run1("aten.where.self",
                   {{"condition", T::boolean, {3}, {1, 0, 1}},
                    {"self", T::f32, {3}, {1, 2, 3}},
                    {"other", T::f32, {1}, {-1}}},
                   {}, {T::f32, {3}}),
              ElementsAre(1, -1, 3));
  EXPECT_THAT(run1("aten.gelu.default", {{"self", T::f32, {3}, {-1, 0, 1}}}, {}, {T::f32, {3}}),
              Near(std::vector<double>{-0.15865525, 0, 0.84134475}));
  EXPECT_THAT(run1("aten._to_copy.default", {{"self", T::f32, {3}, {1.7, -1.7, 3}}},
                   {A::scalar_type("dtype", T::i32)}, {T::i32, {3}}),
              ElementsAre(1, -1, 3));
  EXPECT_THAT(run1("aten.clamp.default", {{"self", T::f32, {3}, {-5, 0.5, 5}}},
                   {A::real("min", -1), A::real("max", 1)}, {T::f32, {3}}),
              ElementsAre(-1, 0.5, 1));
}

TEST(HostKernels, DataMovement) {
  const std::vector<double> x = {0, 1, 2, 3, 4, 5};  // [2, 3]
  EXPECT_THAT(run1("aten.permute.default", {{"self", T::f32, {2, 3}, x}},
                   {A::integers("dims", {1, 0})}, {T::f32, {3, 2}}),
              ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_THAT(run1("aten.transpose.int", {{"self", T::f32, {2, 3}, x}},
                   {A::integer("dim0", 0), A::integer("dim1", -1)}, {T::f32, {3, 2}}),
              ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_THAT(run1("aten.expand.default", {{"self", T::f32, {2, 1}, {7, 8}}},
                   {A::integers("size", {2, 3})}, {T::f32, {2, 3}}),
              ElementsAre(7, 7, 7, 8, 8, 8));
  EXPECT_THAT(run1("aten.slice.Tensor", {{"self", T::f32, {2, 3}, x}},
                   {A::integer("dim", 1), A::integer("start", 0), A::integer("end", 100),
                    A::integer("step", 2)},
                   {T::f32, {2, 2}}),
              ElementsAre(0, 2, 3, 5));
  EXPECT_THAT(run1("aten.select.int", {{"self", T::f32, {2, 3}, x}},
                   {A::integer("dim", 1), A::integer("index", -1)}, {T::f32, {2}}),
              ElementsAre(2, 5));
  EXPECT_THAT(
      run1("aten.cat.default",
           {{"tensors", T::f32, {2, 1}, {9, 9}, true}, {"tensors", T::f32, {2, 3}, x, true}},
           {A::integer("dim", 1)}, {T::f32, {2, 4}}),
      ElementsAre(9, 0, 1, 2, 9, 3, 4, 5));
  EXPECT_THAT(run1("aten.view.default", {{"self", T::f32, {2, 3}, x}},
                   {A::integers("size", {3, 2})}, {T::f32, {3, 2}}),
              ElementsAreArray(x));
  EXPECT_THAT(run1("aten.flip.default", {{"self", T::f32, {2, 3}, x}},
                   {A::integers("dims", {0, 1})}, {T::f32, {2, 3}}),
              ElementsAre(5, 4, 3, 2, 1, 0));
  // as_strided: overlapping windows of the storage [0..5].
  EXPECT_THAT(run1("aten.as_strided.default", {{"self", T::f32, {2, 3}, x}},
                   {A::integers("size", {2, 2}), A::integers("stride", {2, 1}),
                    A::integer("storage_offset", 1)},
                   {T::f32, {2, 2}}),
              ElementsAre(1, 2, 3, 4));
  auto outside = run_host_op(
      "aten.as_strided.default", {{"self", T::f32, {2, 3}, x}},
      {A::integers("size", {2, 2}), A::integers("stride", {3, 2}), A::integer("storage_offset", 1)},
      {{T::f32, {2, 2}}});
  ASSERT_FALSE(outside.is_ok());
  EXPECT_THAT(outside.status().message(),
              HasSubstr("view reaches element 6 of an input with 6 elements"));
  EXPECT_THAT(run1("aten.index_select.default",
                   {{"self", T::f32, {2, 3}, x}, {"index", T::i64, {2}, {2, 0}}},
                   {A::integer("dim", 1)}, {T::f32, {2, 2}}),
              ElementsAre(2, 0, 5, 3));
  EXPECT_THAT(
      run1("aten.embedding.default",
           {{"weight", T::f32, {3, 2}, x}, {"indices", T::i64, {2}, {2, 1}}}, {}, {T::f32, {2, 2}}),
      ElementsAre(4, 5, 2, 3));
}

TEST(HostKernels, ReductionsAndSoftmax) {
  const std::vector<double> x = {1, 5, 3, 4, 2, 6};  // [2, 3]
  EXPECT_THAT(run1("aten.sum.dim_IntList", {{"self", T::f32, {2, 3}, x}},
                   {A::integers("dim", {1}), A::boolean("keepdim", true)}, {T::f32, {2, 1}}),
              ElementsAre(9, 12));
  EXPECT_THAT(run1("aten.mean.dim", {{"self", T::f32, {2, 3}, x}}, {A::integers("dim", {0})},
                   {T::f32, {3}}),
              ElementsAre(2.5, 3.5, 4.5));
  EXPECT_THAT(run1("aten.amax.default", {{"self", T::f32, {2, 3}, x}}, {A::integers("dim", {1})},
                   {T::f32, {2}}),
              ElementsAre(5, 6));
  EXPECT_THAT(run1("aten.argmax.default", {{"self", T::f32, {2, 3}, x}}, {A::integer("dim", 1)},
                   {T::i64, {2}}),
              ElementsAre(1, 2));
  const double e = std::exp(1.0);
  EXPECT_THAT(run1("aten._softmax.default", {{"self", T::f32, {2}, {0, 1}}},
                   {A::integer("dim", 0), A::boolean("half_to_float", false)}, {T::f32, {2}}),
              Near(std::vector<double>{1 / (1 + e), e / (1 + e)}));
}

TEST(HostKernels, Matmul) {
  EXPECT_THAT(run1("aten.addmm.default",
                   {{"self", T::f32, {2}, {1, -1}},
                    {"mat1", T::f32, {1, 3}, {1, 2, 3}},
                    {"mat2", T::f32, {3, 2}, {1, 0, 0, 1, 1, 1}}},
                   {}, {T::f32, {1, 2}}),
              ElementsAre(5, 4));
  EXPECT_THAT(run1("aten.linear.default",
                   {{"input", T::f32, {2, 2}, {1, 2, 3, 4}},
                    {"weight", T::f32, {1, 2}, {1, 1}},
                    {"bias", T::f32, {1}, {0.5}}},
                   {}, {T::f32, {2, 1}}),
              ElementsAre(3.5, 7.5));
}

// ---- Checks ------------------------------------------------------------------------------------

TEST(HostKernels, PlanShapeMismatchIsALoadError) {
  auto r = run_host_op("aten.cumsum.default", {{"self", T::f32, {2, 3}, {1, 2, 3, 4, 5, 6}}},
                       {A::integer("dim", 1)}, {{T::f32, {2, 2}}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::data_loss);
  EXPECT_THAT(r.status().message(), HasSubstr("output shape [2, 2], expected [2, 3]"));
}

TEST(HostKernels, UnknownOpIsUnimplementedAtLoad) {
  auto r =
      run_host_op("aten.frobnicate.default", {{"self", T::f32, {1}, {1}}}, {}, {{T::f32, {1}}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::unimplemented);
  EXPECT_THAT(r.status().message(), HasSubstr("host op 'aten.frobnicate.default' has no kernel"));
}

// Creation ops, for the programs where they are not folded away (a size from a symbolic dim):
// the size, the bounds and the output must agree.
TEST(HostKernels, CreationOps) {
  EXPECT_THAT(run1("aten.full.default", {},
                   {A::integers("size", {2, 2}), A::integer("fill_value", -3)}, {T::i64, {2, 2}}),
              ElementsAre(-3, -3, -3, -3));
  EXPECT_THAT(run1("aten.full.default", {}, {A::integers("size", {3}), A::real("fill_value", 0.1)},
                   {T::f32, {3}}),
              ElementsAre(0.10000000149011612, 0.10000000149011612, 0.10000000149011612));
  EXPECT_THAT(run1("aten.ones_like.default", {{"self", T::f32, {2}, {7, 8}}}, {}, {T::i32, {2}}),
              ElementsAre(1, 1));
  EXPECT_THAT(run1("aten.new_zeros.default", {{"self", T::f32, {1}, {7}}},
                   {A::integers("size", {3})}, {T::f32, {3}}),
              ElementsAre(0, 0, 0));
  EXPECT_THAT(run1("aten.scalar_tensor.default", {}, {A::real("s", -2.5)}, {T::f32, {}}),
              ElementsAre(-2.5));
  EXPECT_THAT(run1("aten.fill.Scalar", {{"self", T::boolean, {2}, {0, 0}}},
                   {A::integer("value", 3)}, {T::boolean, {2}}),
              ElementsAre(1, 1));
  EXPECT_THAT(
      run1("aten.arange.start_step", {},
           {A::integer("start", 5), A::integer("end", -1), A::integer("step", -2)}, {T::i64, {3}}),
      ElementsAre(5, 3, 1));
  EXPECT_THAT(run1("aten.arange.default", {}, {A::real("end", 1.0)}, {T::f32, {1}}),
              ElementsAre(0));
  EXPECT_THAT(
      run1("aten.arange.start", {}, {A::real("start", 0.5), A::real("end", 2.0)}, {T::f32, {2}}),
      ElementsAre(0.5, 1.5));

  auto bad = run_host_op("aten.arange.default", {}, {A::integer("end", 4)}, {{T::i64, {3}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("output shape [3], expected [4]"));
  bad = run_host_op("aten.zeros.default", {}, {A::integers("size", {2, 3})}, {{T::f32, {3, 2}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("output shape [3, 2], expected [2, 3]"));
  bad = run_host_op("aten.arange.start_step", {},
                    {A::integer("start", 0), A::integer("end", 4), A::integer("step", 0)},
                    {{T::i64, {4}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("step non-zero"));
}

// tril keeps j - i <= diagonal, triu j - i >= diagonal, over the last two dims of a batch.
TEST(HostKernels, TrilTriu) {
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  EXPECT_THAT(run1("aten.tril.default", {{"self", T::f32, {2, 2, 3}, x}}, {}, {T::f32, {2, 2, 3}}),
              ElementsAre(1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0));
  EXPECT_THAT(run1("aten.triu.default", {{"self", T::i64, {2, 2, 3}, x}},
                   {A::integer("diagonal", 1)}, {T::i64, {2, 2, 3}}),
              ElementsAre(0, 2, 3, 0, 0, 6, 0, 8, 9, 0, 0, 12));
  auto bad =
      run_host_op("aten.tril.default", {{"self", T::f32, {3}, {1, 2, 3}}}, {}, {{T::f32, {3}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("self has rank 1, expected >= 2"));
}

// masked_fill with a broadcast mask; any / all along a dim, with keepdim.
TEST(HostKernels, MaskedFillAnyAll) {
  EXPECT_THAT(
      run1("aten.masked_fill.Scalar",
           {{"self", T::f32, {2, 3}, {1, 2, 3, 4, 5, 6}}, {"mask", T::boolean, {3}, {1, 0, 1}}},
           {A::real("value", -1.5)}, {T::f32, {2, 3}}),
      ElementsAre(-1.5, 2, -1.5, -1.5, 5, -1.5));
  EXPECT_THAT(run1("aten.masked_fill.Scalar",
                   {{"self", T::i64, {2}, {7, 8}}, {"mask", T::boolean, {2}, {0, 1}}},
                   {A::integer("value", -3)}, {T::i64, {2}}),
              ElementsAre(7, -3));
  const In x{"self", T::f32, {2, 3}, {0, 0, 1, 2, 3, 4}};
  EXPECT_THAT(run1("aten.any.dim", {x}, {A::integer("dim", 1)}, {T::boolean, {2}}),
              ElementsAre(1, 1));
  EXPECT_THAT(run1("aten.all.dim", {x}, {A::integer("dim", 1)}, {T::boolean, {2}}),
              ElementsAre(0, 1));
  EXPECT_THAT(run1("aten.any.dim", {x}, {A::integer("dim", 0), A::boolean("keepdim", true)},
                   {T::boolean, {1, 3}}),
              ElementsAre(1, 1, 1));
  EXPECT_THAT(run1("aten.all.dim", {x}, {A::integer("dim", -2)}, {T::boolean, {3}}),
              ElementsAre(0, 0, 1));
  auto bad = run_host_op("aten.masked_fill.Scalar",
                         {{"self", T::f32, {3}, {1, 2, 3}}, {"mask", T::boolean, {2, 3}, {}}},
                         {A::real("value", 0)}, {{T::f32, {3}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("does not broadcast to self [3]"));
}

TEST(HostKernels, RsubAndBitwise) {
  // rsub(self, other, alpha) = other - alpha * self.
  EXPECT_THAT(run1("aten.rsub.Scalar", {{"self", T::f32, {3}, {1, 2, 3}}},
                   {A::real("other", 10), A::real("alpha", 2)}, {T::f32, {3}}),
              ElementsAre(8, 6, 4));
  EXPECT_THAT(
      run1("aten.rsub.Tensor", {{"self", T::i64, {2}, {1, 5}}, {"other", T::i64, {2, 1}, {10, 20}}},
           {}, {T::i64, {2, 2}}),
      ElementsAre(9, 5, 19, 15));
  const In a{"self", T::i64, {3}, {12, -1, 5}}, b{"other", T::i64, {3}, {10, 6, 3}};
  EXPECT_THAT(run1("aten.bitwise_and.Tensor", {a, b}, {}, {T::i64, {3}}), ElementsAre(8, 6, 1));
  EXPECT_THAT(run1("aten.__or__.Tensor", {a, b}, {}, {T::i64, {3}}), ElementsAre(14, -1, 7));
  EXPECT_THAT(run1("aten.bitwise_xor.Tensor", {a, b}, {}, {T::i64, {3}}), ElementsAre(6, -7, 6));
  EXPECT_THAT(run1("aten.__and__.Tensor",
                   {{"self", T::boolean, {}, {1}}, {"other", T::boolean, {3}, {1, 0, 1}}}, {},
                   {T::boolean, {3}}),
              ElementsAre(1, 0, 1));
  EXPECT_THAT(
      run1("aten.bitwise_not.default", {{"self", T::boolean, {2}, {1, 0}}}, {}, {T::boolean, {2}}),
      ElementsAre(0, 1));
  EXPECT_THAT(run1("aten.bitwise_not.default", {a}, {}, {T::i64, {3}}), ElementsAre(-13, 0, -6));
  auto bad = run_host_op("aten.bitwise_and.Tensor",
                         {{"self", T::f32, {2}, {1, 2}}, {"other", T::f32, {2}, {1, 2}}}, {},
                         {{T::f32, {2}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("bool or integer tensors, found f32"));
}

// ---- Pooling ----------------------------------------------------------------------------------

const In kPlane{"self", T::f32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};

TEST(HostKernels, MaxPool) {
  EXPECT_THAT(
      run1("aten.max_pool2d.default", {kPlane},
           {A::integers("kernel_size", {2}), A::integers("stride", {1})}, {T::f32, {1, 1, 2, 2}}),
      ElementsAre(5, 6, 8, 9));
  // Padding 1, stride 2 (the kernel size): the index is the flat position in the plane.
  auto r = run_host_op("aten.max_pool2d_with_indices.default", {kPlane},
                       {A::integers("kernel_size", {2, 2}), A::integers("padding", {1, 1})},
                       {{T::f32, {1, 1, 2, 2}}, {T::i64, {1, 1, 2, 2}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_THAT((*r)[0], ElementsAre(1, 3, 7, 9));
  EXPECT_THAT((*r)[1], ElementsAre(0, 2, 6, 8));
  // ceil_mode keeps a last window that starts inside the input.
  EXPECT_THAT(run1("aten.max_pool2d.default", {{"self", T::f32, {1, 1, 5}, {1, 2, 3, 4, 5}}},
                   {A::integers("kernel_size", {1, 2}), A::integers("stride", {1, 2}),
                    A::boolean("ceil_mode", true)},
                   {T::f32, {1, 1, 3}}),
              ElementsAre(2, 4, 5));
  // Unbatched 1-D with dilation 2: windows {0, 2}, {1, 3}, {2, 4}; NaN wins.
  EXPECT_THAT(run1("aten.max_pool1d.default", {{"self", T::f32, {1, 5}, {1, 5, 2, 4, 3}}},
                   {A::integers("kernel_size", {2}), A::integers("stride", {1}),
                    A::integers("dilation", {2})},
                   {T::f32, {1, 3}}),
              ElementsAre(2, 5, 3));
  const std::vector<double> nan =
      run1("aten.max_pool1d.default", {{"self", T::f32, {1, 3}, {1, NAN, 0}}},
           {A::integers("kernel_size", {3})}, {T::f32, {1, 1}});
  ASSERT_EQ(nan.size(), 1u);
  EXPECT_TRUE(std::isnan(nan[0]));
  auto bad = run_host_op("aten.max_pool2d.default", {kPlane},
                         {A::integers("kernel_size", {2}), A::integers("padding", {2})},
                         {{T::f32, {1, 1, 3, 3}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("padding 2 exceeds half the kernel (1)"));
  bad = run_host_op("aten.max_pool2d.default", {kPlane}, {A::integers("kernel_size", {2})},
                    {{T::f32, {1, 1, 2, 2}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("expected f32[1, 1, 1, 1]"));
}

TEST(HostKernels, AvgPool) {
  const std::vector<A> pad1 = {A::integers("kernel_size", {2, 2}), A::integers("stride", {2, 2}),
                               A::integers("padding", {1, 1})};
  EXPECT_THAT(run1("aten.avg_pool2d.default", {kPlane}, pad1, {T::f32, {1, 1, 2, 2}}),
              ElementsAre(0.25, 1.25, 2.75, 7));
  std::vector<A> no_pad = pad1;
  no_pad.push_back(A::boolean("count_include_pad", false));
  EXPECT_THAT(run1("aten.avg_pool2d.default", {kPlane}, no_pad, {T::f32, {1, 1, 2, 2}}),
              ElementsAre(1, 2.5, 5.5, 7));
  std::vector<A> divisor = pad1;
  divisor.push_back(A::integer("divisor_override", 2));
  EXPECT_THAT(run1("aten.avg_pool2d.default", {kPlane}, divisor, {T::f32, {1, 1, 2, 2}}),
              ElementsAre(0.5, 2.5, 5.5, 14));
  // ceil_mode: the last window holds one element and divides by one.
  EXPECT_THAT(run1("aten.avg_pool2d.default", {{"self", T::f32, {1, 1, 5}, {1, 2, 3, 4, 5}}},
                   {A::integers("kernel_size", {1, 2}), A::integers("stride", {1, 2}),
                    A::boolean("ceil_mode", true)},
                   {T::f32, {1, 1, 3}}),
              ElementsAre(1.5, 3.5, 5));
  EXPECT_THAT(run1("aten.avg_pool1d.default", {{"self", T::f32, {1, 4}, {1, 2, 3, 4}}},
                   {A::integers("kernel_size", {2})}, {T::f32, {1, 2}}),
              ElementsAre(1.5, 3.5));
  auto bad = run_host_op("aten.avg_pool2d.default", {{"self", T::i64, {1, 1, 2, 2}, {1, 2, 3, 4}}},
                         {A::integers("kernel_size", {2})}, {{T::i64, {1, 1, 1, 1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("input is i64, expected a float type"));
}

TEST(HostKernels, AdaptiveAvgPool) {
  // Windows [floor(i L / O), ceil((i + 1) L / O)): rows {0, 1} and {1, 2}, the same for columns.
  for (const char* op : {"aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default"})
    EXPECT_THAT(run1(op, {kPlane}, {A::integers("output_size", {2, 2})}, {T::f32, {1, 1, 2, 2}}),
                ElementsAre(3, 4, 6, 7));
  EXPECT_THAT(run1("aten.adaptive_avg_pool1d.default", {{"self", T::f32, {1, 5}, {1, 2, 3, 4, 5}}},
                   {A::integers("output_size", {2})}, {T::f32, {1, 2}}),
              ElementsAre(2, 4));
  auto bad = run_host_op("aten.adaptive_avg_pool2d.default", {kPlane},
                         {A::integers("output_size", {2, 2, 2})}, {{T::f32, {1, 1, 2, 2}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("output_size has 3 entries, expected 2"));
}

// ---- Normalisation, activations, data movement, matmul, attention -----------------------------

TEST(HostKernels, LayerRmsAndGroupNorm) {
  // Rows [1, 3] and [2, 4]: mean 2 and 3, variance 1.
  EXPECT_THAT(run1("aten.layer_norm.default",
                   {{"input", T::f32, {2, 2}, {1, 3, 2, 4}},
                    {"weight", T::f32, {2}, {2, 1}},
                    {"bias", T::f32, {2}, {0, 1}}},
                   {A::integers("normalized_shape", {2}), A::real("eps", 0)}, {T::f32, {2, 2}}),
              ElementsAre(-2, 2, -2, 2));
  // [3, 4]: mean square 12.5; the default eps is f32's epsilon.
  const double rms = std::sqrt(12.5);
  EXPECT_THAT(run1("aten.rms_norm.default",
                   {{"input", T::f32, {1, 2}, {3, 4}}, {"weight", T::f32, {2}, {1, 2}}},
                   {A::integers("normalized_shape", {2})}, {T::f32, {1, 2}}),
              Near(std::vector<double>{3 / rms, 8 / rms}));
  // Groups {1, 3} (mean 2, variance 1) and {10, 20} (mean 15, variance 25).
  const std::vector<In> gn = {{"input", T::f32, {1, 4, 1}, {1, 3, 10, 20}},
                              {"weight", T::f32, {4}, {1, 2, 3, 4}},
                              {"bias", T::f32, {4}, {0, 0, 0, 1}}};
  EXPECT_THAT(run1("aten.group_norm.default", gn, {A::integer("num_groups", 2), A::real("eps", 0)},
                   {T::f32, {1, 4, 1}}),
              ElementsAre(-1, 2, -3, 5));
  auto r = run_host_op("aten.native_group_norm.default", gn,
                       {A::integer("N", 1), A::integer("C", 4), A::integer("HxW", 1),
                        A::integer("group", 2), A::real("eps", 0)},
                       {{T::f32, {1, 4, 1}}, {T::f32, {1, 2}}, {T::f32, {1, 2}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_THAT((*r)[0], ElementsAre(-1, 2, -3, 5));
  EXPECT_THAT((*r)[1], ElementsAre(2, 15));
  EXPECT_THAT((*r)[2], Near(std::vector<double>{1, 0.2}));
  auto bad = run_host_op("aten.group_norm.default", gn, {A::integer("num_groups", 3)},
                         {{T::f32, {1, 4, 1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("4 channels are not divisible into 3 groups"));
}

TEST(HostKernels, HardActivationsAndMaskedFillTensor) {
  EXPECT_THAT(
      run1("aten.hardsigmoid.default", {{"self", T::f32, {4}, {-4, 0, 1.5, 4}}}, {}, {T::f32, {4}}),
      ElementsAre(0, 0.5, 0.75, 1));
  EXPECT_THAT(
      run1("aten.hardswish.default", {{"self", T::f32, {4}, {-4, -1, 1, 4}}}, {}, {T::f32, {4}}),
      Near(std::vector<double>{0, -1.0 / 3, 2.0 / 3, 4}));
  EXPECT_THAT(run1("aten.relu6.default", {{"self", T::f32, {3}, {-1, 3, 7}}}, {}, {T::f32, {3}}),
              ElementsAre(0, 3, 6));
  EXPECT_THAT(run1("aten.hardtanh.default", {{"self", T::f32, {3}, {-1, 0.25, 3}}},
                   {A::real("min_val", -0.5), A::real("max_val", 2)}, {T::f32, {3}}),
              ElementsAre(-0.5, 0.25, 2));
  EXPECT_THAT(run1("aten.masked_fill.Tensor",
                   {{"self", T::f32, {3}, {1, 2, 3}},
                    {"mask", T::boolean, {3}, {1, 0, 1}},
                    {"value", T::f32, {}, {9}}},
                   {}, {T::f32, {3}}),
              ElementsAre(9, 2, 9));
  auto bad = run_host_op("aten.hardtanh.default", {{"self", T::f32, {1}, {0}}},
                         {A::real("min_val", 1), A::real("max_val", 0)}, {{T::f32, {1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("is above max_val"));
  bad = run_host_op("aten.masked_fill.Tensor",
                    {{"self", T::f32, {3}, {1, 2, 3}},
                     {"mask", T::boolean, {3}, {1, 0, 1}},
                     {"value", T::f32, {1}, {9}}},
                    {}, {{T::f32, {3}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("value must be a 0-dim tensor, found [1]"));
}

TEST(HostKernels, SplitAndDropout) {
  auto r =
      run_host_op("aten.split.Tensor", {{"self", T::f32, {5}, {0, 1, 2, 3, 4}}},
                  {A::integer("split_size", 2)}, {{T::f32, {2}}, {T::f32, {2}}, {T::f32, {1}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_THAT(*r, ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3), ElementsAre(4)));
  r = run_host_op("aten.split_with_sizes.default", {{"self", T::i64, {2, 3}, {0, 1, 2, 3, 4, 5}}},
                  {A::integers("split_sizes", {1, 2}), A::integer("dim", -1)},
                  {{T::i64, {2, 1}}, {T::i64, {2, 2}}});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_THAT(*r, ElementsAre(ElementsAre(0, 3), ElementsAre(1, 2, 4, 5)));
  auto bad = run_host_op("aten.split_with_sizes.default", {{"self", T::f32, {3}, {0, 1, 2}}},
                         {A::integers("split_sizes", {1, 1})}, {{T::f32, {1}}, {T::f32, {1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("add up to 2, expected the size 3 of dim 0"));
  EXPECT_THAT(run1("aten.dropout.default", {{"input", T::f32, {2}, {1, -2}}},
                   {A::real("p", 0.5), A::boolean("train", false)}, {T::f32, {2}}),
              ElementsAre(1, -2));
  bad = run_host_op("aten.dropout.default", {{"input", T::f32, {2}, {1, -2}}},
                    {A::real("p", 0.5), A::boolean("train", true)}, {{T::f32, {2}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("dropout in training mode"));
}

TEST(HostKernels, MatmulBroadcastAndBaddbmm) {
  EXPECT_THAT(
      run1("aten.matmul.default",
           {{"self", T::f32, {3}, {1, 2, 3}}, {"other", T::f32, {3}, {4, 5, 6}}}, {}, {T::f32, {}}),
      ElementsAre(32));
  EXPECT_THAT(run1("aten.matmul.default",
                   {{"self", T::f32, {2}, {1, 1}}, {"other", T::f32, {2, 3}, {1, 2, 3, 4, 5, 6}}},
                   {}, {T::f32, {3}}),
              ElementsAre(5, 7, 9));
  // Batch dims broadcast: [2, 1, 2] @ [2, 1] -> [2, 1, 1].
  EXPECT_THAT(run1("aten.matmul.default",
                   {{"self", T::f32, {2, 1, 2}, {1, 2, 3, 4}}, {"other", T::f32, {2, 1}, {1, 1}}},
                   {}, {T::f32, {2, 1, 1}}),
              ElementsAre(3, 7));
  EXPECT_THAT(run1("aten.baddbmm.default",
                   {{"self", T::f32, {1}, {10}},
                    {"batch1", T::f32, {1, 1, 2}, {1, 2}},
                    {"batch2", T::f32, {1, 2, 1}, {3, 4}}},
                   {A::real("beta", 0.5), A::real("alpha", 2)}, {T::f32, {1, 1, 1}}),
              ElementsAre(27));
  auto bad = run_host_op("aten.matmul.default",
                         {{"self", T::f32, {2, 3}, {}}, {"other", T::f32, {2, 3}, {}}}, {},
                         {{T::f32, {2, 3}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("contraction dims 3 and 2"));
}

TEST(HostKernels, ScaledDotProductAttention) {
  const char* op = "aten.scaled_dot_product_attention.default";
  // Scale 1, scores [0, ln 3]: weights [1/4, 3/4] of values [0, 4].
  EXPECT_THAT(run1(op,
                   {{"query", T::f32, {1, 1, 1}, {1}},
                    {"key", T::f32, {1, 2, 1}, {0, std::log(3.0)}},
                    {"value", T::f32, {1, 2, 1}, {0, 4}}},
                   {A::real("scale", 1)}, {T::f32, {1, 1, 1}}),
              Near(std::vector<double>{3}));
  // Equal scores: causal row 0 sees value 1, row 1 the mean of [1, 3]; a bool mask keeps where
  // true; a row with nothing kept is zeros.
  const In q{"query", T::f32, {2, 1}, {1, 1}}, k{"key", T::f32, {2, 1}, {0, 0}},
      v{"value", T::f32, {2, 1}, {1, 3}};
  EXPECT_THAT(run1(op, {q, k, v}, {A::boolean("is_causal", true)}, {T::f32, {2, 1}}),
              ElementsAre(1, 2));
  EXPECT_THAT(
      run1(op, {q, k, v, {"attn_mask", T::boolean, {2, 2}, {0, 1, 0, 0}}}, {}, {T::f32, {2, 1}}),
      ElementsAre(3, 0));
  EXPECT_THAT(run1(op, {q, k, v, {"attn_mask", T::f32, {2}, {0, -INFINITY}}}, {}, {T::f32, {2, 1}}),
              ElementsAre(1, 1));
  // Grouped-query attention: query heads {0, 1} read key/value head 0, {2, 3} head 1.
  const std::vector<In> gqa = {{"query", T::f32, {1, 4, 1, 1}, {1, 2, 3, 4}},
                               {"key", T::f32, {1, 2, 1, 1}, {1, 1}},
                               {"value", T::f32, {1, 2, 1, 1}, {5, 7}}};
  EXPECT_THAT(run1(op, gqa, {A::boolean("enable_gqa", true)}, {T::f32, {1, 4, 1, 1}}),
              ElementsAre(5, 5, 7, 7));
  auto bad = run_host_op(op, gqa, {}, {{T::f32, {1, 4, 1, 1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("differing heads need enable_gqa"));
  bad = run_host_op(op, {q, k, v, {"attn_mask", T::boolean, {2, 2}, {1, 1, 1, 1}}},
                    {A::boolean("is_causal", true)}, {{T::f32, {2, 1}}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("attn_mask and is_causal are both set"));
}

}  // namespace
}  // namespace neuronc::testing
