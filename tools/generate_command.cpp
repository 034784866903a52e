// `neuronc generate ARTIFACT --input-ids FILE.npy --max-new-tokens N`: greedy generation with
// the programs of models/scripts/export_causal_lm.py, the KV cache kept by the Session.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/generation.h"
#include "tools/mpi_processes.h"
#include "tools/runner.h"

namespace neuronc::tools {
namespace {

struct GenerateCli {
  std::string artifact, input_ids, output;
  std::vector<std::string> prefill;
  int max_new_tokens = 16;
  int64_t eos = -1;
  Sampling sampling;
  bool json = false;
};

// The prompt as int64 rows [batch, length].
std::vector<std::vector<int64_t>> read_prompt(const std::string& path, int64_t batch) {
  NpyArray a = read_npy(path);
  if (a.shape.size() == 1) a.shape.insert(a.shape.begin(), 1);
  if (a.shape.size() != 2 || (a.type != NpyType::i64 && a.type != NpyType::i32))
    throw CommandExit{kExitUsage,
                      "--input-ids " + path + ": expected int64 or int32 token ids [batch, length]",
                      ""};
  if (a.shape[0] != batch)
    throw CommandExit{kExitUsage,
                      "--input-ids " + path + " has " + std::to_string(a.shape[0]) +
                          " rows, but the decode program was exported for batch " +
                          std::to_string(batch),
                      ""};
  if (a.shape[1] < 1) throw CommandExit{kExitUsage, "--input-ids " + path + " holds no token", ""};
  const std::vector<int64_t> ids = widen_to_i64(a);
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(a.shape[0]));
  for (size_t b = 0; b < rows.size(); ++b)
    rows[b].assign(ids.begin() + static_cast<std::ptrdiff_t>(b * a.shape[1]),
                   ids.begin() + static_cast<std::ptrdiff_t>((b + 1) * a.shape[1]));
  return rows;
}

void run_generate(const GenerateCli& o) {
  const Generator gen(o.artifact, o.prefill);
  const std::vector<std::vector<int64_t>> prompt = read_prompt(o.input_ids, gen.batch());
  const auto p = static_cast<int64_t>(prompt[0].size());
  // Under mpirun the cores split over the ranks; only rank 0 prints and writes.
  neuronc::ProcessGroup* processes = mpi_processes();
  const bool speaks = !processes || processes->rank() == 0;
  if (speaks) progress("generating with " + o.artifact);
  const Generation g = gen.run(prompt, o.max_new_tokens, o.eos, o.sampling, processes);
  progress_done();
  const Model& model = gen.model();
  const int64_t batch = gen.batch();
  const double tokens_per_s = g.tpot_ns > 0 ? 1e9 * static_cast<double>(batch) / g.tpot_ns : 0;
  const size_t n_new = g.tokens[0].size();
  // Engine busy time is summed over the cores a tensor-parallel model runs on.
  const double cores = std::max<double>(1, model.info().num_cores);

  if (!speaks) return;
  if (!o.output.empty()) {
    NpyArray a;
    a.type = NpyType::i64;
    a.shape = {batch, static_cast<int64_t>(n_new)};
    for (const auto& row : g.tokens)
      for (int64_t t : row) {
        const auto* b = reinterpret_cast<const std::byte*>(&t);
        a.data.insert(a.data.end(), b, b + 8);
      }
    write_npy(o.output, a);
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["artifact"] = o.artifact;
    j["target"] = model.info().target;
    j["batch"] = batch;
    j["prompt_tokens"] = p;
    j["new_tokens"] = n_new;
    j["decoding"] = o.sampling.greedy() ? "greedy" : "top-k sampling";
    j["sampling"] = {{"top_k", o.sampling.top_k},
                     {"temperature", o.sampling.temperature},
                     {"seed", o.sampling.seed},
                     {"on_device", gen.samples_on_device()}};
    j["tokens"] = g.tokens;
    j["ttft_us"] = g.ttft_ns / 1e3;
    j["ttft_from"] = g.ttft_from;
    j["tpot_us"] = g.tpot_ns / 1e3;
    j["end_to_end"] = {{"issue", "synchronous"},
                       {"ttft_us", g.ttft_end_to_end_ns / 1e3},
                       {"tpot_us", g.tpot_end_to_end_ns / 1e3},
                       {"asynchronous_ttft_us", g.ttft_end_to_end_async_ns / 1e3},
                       {"asynchronous_tpot_us", g.tpot_end_to_end_async_ns / 1e3}};
    j["tokens_per_s"] = tokens_per_s;
    j["processes"] = processes ? processes->size() : 1;
    nlohmann::ordered_json util;
    for (size_t e = 0; e < kEngineNames.size(); ++e)
      util[std::string(kEngineNames[e])] =
          g.decode_device_ns > 0 ? g.decode_busy_ns[e] / (g.decode_device_ns * cores) : 0.0;
    j["decode_engine_utilization"] = util;
    j["steps"] = nlohmann::ordered_json::array();
    for (const GenerationStep& s : g.steps) {
      nlohmann::ordered_json u;
      for (size_t e = 0; e < kEngineNames.size(); ++e)
        u[std::string(kEngineNames[e])] =
            s.stats.device_ns > 0 ? s.stats.engine_busy_ns[e] / (s.stats.device_ns * cores) : 0.0;
      j["steps"].push_back({{"position", s.position},
                            {"kind", s.kind},
                            {"entry", s.entry},
                            {"latency_us", s.stats.latency_ns / 1e3},
                            {"device_us", s.stats.device_ns / 1e3},
                            {"host_ops_us", s.stats.host_ops_ns / 1e3},
                            {"engine_utilization", u}});
    }
    if (!o.output.empty()) j["output"] = o.output;
    std::cout << j.dump(2) << "\n";
    return;
  }
  for (size_t b = 0; b < g.tokens.size(); ++b) {
    std::printf("tokens%s:", batch > 1 ? (" (row " + std::to_string(b) + ")").c_str() : "");
    for (int64_t t : g.tokens[b]) std::printf(" %lld", static_cast<long long>(t));
    std::printf("\n");
  }
  const std::string decoding = o.sampling.greedy()
                                   ? std::string("greedy")
                                   : "top-" + std::to_string(o.sampling.top_k) +
                                         " sampling at temperature " +
                                         std::to_string(o.sampling.temperature) + ", seed " +
                                         std::to_string(o.sampling.seed);
  std::printf(
      "%zu new tokens after a %lld-token prompt, %s%s, on %s\n"
      "TTFT %.3f ms (%s)\n"
      "TPOT %.3f ms, %.1f tokens/s (batch %lld)\n"
      "end to end: TTFT %.3f ms, TPOT %.3f ms issued synchronously; %.3f / %.3f ms "
      "asynchronously\n",
      n_new, static_cast<long long>(p), decoding.c_str(),
      gen.samples_on_device() ? " (on the device)" : "", model.info().target.c_str(),
      g.ttft_ns / 1e6, g.ttft_from.c_str(), g.tpot_ns / 1e6, tokens_per_s,
      static_cast<long long>(batch), g.ttft_end_to_end_ns / 1e6, g.tpot_end_to_end_ns / 1e6,
      g.ttft_end_to_end_async_ns / 1e6, g.tpot_end_to_end_async_ns / 1e6);
  if (processes)
    std::printf("%u NeuronCores simulated by %d MPI processes\n", model.info().num_cores,
                processes->size());
  std::printf("decode engine utilisation:");
  for (size_t e = 0; e < kEngineNames.size(); ++e)
    std::printf(
        " %s %.1f%%", std::string(kEngineNames[e]).c_str(),
        g.decode_device_ns > 0 ? 100.0 * g.decode_busy_ns[e] / (g.decode_device_ns * cores) : 0.0);
  std::printf("\n");
  if (!o.output.empty()) std::printf("tokens -> %s\n", o.output.c_str());
}

}  // namespace

void register_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateCli>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate tokens with a decode program, its KV cache kept across steps");
  cmd->footer(
      "Example:\n"
      "  neuronc compile models/llm/llama_tiny -o llama.nca   # prefill_16 + decode entries\n"
      "  neuronc generate llama.nca --input-ids models/llm/llama_tiny/reference/prompt.npy "
      "--max-new-tokens 64");
  cmd->add_option("artifact", o->artifact,
                  "Compiled export of models/scripts/export_causal_lm.py (.nca): its decode "
                  "program, or the whole directory (prefill and decode entries)")
      ->required();
  cmd->add_option("--input-ids", o->input_ids, "Prompt token ids, int64 [batch, length] .npy")
      ->required();
  cmd->add_option("--max-new-tokens", o->max_new_tokens, "Tokens to generate (default 16)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--prefill", o->prefill,
                  "Prefill program(s) (.nca) of the same export, one per bucket: the prompt, "
                  "padded to the smallest bucket that holds it, fills the cache in one call "
                  "(repeatable; without it the prompt goes through the decode program)");
  cmd->add_option("--eos-token-id", o->eos, "Stop once every row has produced this token");
  cmd->add_option("--top-k", o->sampling.top_k,
                  "Sample among the K largest logits (default 1: greedy); needs programs "
                  "exported with --on-device-sampling, whose sampler runs on the device")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--temperature", o->sampling.temperature, "Sampling temperature (default 1; > 0)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->sampling.seed,
                  "Seed of the uniform draws (one per row and call, splitmix64; default 0)");
  cmd->add_option("-o,--output", o->output, "Write the new tokens [batch, n] as int64 .npy");
  cmd->add_flag("--json", o->json, "Print the report as JSON (fields in docs/CLI.md)");
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace neuronc::tools
