// Every `neuronc` subcommand's --help shows an example, and bench/profile/compile --report work
// through the real command line (exit codes, files written, JSON on stdout).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/fixture_artifacts.h"

namespace neuronc::tools {
namespace {

using testing::fixture_artifact;
using testing::fixture_model;
using testing::scratch_dir;

using testing::neuronc;
using testing::Ran;

TEST(CliHelp, EverySubcommandHasAnExample) {
  // `inspect` is missing from this list until its --help gains an example (its owner's file).
  for (const char* sub : {"analyze", "compile", "run", "verify", "bench", "profile", "inspect"}) {
    const Ran r = neuronc(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_NE(r.out.find("Example"), std::string::npos) << sub << " --help:\n" << r.out;
    EXPECT_NE(r.out.find("neuronc " + std::string(sub)), std::string::npos) << sub;
  }
}

TEST(Cli, BenchJsonOnStdout) {
  const Ran r = neuronc("bench " + fixture_artifact("mlp") + " --iterations 3 --json");
  ASSERT_EQ(r.code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["simulated_latency_us"]["p50"].get<double>(), 0);
  EXPECT_TRUE(j["cost_per_million_usd"].is_number());
}

TEST(Cli, BenchUsageErrors) {
  EXPECT_EQ(neuronc("bench " + fixture_artifact("mlp") + " --iterations 0").code, 2);
  EXPECT_EQ(neuronc("bench " + fixture_artifact("mlp") + " --instance nosuch.large").code, 2);
  EXPECT_EQ(neuronc("bench /nonexistent.nca").code, 1);
}

TEST(Cli, ProfileWritesBothFormats) {
  for (const char* ext : {".json", ".pftrace"}) {
    const std::string out = (scratch_dir() / (std::string("cli") + ext)).string();
    const Ran r = neuronc("profile " + fixture_artifact("fallback") + " -o " + out + " --json");
    ASSERT_EQ(r.code, 0) << ext;
    EXPECT_TRUE(std::filesystem::file_size(out) > 0);
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["trace"], out);
    EXPECT_GT(j["events"].get<size_t>(), 0u);
  }
  EXPECT_EQ(neuronc("profile " + fixture_artifact("mlp") + " -o trace.txt").code, 2);
}

TEST(Cli, CompileWritesTheReport) {
  const std::string nca = (scratch_dir() / "cli_mlp.nca").string();
  const std::string html = (scratch_dir() / "cli_mlp.html").string();
  const Ran r = neuronc("compile " + fixture_model("mlp") + " -o " + nca + " --report " + html);
  ASSERT_EQ(r.code, 0);
  ASSERT_TRUE(std::filesystem::exists(html));
  EXPECT_GT(std::filesystem::file_size(html), 1000u);
}

// verify's criteria: fp32 element-wise; auto-cast scales the absolute tolerance by max|ref| and
// asks for cosine >= 0.999; --min-cosine / --atol override and can make the same run fail.
TEST(Cli, VerifyToleranceFollowsAutoCast) {
  const std::string cnn = fixture_model("cnn");
  Ran r = neuronc("verify " + cnn + " --auto-cast matmul --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["atol_relative_to_max_ref"].get<bool>());
  EXPECT_DOUBLE_EQ(j["min_cosine"].get<double>(), 0.999);
  const double cosine = j["outputs"][0]["cosine"].get<double>();
  EXPECT_GE(cosine, 0.999);
  EXPECT_LT(cosine, 1.0);  // bf16 operands really change the result
  r = neuronc("verify " + cnn + " --auto-cast matmul --no-intermediates --json --min-cosine " +
              std::to_string(1.0 - (1.0 - cosine) / 4));
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["outputs"][0]["pass"].get<bool>());
  r = neuronc("verify " + cnn +
              " --auto-cast matmul --no-intermediates --json --atol 1e-7 --rtol 0");
  EXPECT_EQ(r.code, 3) << r.out;
  r = neuronc("verify " + cnn + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["atol_relative_to_max_ref"].get<bool>());
  EXPECT_FALSE(j.contains("min_cosine"));
}

}  // namespace
}  // namespace neuronc::tools
