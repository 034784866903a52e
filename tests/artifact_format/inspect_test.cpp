// `neuronc inspect` on a hand-built artifact: text, JSON fields and --disasm with source lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tests/artifact_format/test_artifacts.h"
#include "tools/cli_output.h"
#include "tools/inspect_command.h"

namespace neuronc::tools {
namespace {

using ::testing::HasSubstr;

// One file per test: ctest runs the tests of this binary as parallel processes.
std::string write_tmp() {
  auto w = testing::two_partition_writer();
  const std::string path = ::testing::TempDir() + "/inspect_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".nca";
  EXPECT_TRUE(w.write_file(path).is_ok());
  return path;
}

TEST(Inspect, TextReport) {
  const std::string text = inspect_artifact(write_tmp(), false, false);
  EXPECT_THAT(text, HasSubstr("format     1.1  verified: ok"));  // no state: a 1.1 file
  EXPECT_THAT(text, HasSubstr("producer   neuronc 0.1.0-test"));
  EXPECT_THAT(text, HasSubstr("sha256     abababab"));
  EXPECT_THAT(text, HasSubstr("input  x: f32[4, 32]"));
  EXPECT_THAT(text, HasSubstr("output spectrum: f32[4, 17]"));
  EXPECT_THAT(text, HasSubstr("partitions 2 device, 3 host"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "host    aten.cumsum.default(h1) -> h2   # cumsum (aten.cumsum.default) model.py:13"));
  EXPECT_THAT(text, HasSubstr("instructions 7: tensor 0 vector 1 scalar 1 gpsimd 0 sync 5"));
  EXPECT_THAT(text, HasSubstr("constants.packed"));
}

TEST(Inspect, DisasmShowsInstructionsWithSourceLines) {
  const std::string text = inspect_artifact(write_tmp(), false, true);
  EXPECT_THAT(text, HasSubstr("core 0 scalar[0] activation dst=sbuf:f32[0:4]@1024{32} "
                              "src=sbuf:f32[0:4]@0{32} function=relu scale=2 bias=1 wait(s0>=1) "
                              "signal(s1+=1)   # relu (aten.relu.default) model.py:12"));
  EXPECT_THAT(text,
              HasSubstr("dma_copy dst=sbuf:f32[0:4]@0{32} src=hbm:f32[0:4/32]@0{32} queue=0"));
}

TEST(Inspect, JsonFields) {
  const auto j = nlohmann::json::parse(inspect_artifact(write_tmp(), true, true));
  EXPECT_EQ(j["format_version"], "1.1");
  EXPECT_EQ(j["verified"], true);
  EXPECT_EQ(j["target"], "trn1");
  EXPECT_EQ(j["partitions"]["device"], 2);
  EXPECT_EQ(j["partitions"]["steps"][1]["op"], "aten.cumsum.default");
  EXPECT_EQ(j["instructions"]["per_engine"]["sync"], 5);
  EXPECT_EQ(j["segments"][0]["compression"], "none");
  EXPECT_EQ(j["segments"][0]["offset"].get<uint64_t>() % 4096, 0u);
  EXPECT_EQ(j["programs"][0]["streams"][1]["instructions"][0]["line"], 12);
  EXPECT_EQ(j["memory_plan"]["constants_in_hbm"], 1);
}

// A tensor-parallel program (format 1.4): the file holds core 0, and inspect counts every core.
TEST(Inspect, AReplicatedProgramCountsEveryCore) {
  auto w = testing::two_partition_writer();
  w.contents().num_cores = 2;
  w.contents().programs[0].replicas = 2;
  w.contents().programs[0].replica_stride = 4096;
  const std::string path = ::testing::TempDir() + "/inspect_replicated.nca";
  ASSERT_TRUE(w.write_file(path).is_ok());
  const auto j = nlohmann::json::parse(inspect_artifact(path, true, false));
  EXPECT_EQ(j["format_version"], "1.4");
  EXPECT_EQ(j["verified"], true);
  EXPECT_EQ(j["programs"][0]["cores"], 2);
  EXPECT_EQ(j["programs"][0]["replica_stride"], 4096);
  EXPECT_EQ(j["programs"][0]["hbm_bytes"], 8192);
  EXPECT_EQ(j["programs"][0]["instructions"], 6);  // 3 on each core
  EXPECT_EQ(j["programs"][1]["replica_stride"], 0);
  EXPECT_EQ(j["instructions"]["total"], 10);
  EXPECT_THAT(inspect_artifact(path, false, true),
              HasSubstr("(2 core(s), copies of core 0 4096 B of hbm apart, 2 semaphores, 8192 B "
                        "hbm)"));
}

TEST(Inspect, CommandLineAndErrors) {
  CLI::App app;
  register_inspect_command(app);
  const std::string path = write_tmp();
  std::vector<std::string> args = {"--json", path, "inspect"};  // CLI11 parses in reverse
  EXPECT_NO_THROW(app.parse(args));
  try {
    inspect_artifact(path + ".missing", false, false);
    FAIL() << "expected CommandExit";
  } catch (const CommandExit& e) {
    EXPECT_EQ(e.code, kExitError);
    EXPECT_THAT(e.message, HasSubstr("cannot open"));
  }
}

}  // namespace
}  // namespace neuronc::tools
