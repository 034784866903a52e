// Differential testing (docs/DIFFTEST.md): a generated graph is compiled with every operator the
// loader has a host kernel for placed on the host, at -O0 (the reference: the host kernels are an
// implementation independent of codegen's lowerings), and again for each target and -O level
// with the compiler's own placement. Every artifact is loaded and run on the device model with
// the same random inputs (race checker on), and each output is compared with the reference's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "neuronc/tensor.h"
#include "tests/difftest/generator.h"

namespace neuronc::difftest {

struct Config {
  std::string target;  // "trn1", "trn2", "trn3"
  int opt_level = 2;
};

// Compiles an in-memory graph (weights need payloads) to artifact bytes. Throws what the
// compiler throws.
std::vector<std::byte> compile_graph(std::unique_ptr<ir::Graph> g, const Config& config,
                                     bool host_only = false);

// Every target at every -O level.
std::vector<Config> all_configs();

struct CaseResult {
  uint64_t seed = 0;
  std::string graph;                  // the generated graph in IR text, to reproduce a failure
  std::vector<std::string> failures;  // one line per failing (config, output)
  int configs_run = 0;
  int device_nodes = 0;          // nodes the subjects placed on the device (summed over configs)
  int outputs_compared = 0;      // (config, output) pairs
  double worst_error_ratio = 0;  // the largest error seen, as a fraction of its tolerance
  bool ok() const { return failures.empty(); }
};

// Empty when output `got` matches the reference `want` (fp32: within 1e-4 of the largest
// reference magnitude; a graph computing in bf16: within 3 % and cosine >= 0.999; other dtypes
// bit-exact), else what differs.
// `error_ratio`, when given, receives the largest error as a fraction of the tolerance.
std::string compare_outputs(const Tensor& got, const Tensor& want, bool bf16_graph,
                            double* error_ratio = nullptr);

// Generates the graph for `seed` and runs it under every config.
CaseResult run_case(uint64_t seed, const GeneratorOptions& gen, const std::vector<Config>& configs);

// The same for a graph in IR text (a reduced finding): weights without payloads get seeded
// random values.
CaseResult run_graph_text(const std::string& text, const std::vector<Config>& configs);

// The same for any graph: `make` builds a fresh copy for each compile (the pipeline consumes
// it); `seed` also seeds the inputs.
CaseResult run_graph(uint64_t seed, const std::function<std::unique_ptr<ir::Graph>()>& make,
                     const std::vector<Config>& configs);

// A case of the corpus PyTorch wrote (tests/corpus/difftest, made by make_corpus.py): the
// exported program `pt2_path`, compiled and run under each config on the input_<i>.npy beside
// it, each user output compared with PyTorch's output_<i>.npy (the same criteria as above);
// buffer mutations, which follow the user outputs, have no file.
CaseResult run_corpus_case(const std::string& pt2_path, const std::vector<Config>& configs);

}  // namespace neuronc::difftest
