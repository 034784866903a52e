// `analyze` agrees with `compile` (issue 16): on every committed program, for each --auto-cast
// mode, analyze's optimised partitioning (device and host partitions, nodes, the host nodes)
// is the one compile builds, and analyze reports unsupported nodes exactly when compile fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/tools/fixture_artifacts.h"

namespace neuronc::tools {
namespace {

using testing::neuronc;
using testing::Ran;
using testing::scratch_dir;

std::vector<std::string> committed_programs() {
  std::vector<std::string> out;
  for (const auto& dir :
       std::filesystem::directory_iterator(std::string(NEURONC_SOURCE_DIR) + "/models")) {
    for (const char* name : {"model.pt2", "model_core.pt2"})
      if (std::filesystem::exists(dir.path() / name)) out.push_back((dir.path() / name).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::string, std::string>> host_nodes(const nlohmann::json& list) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& h : list) out.emplace_back(h["node"], h["op"]);
  return out;
}

class AnalyzeAgreesWithCompile : public ::testing::TestWithParam<std::string> {};

TEST_P(AnalyzeAgreesWithCompile, SamePartitionsAndVerdict) {
  const std::string model = GetParam();
  for (const char* cast : {"none", "matmul"}) {
    SCOPED_TRACE(model + " --auto-cast " + cast);
    const std::string opts = std::string(" --target trn1 --auto-cast ") + cast + " --json";
    const Ran a = neuronc("analyze " + model + opts);
    ASSERT_TRUE(a.code == 0 || a.code == 1) << a.out;
    const auto aj = nlohmann::json::parse(a.out)["optimized"];
    // Exit code 1 exactly when something cannot run (models/custom_op's kernel).
    EXPECT_EQ(a.code == 1, !aj["unsupported"].empty()) << a.out;
    const std::string out = (scratch_dir() / "agree.nca").string();
    // A program with symbolic dims: analyze reports the partitions at the sample's shape, which
    // `compile --dim` at those values builds, and plans the shape buckets compile writes.
    std::string dims;
    for (const auto& [sym, v] : aj["specialized_dims"].items())
      dims += " --dim " + sym + "=" + std::to_string(v.get<int64_t>());
    const Ran c = neuronc("compile " + model + " -o " + out + opts + dims);
    if (!aj["unsupported"].empty()) {
      EXPECT_NE(c.code, 0) << "analyze reports unsupported nodes, compile succeeded";
      continue;
    }
    ASSERT_EQ(c.code, 0) << "analyze reports no unsupported node, compile failed";
    const auto cj = nlohmann::json::parse(c.out);
    EXPECT_EQ(aj["device_partitions"], cj["device_partitions"]);
    EXPECT_EQ(aj["host_partitions"], cj["host_partitions"]);
    EXPECT_EQ(aj["nodes"], cj["optimized_nodes"]);
    EXPECT_EQ(host_nodes(aj["host_nodes_detail"]), host_nodes(cj["host_nodes"]));
    EXPECT_EQ(aj["specialized_dims"], cj["specialized_dims"]);
    if (aj["buckets"].empty()) continue;
    const Ran buckets = neuronc("compile " + model + " -o " + out + opts);
    ASSERT_EQ(buckets.code, 0) << buckets.out;
    EXPECT_EQ(aj["buckets"], nlohmann::json::parse(buckets.out)["buckets"]);
  }
}

INSTANTIATE_TEST_SUITE_P(CommittedPrograms, AnalyzeAgreesWithCompile,
                         ::testing::ValuesIn(committed_programs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::filesystem::path p(info.param);
                           std::string name =
                               p.parent_path().filename().string() + "_" + p.stem().string();
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace neuronc::tools
