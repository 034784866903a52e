// One neuronc::Model shared by many threads: 16 threads x 200 runs with varied inputs must give
// exactly the bytes a single serial Session gives, and a Session that fails (bad input, failed
// creation) must leave the Model and every other Session working. The model is the committed
// MLP fixture compiled in-process, so the test exercises what codegen really emits.
// Runs under ThreadSanitizer in CI (label `concurrency`).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "compiler/compiler.h"
#include "neuronc/neuronc.h"

namespace neuronc {
namespace {

using ::testing::HasSubstr;

constexpr int kThreads = 16;
constexpr int kRunsPerThread = 200;
constexpr int kDistinctInputs = 64;  // run r of thread t uses input (t * kRunsPerThread + r) % 64

// The compiled fixture, loaded once for the whole test program.
const Model& mlp_model() {
  static const Model model = [] {
    compiler::CompileRequest req;
    req.model = std::string(NEURONC_SOURCE_DIR) + "/models/mlp/model.pt2";
    req.threads = 1;
    const compiler::CompileResult r = compiler::compile_model(req);
    auto m = Model::load_from_memory(r.artifact);
    if (!m) {
      ADD_FAILURE() << "load: " << m.status().to_string();
      std::abort();
    }
    return std::move(m).value();
  }();
  return model;
}

// Deterministic input `seed` for every model input (f32 only: the MLP's signature).
struct Inputs {
  std::vector<std::vector<float>> storage;
  std::vector<NamedInput> named;
};

Inputs make_inputs(const Model& model, int seed) {
  Inputs in;
  in.storage.reserve(model.inputs().size());
  for (const TensorSpec& spec : model.inputs()) {
    Shape shape;
    for (const DimSpec& d : spec.dims) shape.push_back(d.is_symbolic() ? d.coeff * d.min : d.value);
    std::vector<float> v(static_cast<size_t>(numel(shape)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = 3.0f * std::sin(0.61f * static_cast<float>(i) + 1.7f * static_cast<float>(seed));
    in.storage.push_back(std::move(v));
    in.named.push_back({spec.name, TensorView(in.storage.back().data(), spec.dtype, shape)});
  }
  return in;
}

// Every output's bytes, concatenated in signature order.
std::vector<std::byte> output_bytes(const Outputs& out) {
  std::vector<std::byte> b;
  for (const std::string& name : out.names()) {
    const Tensor& t = out.at(name);
    const auto* p = static_cast<const std::byte*>(t.data());
    b.insert(b.end(), p, p + t.nbytes());
  }
  return b;
}

// Serial results for the distinct inputs, from one Session.
const std::vector<std::vector<std::byte>>& serial_results() {
  static const std::vector<std::vector<std::byte>> results = [] {
    std::vector<std::vector<std::byte>> r;
    Session s(mlp_model());
    EXPECT_TRUE(s.status().is_ok()) << s.status().to_string();
    for (int i = 0; i < kDistinctInputs; ++i) {
      Inputs in = make_inputs(mlp_model(), i);
      auto out = s.run(in.named);
      EXPECT_TRUE(out.is_ok()) << out.status().to_string();
      r.push_back(out.is_ok() ? output_bytes(*out) : std::vector<std::byte>());
    }
    return r;
  }();
  return results;
}

TEST(Concurrency, SerialResultsDependOnTheInput) {
  const auto& serial = serial_results();
  ASSERT_EQ(serial.size(), static_cast<size_t>(kDistinctInputs));
  EXPECT_FALSE(serial[0].empty());
  EXPECT_NE(serial[0], serial[1]);  // the inputs really vary the result
}

TEST(Concurrency, SixteenThreadsTimesTwoHundredRunsMatchTheSerialResults) {
  const auto& serial = serial_results();
  const Model& model = mlp_model();
  std::atomic<int> mismatches{0}, errors{0}, done{0};
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Session s(model);
      if (!s.status().is_ok()) {
        first_error[t] = s.status().to_string();
        ++errors;
        return;
      }
      for (int r = 0; r < kRunsPerThread; ++r) {
        const int k = (t * kRunsPerThread + r) % kDistinctInputs;
        Inputs in = make_inputs(model, k);
        auto out = s.run(in.named);
        if (!out.is_ok()) {
          if (first_error[t].empty()) first_error[t] = out.status().to_string();
          ++errors;
          continue;
        }
        if (output_bytes(*out) != serial[k]) ++mismatches;
        ++done;
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(first_error[t], "") << "thread " << t;
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "runs whose outputs differ from the serial run";
  EXPECT_EQ(done.load(), kThreads * kRunsPerThread);
}

// Threads sharing one Model: half of them keep feeding their Session bad inputs (every kind of
// error run() reports), then a good one; the others run good inputs throughout. Every good run
// everywhere must still match the serial result, and every bad run must be a clear error.
TEST(Concurrency, FailingSessionsLeaveTheModelAndOtherSessionsWorking) {
  const auto& serial = serial_results();
  const Model& model = mlp_model();
  ASSERT_FALSE(model.inputs().empty());
  const TensorSpec& spec0 = model.inputs()[0];
  std::atomic<int> mismatches{0}, unexpected{0};
  std::vector<std::string> notes(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Session s(model);
      for (int r = 0; r < 25; ++r) {
        const int k = (t * 25 + r) % kDistinctInputs;
        Inputs good = make_inputs(model, k);
        if (t % 2 == 1) {
          // Bad: wrong dtype, wrong rank, unknown name, missing input, null data, duplicate.
          std::vector<std::vector<NamedInput>> bad;
          const TensorView& v = good.named[0].tensor;
          bad.push_back({{spec0.name, TensorView(v.data(), DType::i32, v.shape())}});
          Shape longer = v.shape();
          longer.push_back(1);
          bad.push_back({{spec0.name, TensorView(v.data(), v.dtype(), longer)}});
          bad.push_back({{"no_such_input", v}});
          bad.push_back({});
          bad.push_back({{spec0.name, TensorView(nullptr, v.dtype(), v.shape())}});
          bad.push_back({good.named[0], good.named[0]});
          for (const auto& b : bad) {
            auto out = s.run(b);
            if (out.is_ok() || out.status().message().empty()) {
              ++unexpected;
              notes[t] = "a bad input was accepted or gave no message";
            }
          }
        }
        auto out = s.run(good.named);
        if (!out.is_ok()) {
          ++unexpected;
          notes[t] = out.status().to_string();
          continue;
        }
        if (output_bytes(*out) != serial[k]) ++mismatches;
      }
    });
  // Meanwhile a Session that cannot be created (more cores than it may use) fails alone.
  SessionOptions too_few;
  too_few.target_cores = -1;
  Session failed(model, too_few);
  EXPECT_FALSE(failed.status().is_ok());
  Inputs in = make_inputs(model, 0);
  auto r = failed.run(in.named);
  EXPECT_EQ(r.status().code(), StatusCode::failed_precondition);
  EXPECT_THAT(r.status().message(), HasSubstr("session creation failed"));
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(notes[t], "") << "thread " << t;
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);

  // The Model is still usable by new sessions afterwards.
  Session after(model);
  auto out = after.run(make_inputs(model, 5).named);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(output_bytes(*out), serial[5]);
}

// Copies of a Model handle, created and dropped on many threads while others run, keep the
// shared mapping alive exactly as long as needed.
TEST(Concurrency, ModelCopiesAcrossThreads) {
  const auto& serial = serial_results();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 10; ++r) {
        Model copy = mlp_model();  // NOLINT(performance-unnecessary-copy-initialization)
        Session s(copy);
        const int k = (t + r) % kDistinctInputs;
        Inputs in = make_inputs(copy, k);
        auto out = s.run(in.named);
        if (!out.is_ok() || output_bytes(*out) != serial[k]) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// A tensor-parallel program's cores are simulated side by side (oneTBB, a log per core applied
// between collectives), from two sessions at once: the results equal the one-thread run's.
// Under ThreadSanitizer this checks the sessions and the collective hand-offs; accesses inside
// the cores' oneTBB tasks are left to the device model's race checker (tests/sanitizers/
// tsan.supp says why).
TEST(Concurrency, TensorParallelCoresSideBySideMatchOneThread) {
  compiler::CompileRequest req;
  req.model = std::string(NEURONC_SOURCE_DIR) + "/models/llm/llama_tiny/decode/model.pt2";
  req.target = "trn1";
  req.tp = 2;
  req.threads = 1;
  auto model = Model::load_from_memory(compiler::compile_model(req).artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto run = [&](bool parallel) {
    SessionOptions so;
    so.parallel = parallel;
    Session s(*model, so);
    std::vector<std::byte> bytes;
    Tensor ids(DType::i64, {1, 1}), pos(DType::i64, {1});
    for (int64_t t = 0; t < 3; ++t) {
      *static_cast<int64_t*>(ids.mutable_data()) = 9 + 5 * t;
      *static_cast<int64_t*>(pos.mutable_data()) = t;
      auto out = s.run({{"input_ids", ids.view()}, {"cache_position", pos.view()}});
      if (!out.is_ok()) return std::vector<std::byte>{};
      const Tensor& l = out->at(model->outputs()[0].name);
      const auto* b = static_cast<const std::byte*>(l.data());
      bytes.insert(bytes.end(), b, b + l.nbytes());
    }
    return bytes;
  };
  const std::vector<std::byte> serial = run(false);
  ASSERT_FALSE(serial.empty());
  std::vector<std::vector<std::byte>> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) threads.emplace_back([&, t] { got[t] = run(true); });
  for (auto& th : threads) th.join();
  EXPECT_TRUE(got[0] == serial);
  EXPECT_TRUE(got[1] == serial);
}

}  // namespace
}  // namespace neuronc
