// Model + Session on hand-built artifacts: a device program run on the NeuronCore model, an
// execution plan with host ops between two device partitions, named-input errors, caller
// buffers, stats, and many threads sharing one Model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <thread>

#include "device/target.h"
#include "neuronc/neuronc.h"
#include "tests/artifact_format/test_artifacts.h"

namespace neuronc {
namespace {

using ::testing::HasSubstr;

std::vector<float> input_values(int seed) {
  std::vector<float> x(128);
  for (int i = 0; i < 128; ++i) x[i] = std::sin(0.37f * static_cast<float>(i + 13 * seed)) * 2;
  return x;
}

// The reference of testing::two_partition_writer(), computed directly.
void reference(const std::vector<float>& x, std::vector<float>& y, std::vector<float>& spec) {
  const auto w = testing::weight_values();
  std::vector<float> h1(128), h2(128);
  for (int i = 0; i < 128; ++i) h1[i] = std::max(0.0f, 2 * x[i] + 1);
  for (int r = 0; r < 4; ++r) {
    double acc = 0;
    for (int c = 0; c < 32; ++c) h2[r * 32 + c] = static_cast<float>(acc += h1[r * 32 + c]);
  }
  y.resize(128);
  for (int i = 0; i < 128; ++i) y[i] = h2[i] + w[i];
  spec.resize(4 * 17);
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 17; ++k) {
      std::complex<double> s = 0;
      for (int t = 0; t < 32; ++t)
        s += double(h1[r * 32 + t]) * std::polar(1.0, -2 * M_PI * k * t / 32.0);
      spec[r * 17 + k] = static_cast<float>(std::abs(s));
    }
}

Model load_two_partition() {
  auto m = Model::load_from_memory(testing::two_partition_artifact());
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return *m;
}

TEST(Session, RunsHandBuiltDeviceProgramsAndHostOps) {
  Model model = load_two_partition();
  EXPECT_EQ(model.info().device_partitions, 2u);
  EXPECT_EQ(model.info().host_ops, 3u);
  EXPECT_EQ(model.info().target, "trn1");
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].name, "x");
  Session session(model, {.target_cores = 1});
  ASSERT_TRUE(session.status().is_ok()) << session.status().message();
  const auto x = input_values(0);
  auto out = session.run({{"x", TensorView(x.data(), DType::f32, {4, 32})}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  std::vector<float> y, spec;
  reference(x, y, spec);
  const Tensor& ty = out->at("y");
  ASSERT_EQ(ty.shape(), (Shape{4, 32}));
  for (int i = 0; i < 128; ++i)
    EXPECT_NEAR(ty.as<float>()[i], y[i], 1e-4f * (1 + std::fabs(y[i]))) << i;
  const Tensor& ts = out->at("spectrum");
  ASSERT_EQ(ts.shape(), (Shape{4, 17}));
  for (int i = 0; i < 68; ++i) EXPECT_NEAR(ts.as<float>()[i], spec[i], 1e-3f * (1 + spec[i])) << i;

  const RunStats& st = session.stats();
  EXPECT_EQ(st.device_calls, 2u);
  EXPECT_EQ(st.host_ops, 3u);
  EXPECT_GT(st.device_ns, 0);
  EXPECT_GT(st.engine_busy_ns[2], 0);  // scalar engine ran the activation
  EXPECT_GT(st.engine_busy_ns[1], 0);  // vector engine ran the add
  EXPECT_EQ(st.instructions, 7u);
  EXPECT_GE(st.latency_ns, st.device_ns);
  EXPECT_GT(st.host_wall_ns, 0);

  // End to end (docs/DEVICE_MODEL.md): two runtime calls, each copying its 4 x 32 f32 operand
  // in and its result out over PCIe (the weight stays in HBM), issued synchronously.
  const device::Target& t = device::target(device::TargetKind::trn1);
  EXPECT_EQ(st.host_transfer_bytes, 4u * 512);
  EXPECT_DOUBLE_EQ(st.execution_call_ns, 2 * t.execution_call_ns);
  EXPECT_NEAR(st.host_transfer_ns, 2048 / t.host_link_bytes_per_ns, 1e-9);
  EXPECT_NEAR(st.end_to_end_ns, st.latency_ns + st.execution_call_ns + st.host_transfer_ns,
              1e-6 * st.end_to_end_ns);
  EXPECT_NEAR(st.end_to_end_async_ns,
              st.latency_ns + 2 * t.execution_call_async_ns + st.host_transfer_ns,
              1e-6 * st.end_to_end_ns);
  EXPECT_LT(st.end_to_end_async_ns, st.end_to_end_ns);
}

TEST(Session, CallerProvidedOutputBufferIsWrittenInPlace) {
  Model model = load_two_partition();
  Session session(model);
  const auto x = input_values(1);
  std::vector<float> y(128, -1.0f);
  auto out = session.run({{"x", TensorView(x.data(), DType::f32, {4, 32})}},
                         {{"y", MutableTensorView(y.data(), DType::f32, {4, 32})}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(out->at("y").data(), y.data());
  EXPECT_FALSE(out->at("y").owns_data());
  std::vector<float> ry, rs;
  reference(x, ry, rs);
  EXPECT_NEAR(y[77], ry[77], 1e-3);

  std::vector<float> small(10);
  auto bad = session.run({{"x", TensorView(x.data(), DType::f32, {4, 32})}},
                         {{"y", MutableTensorView(small.data(), DType::f32, {10})}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("output buffer 'y' is f32[10], expected f32[4, 32]"));
}

TEST(Session, InputErrorsSayExpectedAndFound) {
  Model model = load_two_partition();
  Session session(model);
  const auto x = input_values(0);
  auto r = session.run({{"z", TensorView(x.data(), DType::f32, {4, 32})}});
  EXPECT_EQ(r.status().code(), StatusCode::not_found);
  EXPECT_THAT(r.status().message(), HasSubstr("unknown input 'z': expected one of x"));
  r = session.run({{"x", TensorView(x.data(), DType::f16, {4, 32})}});
  EXPECT_THAT(r.status().message(), HasSubstr("input 'x': dtype is f16, expected f32"));
  r = session.run({{"x", TensorView(x.data(), DType::f32, {128})}});
  EXPECT_THAT(r.status().message(), HasSubstr("input 'x': rank is 1 (shape [128]), expected 2"));
  r = session.run({{"x", TensorView(x.data(), DType::f32, {4, 31})}});
  EXPECT_THAT(r.status().message(), HasSubstr("input 'x': dim 1 is 31, expected 32"));
  r = session.run({});
  EXPECT_THAT(r.status().message(), HasSubstr("input 'x' is missing: expected f32[4, 32]"));
  r = session.run({{"x", TensorView(x.data(), DType::f32, {4, 32})},
                   {"x", TensorView(x.data(), DType::f32, {4, 32})}});
  EXPECT_THAT(r.status().message(), HasSubstr("given twice"));
}

TEST(Session, SymbolicDimsAreCheckedAgainstTheirRange) {
  // Host-only model: y = cumsum(x, 1) with x [batch, 3], batch in [1, 4].
  artifact::ArtifactWriter w;
  const uint32_t b = w.add_symbol("batch", 1, 4);
  const std::vector<artifact::Dim> dims = {artifact::Dim::sym(static_cast<int32_t>(b)),
                                           artifact::Dim::constant(3)};
  const uint32_t x = w.add_input("x", artifact::TensorDType::f32, dims);
  const uint32_t y = w.add_value("y", artifact::TensorDType::f32, dims);
  w.add_host_op({"aten.cumsum.default",
                 {artifact::Arg::tensor("self", int32_t(x)), artifact::Arg::integer("dim", 1)},
                 {y}});
  w.add_output("y", y);
  auto bytes = w.write_memory();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
  auto model = Model::load_from_memory(*bytes);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  ASSERT_TRUE(model->inputs()[0].dims[0].is_symbolic());
  EXPECT_EQ(model->inputs()[0].dims[0].max, 4);
  Session s(*model);
  std::vector<float> data(6 * 3, 1.0f);
  auto ok = s.run({{"x", TensorView(data.data(), DType::f32, {2, 3})}});
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok->at("y").shape(), (Shape{2, 3}));
  EXPECT_EQ(ok->at("y").as<float>()[5], 3.0f);
  EXPECT_TRUE(s.stats().shapes_prepared);
  // The same shapes again: prepared work is reused; other shapes prepare again, and a run after
  // them with the first shapes still gives the first results.
  std::vector<float> other(6 * 3, 2.0f);
  auto again = s.run({{"x", TensorView(other.data(), DType::f32, {2, 3})}});
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_FALSE(s.stats().shapes_prepared);
  EXPECT_EQ(again->at("y").as<float>()[5], 6.0f);
  auto four = s.run({{"x", TensorView(data.data(), DType::f32, {4, 3})}});
  ASSERT_TRUE(four.is_ok()) << four.status().message();
  EXPECT_TRUE(s.stats().shapes_prepared);
  EXPECT_EQ(four->at("y").shape(), (Shape{4, 3}));
  EXPECT_EQ(four->at("y").as<float>()[11], 3.0f);
  auto two = s.run({{"x", TensorView(data.data(), DType::f32, {2, 3})}});
  ASSERT_TRUE(two.is_ok()) << two.status().message();
  EXPECT_TRUE(s.stats().shapes_prepared);
  EXPECT_EQ(two->at("y").shape(), (Shape{2, 3}));
  EXPECT_EQ(ok->at("y").as<float>()[5], 3.0f);  // an earlier run's outputs are the caller's
  auto bad = s.run({{"x", TensorView(data.data(), DType::f32, {6, 3})}});
  EXPECT_EQ(bad.status().code(), StatusCode::out_of_range);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("input 'x': dim 0 gives symbol 'batch' = 6, expected [1, 4]"));
}

// check_inputs is Session::run's own check, public for services that refuse a request before
// they queue it: every kind of mismatch names the input, the expected and the found.
TEST(CheckInputs, NamesTheInputTheExpectedAndTheFound) {
  TensorSpec ids{"ids", DType::i64, {DimSpec{0, "b", 1, 1, 8}, DimSpec{0, "s", 2, 1, 64}}};
  ids.valid_range = ValueRange{0, 100, "it indexes the 100 rows of an embedding"};
  const TensorSpec mask{"mask", DType::f32, {DimSpec{0, "b", 1, 1, 8}, DimSpec{4, "", 1, 0, 0}}};
  const std::vector<TensorSpec> specs{ids, mask};
  std::vector<int64_t> idv(2 * 6, 7);
  std::vector<float> maskv(2 * 4, 1.0f);
  const auto views = [&](Shape id_shape, Shape mask_shape, DType id_dtype = DType::i64) {
    return std::vector<TensorView>{TensorView(idv.data(), id_dtype, std::move(id_shape)),
                                   TensorView(maskv.data(), DType::f32, std::move(mask_shape))};
  };

  Result<SymbolValues> ok = check_inputs(specs, views({2, 6}, {2, 4}));
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(*ok, (SymbolValues{{"b", 2}, {"s", 3}}));

  const auto error = [&](const std::vector<TensorView>& v) {
    Result<SymbolValues> r = check_inputs(specs, v);
    EXPECT_FALSE(r.is_ok());
    return r.status().message();
  };
  EXPECT_EQ(error({views({2, 6}, {2, 4})[0]}), "1 inputs given, expected 2 (ids, mask)");
  EXPECT_EQ(error(views({2, 6}, {2, 4}, DType::i32)), "input 'ids': dtype is i32, expected i64");
  EXPECT_THAT(error(views({12}, {2, 4})),
              HasSubstr("input 'ids': rank is 1 (shape [12]), expected 2"));
  EXPECT_THAT(error(views({2, 5}, {2, 4})),
              HasSubstr("input 'ids': dim 1 is 5, expected a multiple of 2"));
  EXPECT_EQ(error(views({2, 6}, {3, 4})),
            "input 'mask': dim 0 gives symbol 'b' = 3 but input 'ids' dim 0 gave 2");
  EXPECT_THAT(error(views({2, 6}, {2, 5})), HasSubstr("input 'mask': dim 1 is 5, expected 4"));
  EXPECT_THAT(error(views({9, 6}, {9, 4})),
              HasSubstr("input 'ids': dim 0 gives symbol 'b' = 9, expected [1, 8]"));
  idv[7] = 100;
  EXPECT_EQ(error(views({2, 6}, {2, 4})),
            "input 'ids': element [1, 1] is 100, outside [0, 100), it indexes the 100 rows of an "
            "embedding");
}

TEST(Session, ManyThreadsOnOneModelMatchASerialRun) {
  Model model = load_two_partition();
  constexpr int kThreads = 6, kRuns = 4;
  std::vector<std::vector<float>> serial(kThreads * kRuns);
  {
    Session s(model);
    for (int i = 0; i < kThreads * kRuns; ++i) {
      const auto x = input_values(i);
      auto out = s.run({{"x", TensorView(x.data(), DType::f32, {4, 32})}});
      ASSERT_TRUE(out.is_ok());
      const auto y = out->at("y").as<float>();
      serial[i].assign(y.begin(), y.end());
    }
  }
  std::vector<std::vector<float>> parallel(kThreads * kRuns);
  std::vector<std::thread> threads;
  std::vector<double> latency(kThreads * kRuns);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Session s(model);
      for (int r = 0; r < kRuns; ++r) {
        const int i = t * kRuns + r;
        const auto x = input_values(i);
        auto out = s.run({{"x", TensorView(x.data(), DType::f32, {4, 32})}});
        if (!out.is_ok()) return;
        const auto y = out->at("y").as<float>();
        parallel[i].assign(y.begin(), y.end());
        latency[i] = s.stats().device_ns;
      }
    });
  for (auto& th : threads) th.join();
  for (int i = 0; i < kThreads * kRuns; ++i) {
    EXPECT_EQ(parallel[i], serial[i]) << i;  // bit-identical
    EXPECT_EQ(latency[i], latency[0]);       // simulated time is deterministic
  }
}

TEST(Session, LoadFromFileAndErrorsMapToCodes) {
  const auto bytes = testing::two_partition_artifact();
  const std::string path = ::testing::TempDir() + "/two.nca";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  auto m = Model::load(path);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_TRUE(m->info().zero_copy_constants);
  EXPECT_EQ(m->info().file_bytes, bytes.size());

  auto missing = Model::load(path + ".nope");
  EXPECT_EQ(missing.status().code(), StatusCode::io_error);

  auto cut = Model::load_from_memory(std::span(bytes).first(bytes.size() - 1));
  EXPECT_EQ(cut.status().code(), StatusCode::data_loss);

  std::vector<std::byte> newer = bytes;
  newer[10] = std::byte{9};  // format minor 9
  auto v = Model::load_from_memory(newer);
  EXPECT_EQ(v.status().code(), StatusCode::incompatible_version);
  EXPECT_THAT(v.status().message(), HasSubstr("1.9"));
}

TEST(Session, TooFewTargetCoresIsASessionError) {
  Model model = load_two_partition();
  Session s(model, {.target_cores = -1});
  EXPECT_FALSE(s.status().is_ok());
  const float x[128] = {};
  auto r = s.run({{"x", TensorView(x, DType::f32, {4, 32})}});
  EXPECT_EQ(r.status().code(), StatusCode::failed_precondition);
}

}  // namespace
}  // namespace neuronc
