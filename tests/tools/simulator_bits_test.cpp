// The device model's outputs stay bit-identical (issue 19): every committed fixture is compiled,
// run by `neuronc run` on its saved inputs, and the SHA-256 of each output file is compared
// with the one recorded in simulator_bits.txt. A faster GEMM, copy or element-wise path that
// changes one bit of one output fails here. So does a faster event loop that changes one bit of
// the simulated time: each case's `run --timing-only` device time is recorded too, printed to
// the last bit (the JSON's shortest round-trip form).
//
// A change that is meant to change results (a new lowering, a fix to an instruction's
// semantics) re-records the file, and says why in its commit:
//   NEURONC_UPDATE_SIMULATOR_BITS=1 build/tests/tools/simulator_bits_test
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_artifacts.h"

namespace neuronc::tools::testing {
namespace {

struct Case {
  std::string model;  // under models/, the directory holding model.pt2
  std::string target = "trn1";
  bool auto_cast = false;
  std::string name() const {
    std::string n = model + "_" + target + (auto_cast ? "_bf16" : "");
    for (char& c : n)
      if (c == '/') c = '_';
    return n;
  }
};

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char* m : kFixtures) v.push_back({m});
  for (const char* m : {"cnn", "vit", "bert", "gpt2", "llama", "transformer_encoder", "mlp_bf16"})
    v.push_back({m, "trn1", true});
  for (const char* t : {"trn2", "trn3"})
    for (const char* m : {"cnn", "bert", "llama"}) v.push_back({m, t, true});
  // LLM programs: a decode step's matmuls have a one-token side.
  for (const char* m : {"llm/llama_tiny/decode", "llm/llama_tiny/prefill_16",
                        "llm/gemma_tiny/decode", "llm/qwen2_tiny/decode"}) {
    v.push_back({m});
    v.push_back({m, "trn1", true});
  }
  return v;
}

std::filesystem::path bits_file() {
  return std::filesystem::path(NEURONC_SOURCE_DIR) / "tests/tools/simulator_bits.txt";
}

// "<case> <output file> <sha256>" lines, '#' comments.
std::map<std::string, std::string> recorded() {
  std::map<std::string, std::string> m;
  std::ifstream f(bits_file());
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string c, file, digest;
    s >> c >> file >> digest;
    m[c + " " + file] = digest;
  }
  return m;
}

// The case's outputs as "<case> <file>" -> sha256.
std::map<std::string, std::string> run_case(const Case& c) {
  const std::filesystem::path dir = scratch_dir() / ("bits_" + c.name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string pt2 = std::string(NEURONC_SOURCE_DIR) + "/models/" + c.model + "/model.pt2";
  const std::string nca = (dir / "model.nca").string();
  const Ran compiled = neuronc("compile " + pt2 + " -o " + nca + " --target " + c.target +
                               (c.auto_cast ? " --auto-cast matmul" : ""));
  EXPECT_EQ(compiled.code, 0) << c.name() << ": compile failed";
  const Ran ran = neuronc("run " + nca + " --model " + pt2 + " --output-dir " + dir.string());
  EXPECT_EQ(ran.code, 0) << c.name() << ": run failed";
  std::map<std::string, std::string> out;
  const Ran sums = run_shell("cd " + dir.string() + " && sha256sum *.npy");
  std::istringstream s(sums.out);
  std::string digest, file;
  while (s >> digest >> file) out[c.name() + " " + file] = digest;
  EXPECT_FALSE(out.empty()) << c.name() << ": no outputs written";
  const Ran timed = run_shell(
      std::string(NEURONC_BINARY_DIR) + "/tools/neuronc run " + nca + " --timing-only --json",
      /*with_stderr=*/true);
  // A model with shape buckets has no one program to time (run refuses, naming its entries);
  // its programs are each another fixture's kind.
  if (timed.code != 0 && timed.out.find("shape buckets") != std::string::npos) return out;
  EXPECT_EQ(timed.code, 0) << c.name() << ": run --timing-only failed: " << timed.out;
  std::smatch m;
  if (std::regex_search(timed.out, m, std::regex("\"device_us\":\\s*([-+0-9.eE]+)")))
    out[c.name() + " device_us"] = m[1];
  else
    ADD_FAILURE() << c.name() << ": no device_us in " << timed.out;
  std::filesystem::remove_all(dir);
  return out;
}

TEST(SimulatorBits, EveryFixtureOutputIsTheRecordedBits) {
  std::map<std::string, std::string> got;
  for (const Case& c : cases()) got.merge(run_case(c));
  if (std::getenv("NEURONC_UPDATE_SIMULATOR_BITS")) {
    std::ofstream f(bits_file());
    f << "# SHA-256 of each fixture output written by `neuronc run` (simulator_bits_test.cpp),\n"
      << "# and the simulated device time of `neuronc run --timing-only --json`.\n"
      << "# <case: model_target[_bf16]> <output file> <sha256>\n"
      << "# <case: model_target[_bf16]> device_us <microseconds, to the last bit>\n";
    for (const auto& [k, v] : got) f << k << " " << v << "\n";
    GTEST_SKIP() << "re-recorded " << got.size() << " outputs in " << bits_file();
  }
  const auto want = recorded();
  ASSERT_FALSE(want.empty()) << "no recorded outputs in " << bits_file();
  for (const auto& [k, v] : want) {
    const auto it = got.find(k);
    if (it == got.end()) {
      ADD_FAILURE() << k << ": recorded but not written";
      continue;
    }
    EXPECT_EQ(it->second, v) << k
                             << (k.ends_with(" device_us") ? ": the simulated time changed"
                                                           : ": the outputs' bits changed");
  }
  for (const auto& [k, v] : got)
    EXPECT_TRUE(want.count(k)) << k << ": written but not recorded (re-record, see the top)";
}

}  // namespace
}  // namespace neuronc::tools::testing
