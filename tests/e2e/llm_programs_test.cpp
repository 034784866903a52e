// LLM serving programs (issue 17): models/scripts/export_causal_lm.py's prefill and decode
// programs of small random Llama and GPT-NeoX models, written with torch 2.14 and transformers
// over a static KV cache held as mutable buffers. Each program is compiled, run on the device
// model from the empty cache its file holds, and compared with the logits PyTorch computed.
// Generation across calls (the cache kept by the Session) is not here yet.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/difftest/difftest.h"

namespace neuronc {
namespace {

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

INSTANTIATE_TEST_SUITE_P(Families, LlmPrograms, ::testing::Values("llama_tiny", "gpt_neox_tiny"));

}  // namespace
}  // namespace neuronc
