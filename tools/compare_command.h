// `neuronc compare MODEL`: the model compiled for each target x auto-cast mode, each row with
// bench's simulated latency, throughput and cost per million inferences (tools/bench_command.h)
// and its quality against PyTorch (tools/eval_dataset.h), beside measured baselines (a GPU
// instance's latency and price). The pieces are here so tests can call them.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/bench_command.h"

namespace neuronc::tools {

// A measured baseline: `--baseline NAME=LATENCY_MS@USD_PER_HOUR`, the latency of one inference
// (one call of the model at its exported input shapes) on an instance of that price, one
// inference in flight per instance.
struct Baseline {
  std::string name;
  double latency_ms = 0;
  double usd_per_hour = 0;
};

// Parses one --baseline value; a usage error (CommandExit, exit code 2) naming the value and
// what was expected otherwise (an empty name, no '=' or '@', a number that is not one or not > 0).
Baseline parse_baseline(const std::string& text);

struct CompareOptions {
  std::string model;
  std::vector<std::string> targets = {"trn1", "trn2", "trn3"};
  std::vector<std::string> auto_casts = {"none", "matmul"};
  std::vector<Baseline> baselines;
  std::string dataset;    // --dataset DIR: quality over its sets
  std::string reference;  // else input_<i>/output_<i>.npy here (default: the model's folder)
  int iterations = BenchOptions{}.iterations;    // bench iterations per row
  std::map<std::string, std::string> instances;  // target -> instance priced (default: bench's)
  std::map<std::string, double> price_per_hour;  // target -> USD, overriding the table
  std::string pricing = "on_demand";
  std::string prices_file;
};

// The command line's values as given (comma lists and TARGET=VALUE items unparsed).
struct CompareArgs {
  CompareOptions o;  // model, dataset, reference, iterations, pricing, prices_file
  std::string targets = "trn1,trn2,trn3", auto_casts = "none,matmul";
  std::vector<std::string> baselines;  // NAME=LATENCY_MS@USD_PER_HOUR
  std::vector<std::string> instances;  // TARGET=NAME
  std::vector<std::string> prices;     // TARGET=USD_PER_HOUR
};

// The options `args` stand for. Usage errors (CommandExit, exit code 2) name the option and the
// value: an unknown or repeated target or auto-cast mode, a malformed baseline, an --instance or
// --price-per-hour of a target not in the list or given twice, a price that is not above 0.
CompareOptions parse_compare_args(const CompareArgs& args);

// Compiles and measures every row, and returns the `--json` document (fields in docs/CLI.md).
// A row that fails to compile, run or price carries its error; usage errors (an unknown target,
// an instance of another target) and a malformed dataset throw CommandExit.
nlohmann::ordered_json run_compare(const CompareOptions& options);

// The human-readable table of a run_compare() document.
std::string format_compare_text(const nlohmann::ordered_json& report);

}  // namespace neuronc::tools
