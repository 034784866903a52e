// `neuronc bench`: simulated latency (P50/P99 over varied random inputs), throughput per
// NeuronCore and per instance, utilisation, HBM traffic, host cost of the simulation and cost
// per million inferences from a price table that is data (tools/data/instance_prices.json,
// embedded; --prices FILE overrides it). The pieces are here so tests can call them.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace neuronc::tools {

struct InstancePrice {
  std::string pricing;  // "on_demand", "reserved_effective", ...
  double usd_per_hour = 0;
  std::string source;
  std::string date;  // when the figure was recorded from its source
  bool unverified = false;
};

struct InstanceInfo {
  std::string instance;  // "trn1.2xlarge"
  std::string target;    // the neuronc target whose cores it has: "trn1" (also inf2), "trn2"
  int chips = 0;
  int neuron_cores = 0;
  std::string facts_source;
  std::vector<InstancePrice> prices;
};

struct PriceTable {
  std::vector<InstanceInfo> instances;
  std::vector<std::pair<std::string, std::string>> defaults;  // target -> instance
  const InstanceInfo* find(const std::string& instance) const;
  std::string default_instance(const std::string& target) const;
};

// The built-in table (tools/data/instance_prices.json, compiled in).
const char* builtin_price_table_json();
// Parses a table; `origin` names it in errors. Throws CommandExit naming the entry and field.
PriceTable parse_price_table(const std::string& json_text, const std::string& origin);
// Built-in table, with the instances of `user_file` (if not empty) replacing those of the same
// name and adding new ones.
PriceTable load_price_table(const std::string& user_file);

struct BenchOptions {
  std::string artifact;
  int iterations = 20;
  // Runs per session before the timed iterations (not reported): the first run of a Session
  // sizes its buffers and faults in their pages, which a service pays once.
  int warmup = 1;
  int threads = 1;
  std::string instance;                  // empty: the table's default for the artifact's target
  std::optional<double> price_per_hour;  // overrides the table
  std::string pricing = "on_demand";
  std::string prices_file;
  uint64_t seed = 0;
  int64_t int_high = 8;  // integer inputs are drawn from [0, int_high)
  // --dim: the value of a symbolic input dim (a model with shape buckets runs the bucket that
  // fits); unnamed symbols take the compiled value, else their range's smallest.
  std::map<std::string, int64_t> dims;
  // --generate: each iteration generates `new_tokens` greedy tokens after a random prompt of
  // `prompt_len` tokens with an export_causal_lm.py artifact (tools/generation.h).
  bool generate = false;
  int prompt_len = 16;
  int new_tokens = 32;
  // --timing-only: the device model's timing alone, no data computed (any artifact; a
  // weights-free one always is). Simulated device time depends on no data, so it is the same
  // figure, found without the functional simulation; host-fallback ops are left out.
  bool timing_only = false;
};

// Runs the benchmark and returns the `--json` document (fields in docs/CLI.md). Throws
// CommandExit on bad options or a failing run.
nlohmann::ordered_json run_bench(const BenchOptions& options);

// The same benchmark of an artifact in memory (the compiles of `neuronc compare`);
// `options.artifact` only names it in the report and in errors.
nlohmann::ordered_json run_bench_bytes(const BenchOptions& options,
                                       std::span<const std::byte> artifact);

// USD per million inferences on an instance of `usd_per_hour` doing `inferences_per_s`:
// usd_per_hour / 3600 / inferences_per_s x 10^6 (bench's cost, and compare's baselines').
double cost_per_million_usd(double usd_per_hour, double inferences_per_s);

// The --generate benchmark: TTFT and TPOT percentiles, tokens/s per NeuronCore and per
// instance, cost per million output tokens (fields in docs/CLI.md).
nlohmann::ordered_json run_bench_generate(const BenchOptions& options);

// The human-readable form of a run_bench() or run_bench_generate() document.
std::string format_bench_text(const nlohmann::ordered_json& report);

}  // namespace neuronc::tools
