// The malformed-input corpus (tests/corpus/frontend/malformed/): every file must fail to load
// with one error whose message contains the substring EXPECTED.txt lists for it, and names the
// file. Regenerate the corpus with tests/corpus/frontend/make_malformed.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "frontend/load.h"

namespace neuronc::frontend {
namespace {

struct CorpusCase {
  std::string file;
  std::string message;
};
void PrintTo(const CorpusCase& c, std::ostream* os) {
  *os << c.file;
}

const std::string kDir = std::string(NEURONC_SOURCE_DIR) + "/tests/corpus/frontend/malformed/";

std::vector<CorpusCase> corpus() {
  std::vector<CorpusCase> out;
  std::ifstream in(kDir + "EXPECTED.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    out.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return out;
}

class MalformedCorpus : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(MalformedCorpus, FailsWithExpectedMessage) {
  const CorpusCase& c = GetParam();
  std::string path = kDir + c.file;
  try {
    load_program(path);
    FAIL() << c.file << " loaded but should not";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(c.message));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(c.file));
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
  }
}

std::string case_name(const ::testing::TestParamInfo<CorpusCase>& info) {
  std::string n = info.param.file;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Corpus, MalformedCorpus, ::testing::ValuesIn(corpus()), case_name);

TEST(MalformedCorpusIndex, IsNotEmpty) {
  EXPECT_GE(corpus().size(), 20u);
}

}  // namespace
}  // namespace neuronc::frontend
