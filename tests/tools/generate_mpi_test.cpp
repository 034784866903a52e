// `mpirun -np K neuronc generate` (issue 17): the ranks split a tensor-parallel model's cores
// and give the tokens and per-step device times of one process (host-op times are measured,
// so they may differ), rank 0 alone printing; a command other than generate is refused under
// mpirun. Runs OpenMPI's mpirun on this machine (the build found MPI).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/tools/fixture_artifacts.h"
#include "tools/npy.h"
#include "tools/runner.h"

namespace neuronc::tools {
namespace {

const std::filesystem::path kFamily =
    std::filesystem::path(NEURONC_SOURCE_DIR) / "models" / "llm" / "llama_heads8_tiny";
const std::string kNeuronc = std::string(NEURONC_BINARY_DIR) + "/tools/neuronc";

using testing::Ran;
using testing::run_shell;

// Under AddressSanitizer the ranks run without LeakSanitizer: OpenMPI's MCA plugins leak at
// MPI_Finalize and are unloaded by then, so their frames cannot be named in a suppression. The
// split path itself runs with LeakSanitizer in device_process_split_test and tensor_parallel_test.
#if defined(__SANITIZE_ADDRESS__)
#define NEURONC_RANK_ENV "ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:detect_leaks=0\" "
#else
#define NEURONC_RANK_ENV ""
#endif

// mpirun with K ranks on this machine: as root too, more ranks than cores, no shared-memory
// single-copy (containers forbid the ptrace it needs).
std::string mpirun(int ranks) {
  return NEURONC_RANK_ENV
         "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " MPIEXEC_EXECUTABLE
         " --oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none -np " +
         std::to_string(ranks) + " ";
}

std::string compiled(const std::string& target, int tp) {
  const std::filesystem::path out =
      testing::scratch_dir() / ("heads8_" + target + "_tp" + std::to_string(tp) + ".nca");
  if (!std::filesystem::exists(out)) {
    const Ran r = run_shell(kNeuronc + " compile " + kFamily.string() + " --target " + target +
                                " --tp " + std::to_string(tp) + " -o " + out.string(),
                            true);
    EXPECT_EQ(r.code, 0) << r.out;
  }
  return out.string();
}

TEST(GenerateMpi, RanksGiveOneProcesssTokensAndDeviceTimes) {
  const std::string prompt = (kFamily / "reference" / "prompt.npy").string();
  const NpyArray ref = read_npy((kFamily / "reference" / "tokens.npy").string());
  const std::vector<int64_t> want = widen_to_i64(ref);
  ASSERT_GE(want.size(), 32u);
  struct Case {
    const char* target;
    int tp;
    std::vector<int> ranks;
  };
  for (const Case& c : {Case{"trn2", 4, {2, 3}}, Case{"trn1", 2, {2}}}) {
    const std::string nca = compiled(c.target, c.tp);
    const std::string args =
        " generate " + nca + " --input-ids " + prompt + " --max-new-tokens 32 --json";
    const Ran one = run_shell(kNeuronc + args, true);
    ASSERT_EQ(one.code, 0) << one.out;
    const auto a = nlohmann::json::parse(one.out);
    EXPECT_EQ(a["tokens"][0].get<std::vector<int64_t>>(),
              std::vector<int64_t>(want.begin(), want.begin() + 32));
    EXPECT_EQ(a["processes"], 1);
    for (int k : c.ranks) {
      SCOPED_TRACE(std::string(c.target) + " TP " + std::to_string(c.tp) + ", " +
                   std::to_string(k) + " ranks");
      // stdout only: rank 0 prints the one JSON document.
      const Ran split = run_shell(mpirun(k) + kNeuronc + args, false);
      ASSERT_EQ(split.code, 0) << split.out;
      const auto b = nlohmann::json::parse(split.out);
      EXPECT_EQ(b["processes"], k);
      EXPECT_EQ(b["tokens"], a["tokens"]);
      ASSERT_EQ(b["steps"].size(), a["steps"].size());
      for (size_t s = 0; s < a["steps"].size(); ++s) {
        EXPECT_EQ(b["steps"][s]["entry"], a["steps"][s]["entry"]) << s;
        EXPECT_EQ(b["steps"][s]["device_us"], a["steps"][s]["device_us"]) << s;
        EXPECT_EQ(b["steps"][s]["engine_utilization"], a["steps"][s]["engine_utilization"]) << s;
      }
    }
  }
}

TEST(GenerateMpi, OtherCommandsAreRefusedUnderMpirun) {
  const Ran r = run_shell(mpirun(2) + kNeuronc + " inspect " + compiled("trn2", 4), true);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("neuronc inspect was launched as 2 MPI processes: only `neuronc "
                       "generate` splits its work over MPI ranks"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace neuronc::tools
