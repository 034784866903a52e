// Tensor parallelism (issue 17, `compile --tp N`): each family's prefill + decode export compiled
// over N NeuronCores (attention and MLP split Megatron-style, the KV cache split by heads where
// they divide) generates transformers' 64 greedy tokens, as the one-core artifact does. The
// fixtures have 4 query and 2 KV heads (GPT-NeoX 4 and 4): TP 2 splits everything and TP 4 also
// replicates each KV head over two cores (GQA). llama_heads8_tiny (8 query, 4 KV heads) runs at
// TP 2, 4 and 8, replicating its KV heads at 8. A decode program alone at TP 8 over 4 heads
// exercises the gathers that keep an indivisible part whole.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "compiler/compiler.h"
#include "frontend/load.h"
#include "neuronc/neuronc.h"
#include "tests/e2e/llm_test_util.h"
#include "tests/testing/thread_rendezvous.h"
#include "tools/npy.h"

namespace neuronc {
namespace {

using testing::int64s;

const std::filesystem::path kLlm = std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm";

compiler::CompileResult compile(const std::string& family, const std::string& target, int tp) {
  compiler::CompileRequest req;
  req.model = (kLlm / family).string();
  req.target = target;
  req.tp = tp;
  return compiler::compile_model(req);
}

using Config = std::tuple<std::string, std::string, int>;  // family, target, cores

class TensorParallelGeneration : public ::testing::TestWithParam<Config> {};

TEST_P(TensorParallelGeneration, GeneratesTheReferenceTokens) {
  const auto& [family, target, tp] = GetParam();
  compiler::CompileResult r = compile(family, target, tp);
  auto model = Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_EQ(model->info().num_cores, static_cast<uint32_t>(tp));
  std::ifstream mf(kLlm / family / "manifest.json");
  const nlohmann::json m = nlohmann::json::parse(mf);
  const int64_t layers = m["layers"], kv_heads = m["kv_heads"];
  // Each core keeps its own copy of every cache buffer: "<fqn>@core<r>".
  ASSERT_EQ(model->states().size(), m["kv_cache"].size() * static_cast<size_t>(tp));
  EXPECT_EQ(model->states()[0].name, m["kv_cache"][0]["name"].get<std::string>() + "@core0");
  // Two all-reduces per layer (attention output, MLP down) in each of the two programs when the
  // heads divide over the cores; else attention runs whole on every core (its inputs gathered)
  // and only the MLP's down projection is row-parallel.
  const int64_t heads = m["attention_heads"];
  const int64_t per_layer =
      heads % tp == 0 && (kv_heads % tp == 0 || (tp % kv_heads == 0 && heads / tp >= 1)) ? 2 : 1;
  EXPECT_EQ(r.tensor_parallel.row_parallel, per_layer * 2 * layers);
  EXPECT_EQ(r.tensor_parallel.all_reduces, per_layer * 2 * layers);
  if (per_layer == 2) {
    // The cache is split by its heads: each core's chunk is kv_heads / tp heads, or with fewer
    // KV heads than cores, the one head its group of cores shares (NxD's KV replication).
    EXPECT_EQ(r.tensor_parallel.split_states.size(), m["kv_cache"].size());
    EXPECT_EQ(model->states()[0].dims[1].value, std::max<int64_t>(1, kv_heads / tp));
  }
  const std::vector<int64_t> prompt =
      int64s(tools::read_npy((kLlm / family / "reference" / "prompt.npy").string()));
  const std::vector<int64_t> want =
      int64s(tools::read_npy((kLlm / family / "reference" / "tokens.npy").string()));
  Session session(*model);
  ASSERT_TRUE(session.status().is_ok()) << session.status().message();
  EXPECT_EQ(testing::prefill_and_decode(*model, session, prompt, want.size()), want);
}

INSTANTIATE_TEST_SUITE_P(
    Families, TensorParallelGeneration,
    ::testing::Values(Config{"llama_tiny", "trn1", 2}, Config{"mistral_tiny", "trn1", 2},
                      Config{"qwen2_tiny", "trn1", 2}, Config{"gemma_tiny", "trn1", 2},
                      Config{"phi3_tiny", "trn1", 2}, Config{"gpt_neox_tiny", "trn1", 2},
                      Config{"llama_tiny", "trn2", 4}, Config{"phi3_tiny", "trn2", 4},
                      Config{"gpt_neox_tiny", "trn2", 4}, Config{"llama_heads8_tiny", "trn1", 2},
                      Config{"llama_heads8_tiny", "trn2", 4},
                      Config{"llama_heads8_tiny", "trn1", 8}),
    [](const ::testing::TestParamInfo<Config>& i) {
      return std::get<0>(i.param) + "_" + std::get<1>(i.param) + "_tp" +
             std::to_string(std::get<2>(i.param));
    });

// The same decode steps from the same cache on 1, 2 and 8 cores: logits agree to fp32 rounding
// (the all-reduce adds each dot product's parts in another order). At 8 cores the 4 heads cannot
// split 8 ways: pairs of cores share a head and attention's operands are gathered (a program
// alone, with no manifest to refuse the degree).
TEST(TensorParallel, DecodeLogitsMatchOneCore) {
  const std::string path = (kLlm / "llama_tiny" / "decode" / "model.pt2").string();
  std::vector<std::vector<float>> logits;
  for (int tp : {1, 2, 8}) {
    compiler::CompileRequest req;
    req.model = path;
    req.target = tp == 8 ? "trn2" : "trn1";
    req.tp = tp;
    auto model = Model::load_from_memory(
        compiler::compile_program(frontend::load_program(path), req).artifact);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    Session session(*model);
    Tensor ids(DType::i64, {1, 1}), pos(DType::i64, {1});
    std::vector<float> last;
    for (int64_t t = 0; t < 5; ++t) {
      *static_cast<int64_t*>(ids.mutable_data()) = 3 + 7 * t;
      *static_cast<int64_t*>(pos.mutable_data()) = t;
      auto out = session.run({{"input_ids", ids.view()}, {"cache_position", pos.view()}});
      ASSERT_TRUE(out.is_ok()) << out.status().message();
      const Tensor& l = out->at(model->outputs()[0].name);
      last.assign(static_cast<const float*>(l.data()),
                  static_cast<const float*>(l.data()) + l.numel());
    }
    logits.push_back(last);
  }
  for (size_t k = 1; k < logits.size(); ++k) {
    ASSERT_EQ(logits[0].size(), logits[k].size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < logits[0].size(); ++i) {
      diff = std::max<double>(diff, std::fabs(logits[0][i] - logits[k][i]));
      norm = std::max<double>(norm, std::fabs(logits[0][i]));
    }
    EXPECT_GT(norm, 0.1);
    EXPECT_LT(diff, 1e-5 * norm) << "max |TP1 - TP" << (k == 1 ? 2 : 8) << "| " << diff;
  }
}

// The cores of a multi-core program run side by side (each core's instructions in order, the
// cores meeting at collectives): bit-identical to running every instruction in completion order
// on one thread, in outputs, the KV cache the steps leave and simulated time, with the race
// checker clean.
TEST(TensorParallel, CoresSimulatedInParallelAreBitIdentical) {
  const std::string path = (kLlm / "llama_tiny" / "decode" / "model.pt2").string();
  compiler::CompileRequest req;
  req.model = path;
  req.target = "trn2";
  req.tp = 8;
  auto model = Model::load_from_memory(
      compiler::compile_program(frontend::load_program(path), req).artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  struct Trace {
    std::vector<std::vector<std::byte>> bytes;  // each step's outputs, then the states
    std::vector<double> device_ns;
  };
  auto run = [&](bool parallel, bool check_races) {
    SessionOptions so;
    so.parallel = parallel;
    so.check_races = check_races;
    Session session(*model, so);
    Trace tr;
    Tensor ids(DType::i64, {1, 1}), pos(DType::i64, {1});
    for (int64_t t = 0; t < 4; ++t) {
      *static_cast<int64_t*>(ids.mutable_data()) = 5 + 11 * t;
      *static_cast<int64_t*>(pos.mutable_data()) = t;
      auto out = session.run({{"input_ids", ids.view()}, {"cache_position", pos.view()}});
      EXPECT_TRUE(out.is_ok()) << out.status().message();
      if (!out.is_ok()) return tr;
      for (const auto& o : model->outputs()) {
        const Tensor& v = out->at(o.name);
        const auto* b = static_cast<const std::byte*>(v.data());
        tr.bytes.emplace_back(b, b + v.nbytes());
      }
      tr.device_ns.push_back(session.stats().device_ns);
    }
    for (const auto& st : model->states()) {
      const Tensor* v = session.state(st.name);
      const auto* b = static_cast<const std::byte*>(v->data());
      tr.bytes.emplace_back(b, b + v->nbytes());
    }
    return tr;
  };
  const Trace serial = run(false, false), parallel = run(true, false);
  ASSERT_FALSE(serial.bytes.empty());
  EXPECT_TRUE(serial.bytes == parallel.bytes);
  EXPECT_EQ(serial.device_ns, parallel.device_ns);
  const Trace checked = run(true, true);
  EXPECT_TRUE(checked.bytes == parallel.bytes);
}

// The cores split over processes (`mpirun -np K neuronc generate`; threads stand in for the
// ranks here, tests/tools/generate_mpi_test.sh runs mpirun): every process generates the
// reference tokens and ends with one process's KV cache bytes and simulated times, 4 cores over
// 2 processes and unevenly over 3.
TEST(TensorParallel, CoresSplitOverProcessesGiveOneProcesssTokensCacheAndTime) {
  compiler::CompileResult r = compile("llama_tiny", "trn2", 4);
  auto model = Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::vector<int64_t> prompt =
      int64s(tools::read_npy((kLlm / "llama_tiny" / "reference" / "prompt.npy").string()));
  const std::vector<int64_t> want =
      int64s(tools::read_npy((kLlm / "llama_tiny" / "reference" / "tokens.npy").string()));
  struct Run {
    std::vector<int64_t> tokens;
    std::vector<std::vector<std::byte>> cache;
    double device_ns = 0;  // of the last step
    uint64_t instructions = 0;
  };
  auto generate = [&](Session& session, Run& out) {
    out.tokens = testing::prefill_and_decode(*model, session, prompt, 24);
    out.device_ns = session.stats().device_ns;
    out.instructions = session.stats().instructions;
    for (const auto& st : model->states()) {
      const Tensor* v = session.state(st.name);
      const auto* b = static_cast<const std::byte*>(v->data());
      out.cache.emplace_back(b, b + v->nbytes());
    }
  };
  Run one;
  {
    Session session(*model);
    ASSERT_TRUE(session.status().is_ok()) << session.status().message();
    generate(session, one);
  }
  ASSERT_EQ(one.tokens, std::vector<int64_t>(want.begin(), want.begin() + 24));
  using ThreadProcess =
      testing::ThreadProcess<ProcessGroup, Result<std::vector<std::vector<std::byte>>>>;
  for (int processes : {2, 3}) {
    testing::ThreadRendezvous rendezvous(processes);
    std::vector<Run> runs(processes);
    std::vector<std::thread> threads;
    for (int k = 0; k < processes; ++k)
      threads.emplace_back([&, k] {
        ThreadProcess group(rendezvous, k);
        SessionOptions so;
        so.processes = &group;
        Session session(*model, so);
        if (session.status().is_ok()) generate(session, runs[k]);
      });
    for (auto& t : threads) t.join();
    for (int k = 0; k < processes; ++k) {
      SCOPED_TRACE("process " + std::to_string(k) + " of " + std::to_string(processes));
      EXPECT_EQ(runs[k].tokens, one.tokens);
      EXPECT_TRUE(runs[k].cache == one.cache);
      EXPECT_EQ(runs[k].device_ns, one.device_ns);
      EXPECT_EQ(runs[k].instructions, one.instructions);
    }
  }
}

// A degree the target's instances do not run, or debug values, are refused before compiling.
TEST(TensorParallel, RefusesWhatItCannotDo) {
  try {
    compile("llama_tiny", "trn1", 4);
    FAIL() << "trn1 has no 4-core tensor-parallel group";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("1, 2, 8, 16 or 32"), std::string::npos) << e.what();
  }
  // 8 cores would cut the fixture's 4 attention heads (trn2 runs 8).
  try {
    compile("llama_tiny", "trn2", 8);
    FAIL() << "4 heads do not split over 8 cores";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("4 attention heads (2 KV heads) do not split over 8"),
              std::string::npos)
        << e.what();
  }
  const std::string path = (kLlm / "llama_tiny" / "decode" / "model.pt2").string();
  compiler::CompileRequest req;
  req.model = path;
  req.tp = 2;
  req.debug_all_values = true;
  EXPECT_THROW(compiler::compile_program(frontend::load_program(path), req), std::exception);
}

}  // namespace
}  // namespace neuronc
