// The differential-testing corpus PyTorch wrote (docs/DIFFTEST.md): random programs exported by
// torch.export in both IRs, each compiled for every target at every -O level, run on the device
// model and compared with the outputs PyTorch computed. Regenerate with
// tests/difftest/make_corpus.py in the export chroot.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/difftest/difftest.h"

namespace neuronc::difftest {
namespace {

const std::filesystem::path kCorpus =
    std::filesystem::path(NEURONC_SOURCE_DIR) / "tests" / "corpus" / "difftest";

// "case_7/model", "case_7/model_core", ... sorted.
std::vector<std::string> corpus_programs() {
  std::vector<std::string> out;
  if (!std::filesystem::exists(kCorpus)) return out;
  for (const auto& e : std::filesystem::directory_iterator(kCorpus))
    for (const char* ir : {"model", "model_core"})
      if (std::filesystem::exists(e.path() / (std::string(ir) + ".pt2")))
        out.push_back(e.path().filename().string() + "/" + ir);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DiffTestCorpus, IsThere) {
  // The corpus is committed: an empty list would make every case below vanish silently.
  EXPECT_GE(corpus_programs().size(), 60u) << kCorpus;
}

class DiffTestCorpusCase : public ::testing::TestWithParam<std::string> {};

TEST_P(DiffTestCorpusCase, MatchesPyTorchOnEveryTargetAndLevel) {
  const std::string path = (kCorpus / (GetParam() + ".pt2")).string();
  const CaseResult r = run_corpus_case(path, all_configs());
  EXPECT_EQ(r.configs_run, 12);
  EXPECT_GT(r.outputs_compared, 0);
  std::string failures;
  for (const std::string& f : r.failures) failures += "  " + f + "\n";
  EXPECT_TRUE(r.ok()) << GetParam() << " (recipe.txt beside it says what it computes):\n"
                      << failures << r.graph;
}

INSTANTIATE_TEST_SUITE_P(Corpus, DiffTestCorpusCase, ::testing::ValuesIn(corpus_programs()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '/', '_');
                           return s;
                         });

}  // namespace
}  // namespace neuronc::difftest
