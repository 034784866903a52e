// On-device sampling (issue 17): models/llm/llama_sampling_tiny is the tiny Llama exported with
// --on-device-sampling --batch 2 --decode-buckets 48, so each program ends in the sampler
// (top-k over the vocab, temperature, a uniform draw per row) and returns the next tokens, and
// its prefill reads only the last prompt token's hidden state. Everything, the top-k included,
// runs on the device. Greedy (top-k 1) generation gives transformers' tokens; sampling with
// generate's draws gives the tokens PyTorch's own run of the same programs chose.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "tests/difftest/difftest.h"
#include "tests/e2e/llm_test_util.h"
#include "tools/cli_output.h"
#include "tools/generation.h"
#include "tools/npy.h"

namespace neuronc {
namespace {

using testing::int64s;

const std::filesystem::path kLlm = std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm";
const std::filesystem::path kModel = kLlm / "llama_sampling_tiny";

std::filesystem::path scratch() {
  return testing::scratch_dir("neuronc_sampling");
}

std::string compile_to_file(const std::filesystem::path& model, const std::string& target, int tp,
                            const std::string& name) {
  compiler::CompileResult r;
  const std::string path = testing::compile_to_file(model, target, tp, scratch(), name, &r);
  EXPECT_TRUE(r.host_nodes.empty()) << "the sampler, top-k included, runs on the device";
  return path;
}

// [batch][n] rows of a reference .npy.
std::vector<std::vector<int64_t>> rows(const char* file) {
  const tools::NpyArray a = tools::read_npy((kModel / "reference" / file).string());
  const std::vector<int64_t> flat = int64s(a);
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(a.shape[0]));
  for (size_t b = 0; b < out.size(); ++b)
    out[b].assign(flat.begin() + static_cast<std::ptrdiff_t>(b * a.shape[1]),
                  flat.begin() + static_cast<std::ptrdiff_t>((b + 1) * a.shape[1]));
  return out;
}

nlohmann::json manifest() {
  std::ifstream f(kModel / "manifest.json");
  return nlohmann::json::parse(f);
}

// Each program's verify sample: row 0 greedy, row 1 top-k sampling at a random temperature and
// draw, the prefill's last token inside its bucket; PyTorch's tokens, exactly.
TEST(OnDeviceSampling, EachProgramMatchesPyTorch) {
  const nlohmann::json m = manifest();
  EXPECT_TRUE(m["sampling"]["on_device"].get<bool>());
  for (const auto& p : m["programs"]) {
    EXPECT_EQ(p["next_tokens"], (std::vector<int64_t>{2}));
    const std::string path = (kModel / p["file"].get<std::string>()).string();
    const difftest::CaseResult r = difftest::run_corpus_case(path, {{"trn1", 2}, {"trn2", 2}});
    EXPECT_EQ(r.outputs_compared, 2) << path;
    std::string failures;
    for (const std::string& f : r.failures) failures += "  " + f + "\n";
    EXPECT_TRUE(r.ok()) << path << ":\n" << failures;
  }
}

TEST(OnDeviceSampling, GreedyAndSampledTokensMatchTheReferencesAtTp1And2) {
  const std::vector<std::vector<int64_t>> prompt = rows("prompt.npy");
  const std::vector<std::vector<int64_t>> greedy = rows("tokens.npy");
  const std::vector<std::vector<int64_t>> sampled = rows("sampled.npy");
  const nlohmann::json ref = manifest()["reference"]["sampled"];
  tools::Sampling s;
  s.top_k = ref["top_k"];
  s.temperature = ref["temperature"];
  s.seed = ref["seed"];
  for (int tp : {1, 2}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const std::string art =
        compile_to_file(kModel, tp == 1 ? "trn1" : "trn2", tp, "tp" + std::to_string(tp) + ".nca");
    const tools::Generator gen(art, {});
    EXPECT_TRUE(gen.samples_on_device());
    const int n = static_cast<int>(greedy[0].size());
    EXPECT_EQ(gen.run(prompt, n).tokens, greedy);
    const tools::Generation g = gen.run(prompt, n, -1, s);
    EXPECT_EQ(g.tokens, sampled);
    // The same seed draws the same tokens; another seed, others.
    EXPECT_EQ(gen.run(prompt, n, -1, s).tokens, sampled);
    tools::Sampling other = s;
    other.seed = s.seed + 1;
    EXPECT_NE(gen.run(prompt, n, -1, other).tokens, sampled);
  }
}

int usage_error(const std::function<void()>& f, std::string* message) {
  try {
    f();
  } catch (const tools::CommandExit& e) {
    *message = e.message;
    return e.code;
  }
  return 0;
}

TEST(OnDeviceSampling, SamplingAskedOfLogitsProgramsOrBadParametersIsRefused) {
  const std::vector<std::vector<int64_t>> prompt = rows("prompt.npy");
  std::string why;
  // A logits program cannot sample: sampling runs on the device.
  const std::string logits = compile_to_file(kLlm / "llama_tiny", "trn1", 1, "logits.nca");
  const std::vector<int64_t> one_row =
      int64s(tools::read_npy((kLlm / "llama_tiny" / "reference" / "prompt.npy").string()));
  tools::Sampling s;
  s.top_k = 4;
  EXPECT_EQ(usage_error([&] { tools::Generator(logits, {}).run({one_row}, 4, -1, s); }, &why),
            tools::kExitUsage);
  EXPECT_NE(why.find("--on-device-sampling"), std::string::npos) << why;
  // A temperature of 0, a top-k of 0.
  const std::string art = compile_to_file(kModel, "trn1", 1, "sampling.nca");
  const tools::Generator gen(art, {});
  s.temperature = 0;
  EXPECT_EQ(usage_error([&] { gen.run(prompt, 4, -1, s); }, &why), tools::kExitUsage);
  EXPECT_NE(why.find("temperature"), std::string::npos) << why;
  s = {};
  s.top_k = 0;
  EXPECT_EQ(usage_error([&] { gen.run(prompt, 4, -1, s); }, &why), tools::kExitUsage);
  // A prefill program that returns logits beside a decode program that samples.
  const std::string prefill = compile_to_file(kLlm / "llama_tiny" / "prefill_16" / "model.pt2",
                                              "trn1", 1, "logits_prefill.nca");
  EXPECT_EQ(usage_error([&] { tools::Generator(art, {prefill}); }, &why), tools::kExitUsage);
  EXPECT_NE(why.find("export both with or both without --on-device-sampling"), std::string::npos)
      << why;
}

}  // namespace
}  // namespace neuronc
