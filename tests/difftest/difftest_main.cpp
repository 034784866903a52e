// Longer differential-testing runs than ctest's fixed budget (docs/DIFFTEST.md):
//   difftest_run [--from SEED] [--count N] [--targets trn1,trn2,trn3] [--levels 0,1,2,3]
//                [--max-ops N] [--no-bf16] [--no-in-place]
//   difftest_run --graph FILE.ir [--targets ...] [--levels ...]   (one graph in IR text)
// Prints one line per failing case with its failures and graph, and a summary; exits 1 when any
// case failed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/difftest/difftest.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace neuronc::difftest;
  uint64_t from = 1, count = 100;
  std::vector<std::string> targets = {"trn1", "trn2", "trn3"};
  std::vector<std::string> levels = {"0", "1", "2", "3"};
  GeneratorOptions gen;
  std::string graph_file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--from" && has_value) {
      from = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--count" && has_value) {
      count = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--targets" && has_value) {
      targets = split(argv[++i]);
    } else if (a == "--levels" && has_value) {
      levels = split(argv[++i]);
    } else if (a == "--max-ops" && has_value) {
      gen.max_ops = std::atoi(argv[++i]);
      gen.min_ops = std::min(gen.min_ops, gen.max_ops);
    } else if (a == "--graph" && has_value) {
      graph_file = argv[++i];
    } else if (a == "--no-bf16") {
      gen.bf16 = false;
    } else if (a == "--no-in-place") {
      gen.in_place = false;
    } else {
      std::fprintf(
          stderr,
          "usage: difftest_run [--from SEED] [--count N] [--targets trn1,trn2,trn3] "
          "[--levels 0,1,2,3] [--max-ops N] [--no-bf16] [--no-in-place] [--graph FILE.ir]\n"
          "unexpected argument '%s'\n",
          a.c_str());
      return 2;
    }
  }
  std::vector<Config> configs;
  for (const std::string& t : targets)
    for (const std::string& l : levels) configs.push_back({t, std::atoi(l.c_str())});

  if (!graph_file.empty()) {  // one graph in IR text (a reduced finding)
    std::ifstream in(graph_file);
    std::stringstream text;
    text << in.rdbuf();
    const CaseResult r = run_graph_text(text.str(), configs);
    for (const std::string& f : r.failures) std::printf("  %s\n", f.c_str());
    std::printf("%s: %d configs, %d outputs compared, %s; largest error %.3g of its tolerance\n",
                graph_file.c_str(), r.configs_run, r.outputs_compared, r.ok() ? "ok" : "FAILED",
                r.worst_error_ratio);
    return r.ok() ? 0 : 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t failed = 0, runs = 0, device_nodes = 0, compared = 0;
  double worst = 0;
  uint64_t worst_seed = 0;
  for (uint64_t seed = from; seed < from + count; ++seed) {
    const CaseResult r = run_case(seed, gen, configs);
    runs += static_cast<uint64_t>(r.configs_run);
    device_nodes += static_cast<uint64_t>(r.device_nodes);
    compared += static_cast<uint64_t>(r.outputs_compared);
    if (r.worst_error_ratio > worst) worst = r.worst_error_ratio, worst_seed = seed;
    if (r.ok()) continue;
    ++failed;
    std::printf("FAIL seed %llu\n", static_cast<unsigned long long>(seed));
    for (const std::string& f : r.failures) std::printf("  %s\n", f.c_str());
    std::printf("%s\n", r.graph.c_str());
    std::fflush(stdout);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%llu cases (seeds %llu..%llu), %llu compiled runs, %llu device nodes, %llu outputs "
      "compared: %llu failed; largest error %.3g of its tolerance (seed %llu); %.1f s\n",
      static_cast<unsigned long long>(count), static_cast<unsigned long long>(from),
      static_cast<unsigned long long>(from + count - 1), static_cast<unsigned long long>(runs),
      static_cast<unsigned long long>(device_nodes), static_cast<unsigned long long>(compared),
      static_cast<unsigned long long>(failed), worst, static_cast<unsigned long long>(worst_seed),
      s);
  return failed ? 1 : 0;
}
