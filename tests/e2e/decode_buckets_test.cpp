// Decode context-length buckets (issue 17): models/llm/llama_buckets_tiny is the tiny Llama
// exported with --max-seq 80 --decode-buckets 32,48,64, so besides `decode` (the whole cache) it
// has decode_32, decode_48 and decode_64, each writing its token into the whole cache but
// attending over its first C positions only. Generation runs each step in the smallest bucket
// beyond its position, gives transformers' greedy tokens at TP 1 and 2, and a step in a smaller
// bucket reads less of the cache. Entries that name a bucket the cache cannot hold, or that
// leave positions no bucket covers, are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
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

const std::filesystem::path kModel =
    std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm" / "llama_buckets_tiny";

std::filesystem::path scratch() {
  return testing::scratch_dir("neuronc_decode_buckets");
}

// Compiles the export directory `dir` for `target` over `tp` cores into a file; its path.
std::string compile_dir(const std::filesystem::path& dir, const std::string& target, int tp,
                        const std::string& name) {
  return testing::compile_to_file(dir, target, tp, scratch(), name);
}

std::vector<int64_t> reference(const char* file) {
  return int64s(tools::read_npy((kModel / "reference" / file).string()));
}

TEST(DecodeBuckets, ManifestListsOneDecodeProgramPerBucket) {
  std::ifstream f(kModel / "manifest.json");
  const nlohmann::json m = nlohmann::json::parse(f);
  EXPECT_EQ(m["decode_buckets"].get<std::vector<int64_t>>(),
            (std::vector<int64_t>{32, 48, 64, 80}));
  std::vector<std::string> names;
  for (const auto& p : m["programs"]) {
    names.push_back(p["name"]);
    if (p["kind"] == "decode") {
      EXPECT_EQ(p["name"], p["context"] == m["max_seq"]
                               ? std::string("decode")
                               : "decode_" + std::to_string(p["context"].get<int64_t>()));
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"prefill_16", "decode_32", "decode_48", "decode_64",
                                             "decode"}));
}

// Each bucket's program, run once from the empty cache at a position inside its bucket, gives
// PyTorch's logits.
TEST(DecodeBuckets, EachBucketMatchesPyTorch) {
  for (const char* p : {"decode_32", "decode_64"}) {
    const std::string path = (kModel / p / "model.pt2").string();
    const difftest::CaseResult r = difftest::run_corpus_case(path, {{"trn1", 2}});
    EXPECT_EQ(r.outputs_compared, 1) << path;
    std::string failures;
    for (const std::string& s : r.failures) failures += "  " + s + "\n";
    EXPECT_TRUE(r.ok()) << path << ":\n" << failures;
  }
}

TEST(DecodeBuckets, EachStepRunsInTheSmallestBucketBeyondItsPositionAndGivesTheReferenceTokens) {
  const std::vector<int64_t> prompt = reference("prompt.npy"), want = reference("tokens.npy");
  for (int tp : {1, 2}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const std::string art =
        compile_dir(kModel, tp == 1 ? "trn1" : "trn2", tp, "tp" + std::to_string(tp) + ".nca");
    const tools::Generator gen(art, {});
    const tools::Generation g = gen.run({prompt}, static_cast<int>(want.size()));
    ASSERT_EQ(g.tokens.size(), 1u);
    EXPECT_EQ(g.tokens[0], want);
    // Positions 12 .. 74: decode_32 below 32, decode_48 below 48, decode_64 below 64, then the
    // whole cache.
    std::map<std::string, double> device_ns;
    for (const tools::GenerationStep& s : g.steps) {
      if (s.before_first_token()) {
        EXPECT_EQ(s.entry, "prefill_16");
        continue;
      }
      const std::string want_entry = s.position < 32   ? "decode_32"
                                     : s.position < 48 ? "decode_48"
                                     : s.position < 64 ? "decode_64"
                                                       : "decode";
      EXPECT_EQ(s.entry, want_entry) << "position " << s.position;
      device_ns[s.entry] = s.stats.device_ns;
    }
    ASSERT_EQ(device_ns.size(), 4u);
    // Simulated time depends on no data: a smaller bucket reads less of the cache.
    EXPECT_LT(device_ns["decode_32"], device_ns["decode_48"]);
    EXPECT_LT(device_ns["decode_48"], device_ns["decode_64"]);
    EXPECT_LT(device_ns["decode_64"], device_ns["decode"]);
    // The timing-only path (bench --generate) times each step in the same bucket.
    const tools::Generation t =
        gen.time(static_cast<int64_t>(prompt.size()), static_cast<int>(want.size()));
    ASSERT_EQ(t.steps.size(), g.steps.size());
    for (size_t i = 0; i < t.steps.size(); ++i) {
      EXPECT_EQ(t.steps[i].entry, g.steps[i].entry);
      EXPECT_DOUBLE_EQ(t.steps[i].stats.device_ns, g.steps[i].stats.device_ns);
    }
    EXPECT_DOUBLE_EQ(t.decode_device_ns, g.decode_device_ns);
  }
}

// A copy of the export whose manifest lists `programs` ({name, directory}).
std::filesystem::path export_with(
    const std::string& name, const std::vector<std::pair<std::string, std::string>>& programs) {
  const std::filesystem::path d = scratch() / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  std::ifstream f(kModel / "manifest.json");
  nlohmann::json m = nlohmann::json::parse(f);
  m["programs"] = nlohmann::json::array();
  for (const auto& [n, dir] : programs) {
    std::filesystem::create_directories(d / dir);
    std::filesystem::copy_file(kModel / dir / "model.pt2", d / dir / "model.pt2");
    m["programs"].push_back({{"name", n}, {"file", dir + "/model.pt2"}});
  }
  std::ofstream(d / "manifest.json") << m.dump(1);
  return d;
}

int usage_error(const std::string& artifact, const std::vector<int64_t>& prompt, int n,
                std::string* message) {
  try {
    const tools::Generator gen(artifact, {});
    gen.run({prompt}, n);
  } catch (const tools::CommandExit& e) {
    *message = e.message;
    return e.code;
  }
  return 0;
}

TEST(DecodeBuckets, EntriesNoBucketCoversAreRefused) {
  const std::vector<int64_t> prompt = reference("prompt.npy");
  std::string why;
  // A bucket name larger than the cache (80 positions).
  const std::string too_wide =
      compile_dir(export_with("too_wide", {{"prefill_16", "prefill_16"}, {"decode_100", "decode"}}),
                  "trn1", 1, "too_wide.nca");
  EXPECT_EQ(usage_error(too_wide, prompt, 4, &why), tools::kExitUsage);
  EXPECT_NE(why.find("decode_100"), std::string::npos) << why;
  EXPECT_NE(why.find("the KV cache holds 80"), std::string::npos) << why;
  // Only decode_32: positions from 32 on have no program; 20 new tokens stay inside it.
  const std::string small =
      compile_dir(export_with("small", {{"prefill_16", "prefill_16"}, {"decode_32", "decode_32"}}),
                  "trn1", 1, "small.nca");
  EXPECT_EQ(usage_error(small, prompt, 40, &why), tools::kExitUsage);
  EXPECT_NE(why.find("beyond the largest decode bucket (decode_32, 32 positions)"),
            std::string::npos)
      << why;
  EXPECT_EQ(usage_error(small, prompt, 20, &why), 0) << why;
}

}  // namespace
}  // namespace neuronc
