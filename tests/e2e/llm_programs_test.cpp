// LLM serving programs (issue 17): models/scripts/export_causal_lm.py's prefill and decode
// programs of small random Llama and GPT-NeoX models, written with torch 2.14 and transformers
// over a static KV cache held as mutable buffers. Each program is compiled, run on the device
// model from the empty cache its file holds, and compared with the logits PyTorch computed.
// The decode program then generates from the reference prompt, its KV cache kept by the
// Session from one call to the next, and must give transformers' greedy tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "frontend/load.h"
#include "neuronc/neuronc.h"
#include "tests/difftest/difftest.h"
#include "tests/e2e/llm_test_util.h"
#include "tools/npy.h"

namespace neuronc {
namespace {

using testing::argmax_at;
using testing::int64s;

const std::filesystem::path kLlm = std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm";

nlohmann::json manifest(const std::string& model) {
  std::ifstream f(kLlm / model / "manifest.json");
  return nlohmann::json::parse(f);
}

class LlmPrograms : public ::testing::TestWithParam<std::string> {};

TEST_P(LlmPrograms, ManifestDescribesTheCacheAndPrograms) {
  const nlohmann::json m = manifest(GetParam());
  EXPECT_EQ(m["format"], "neuronc-causal-lm/1");
  EXPECT_TRUE(m["weights"].get<bool>());
  // One key and one value buffer [batch, kv heads, max_seq, head dim] per layer.
  ASSERT_EQ(m["kv_cache"].size(), 2 * m["layers"].get<size_t>());
  for (const auto& b : m["kv_cache"]) {
    EXPECT_EQ(b["shape"][0], m["batch"]);
    EXPECT_EQ(b["shape"][1], m["kv_heads"]);
    EXPECT_EQ(b["shape"][2], m["max_seq"]);
  }
  std::vector<std::string> kinds;
  for (const auto& p : m["programs"]) kinds.push_back(p["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"prefill", "decode"}));
}

TEST_P(LlmPrograms, EachProgramMatchesPyTorch) {
  const nlohmann::json m = manifest(GetParam());
  for (const auto& p : m["programs"]) {
    const std::string path = (kLlm / GetParam() / p["file"].get<std::string>()).string();
    const difftest::CaseResult r = difftest::run_corpus_case(path, {{"trn1", 2}, {"trn2", 2}});
    EXPECT_EQ(r.configs_run, 2) << path;
    EXPECT_EQ(r.outputs_compared, 2) << path;
    std::string failures;
    for (const std::string& f : r.failures) failures += "  " + f + "\n";
    EXPECT_TRUE(r.ok()) << path << ":\n" << failures;
  }
}

// The decode program, fed the prompt one token at a time and then its own greedy choice, with
// the KV cache as Session state: the 64 tokens transformers' generate() chose (fp32, trn1).
TEST_P(LlmPrograms, DecodeGeneratesTheReferenceTokensWithTheCacheAsSessionState) {
  const nlohmann::json m = manifest(GetParam());
  const std::string path = (kLlm / GetParam() / "decode" / "model.pt2").string();
  compiler::CompileRequest req;
  req.model = path;
  req.target = "trn1";
  compiler::CompileResult r = compiler::compile_program(frontend::load_program(path), req);
  auto model = Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  // Every cache buffer is state, not an output, and nothing else is (the export binds the
  // cache's write position to cache_position); the cache's dtype and shape as exported.
  std::vector<std::string> states;
  for (const TensorSpec& s : model->states()) states.push_back(s.name);
  for (const auto& b : m["kv_cache"])
    EXPECT_NE(std::find(states.begin(), states.end(), b["name"].get<std::string>()), states.end())
        << b["name"];
  EXPECT_EQ(states.size(), m["kv_cache"].size());
  ASSERT_EQ(model->outputs().size(), 1u) << "logits only";
  EXPECT_GE(model->info().format_minor, 2);
  const TensorSpec& k0 = model->states()[static_cast<size_t>(
      std::find(states.begin(), states.end(), m["kv_cache"][0]["name"].get<std::string>()) -
      states.begin())];
  EXPECT_EQ(k0.dtype, DType::f32);
  ASSERT_EQ(k0.dims.size(), 4u);
  EXPECT_EQ(k0.dims[2].value, m["max_seq"].get<int64_t>());

  const std::vector<int64_t> prompt =
      int64s(tools::read_npy((kLlm / GetParam() / "reference" / "prompt.npy").string()));
  const std::vector<int64_t> want =
      int64s(tools::read_npy((kLlm / GetParam() / "reference" / "tokens.npy").string()));
  const int64_t max_seq = m["max_seq"];
  const size_t steps = std::min<size_t>(want.size(), static_cast<size_t>(max_seq) - prompt.size());
  ASSERT_EQ(steps, 64u) << "the reference's 64 new tokens fit the cache";

  Session session(*model);
  ASSERT_TRUE(session.status().is_ok());
  const std::string ids_name = model->inputs()[0].name, pos_name = model->inputs()[1].name;
  int64_t pos = 0;
  // Runs one token at `pos` and returns the argmax of its logits.
  auto step = [&](int64_t token) -> int64_t {
    Tensor ids(DType::i64, {1, 1}), where(DType::i64, {1});
    std::memcpy(ids.mutable_data(), &token, 8);
    std::memcpy(where.mutable_data(), &pos, 8);
    auto out = session.run({{ids_name, ids.view()}, {pos_name, where.view()}});
    EXPECT_TRUE(out.is_ok()) << out.status().message();
    if (!out.is_ok()) return -1;
    ++pos;
    const Tensor& logits = out->at(model->outputs()[0].name);
    const float* l = static_cast<const float*>(logits.data());
    const int64_t vocab = logits.shape().back();
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (l[i] > l[best]) best = i;
    return best;
  };
  int64_t next = -1;
  for (int64_t t : prompt) next = step(t);
  std::vector<int64_t> got;
  for (size_t i = 0; i < steps; ++i) {
    got.push_back(next);
    if (i + 1 < steps) next = step(next);
  }
  EXPECT_EQ(got, std::vector<int64_t>(want.begin(), want.begin() + static_cast<int64_t>(steps)));
  // The cache update is a scatter on the device: a step is one device call, and the host only
  // converts the two int64 inputs.
  EXPECT_EQ(session.stats().device_calls, 1u);
  EXPECT_EQ(session.stats().host_ops, 2u);
  EXPECT_EQ(model->info().format_minor, 3);

  // The cache holds what the runs wrote: the filled positions are no longer the zeros it
  // started from, and reset_state() brings the zeros back.
  const Tensor* cache = session.state(k0.name);
  ASSERT_NE(cache, nullptr);
  auto nonzero = [](const Tensor& t) {
    const float* f = static_cast<const float*>(t.data());
    size_t n = 0;
    for (int64_t i = 0; i < t.numel(); ++i) n += f[i] != 0.0f;
    return n;
  };
  EXPECT_GT(nonzero(*cache), 0u);
  session.reset_state();
  EXPECT_EQ(nonzero(*session.state(k0.name)), 0u);
  // A wrong shape is refused, naming the state; an unknown name lists the states.
  Tensor wrong(DType::f32, {1});
  const Status bad = session.set_state(k0.name, wrong.view());
  EXPECT_EQ(bad.code(), StatusCode::invalid_argument);
  EXPECT_NE(bad.message().find(k0.name), std::string::npos) << bad.message();
  EXPECT_EQ(session.set_state("no.such.buffer", wrong.view()).code(), StatusCode::not_found);
}

// `neuronc compile DIR` of the export: one artifact whose entries are the prefill and decode
// programs over one state. The prefill entry, over the prompt padded to its 16-token bucket,
// fills the session's KV cache in one call; the decode entry then generates transformers' 64
// greedy tokens from it. Exact because the pad positions follow the prompt: the causal mask
// hides them, and the decode steps overwrite them.
TEST_P(LlmPrograms, OneArtifactPrefillsAndDecodesTheReferenceTokens) {
  compiler::CompileRequest req;
  req.model = (kLlm / GetParam()).string();
  req.target = "trn1";
  compiler::CompileResult r = compiler::compile_model(req);
  auto model = Model::load_from_memory(r.artifact);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  ASSERT_EQ(model->entries().size(), 2u);
  EXPECT_EQ(model->entries()[0].name, "prefill_16");
  EXPECT_EQ(model->entries()[1].name, "decode");
  EXPECT_EQ(model->inputs()[0].dims[1].value, 16);  // the first entry's
  // The entries hold one copy of the weights in HBM: the decode program alone needs as many
  // constant bytes as both together (its weights are the prefill's; only a few compile-time
  // constants of its own shapes differ).
  compiler::CompileRequest dreq = req;
  dreq.model = (kLlm / GetParam() / "decode" / "model.pt2").string();
  auto decode_only = Model::load_from_memory(
      compiler::compile_program(frontend::load_program(dreq.model), dreq).artifact);
  ASSERT_TRUE(decode_only.is_ok());
  EXPECT_LT(model->info().constant_bytes, decode_only->info().constant_bytes * 5 / 4);
  const std::vector<int64_t> prompt =
      int64s(tools::read_npy((kLlm / GetParam() / "reference" / "prompt.npy").string()));
  const std::vector<int64_t> want =
      int64s(tools::read_npy((kLlm / GetParam() / "reference" / "tokens.npy").string()));
  Session session(*model);
  const std::vector<int64_t> got =
      testing::prefill_and_decode(*model, session, prompt, want.size());
  Tensor ids(DType::i64, {1, 16}), pos(DType::i64, {16});
  EXPECT_EQ(got, want);

  // Each entry checks its own inputs; an unknown entry lists the entries.
  EXPECT_EQ(session.run("decode", {{"input_ids", ids.view()}, {"cache_position", pos.view()}})
                .status()
                .code(),
            StatusCode::invalid_argument);
  const auto unknown = session.run("prefill_99", {});
  EXPECT_EQ(unknown.status().code(), StatusCode::not_found);
  EXPECT_NE(unknown.status().message().find("prefill_16, decode"), std::string::npos)
      << unknown.status().message();
}

INSTANTIATE_TEST_SUITE_P(Families, LlmPrograms,
                         ::testing::Values("llama_tiny", "mistral_tiny", "qwen2_tiny", "gemma_tiny",
                                           "phi3_tiny", "gpt_neox_tiny", "llama_heads8_tiny"));

}  // namespace
}  // namespace neuronc
