// `neuronc run ARTIFACT`: one inference on .npy inputs, outputs written as .npy.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "artifact_format/mapped_file.h"
#include "artifact_format/reader.h"
#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/runner.h"
#include "tools/trace_timeline.h"

namespace neuronc::tools {
namespace {

struct RunCli {
  std::string artifact, output_dir = ".", model, output_dtype = "native", entry;
  std::vector<std::string> inputs;
  bool json = false, check_races = false, timing_only = false;
};

// --timing-only: the entry's simulated time from the device model's timing half, computing no
// data (simulated time does not depend on it). The artifact's root table is read once and its
// weights never loaded; no inputs are read and no outputs written. Host-fallback steps need
// data, so they are not run and the report says how many.
void run_timing_only(const RunCli& o) {
  if (!o.inputs.empty() || !o.model.empty())
    throw CommandExit{kExitUsage,
                      "--timing-only computes no data and reads no inputs: drop --input and "
                      "--model",
                      ""};
  auto file = artifact::MappedFile::open(o.artifact);
  if (!file.is_ok()) throw CommandExit{kExitError, file.status().message(), ""};
  auto art = artifact::read_artifact(file->bytes(), read_options_for_timing());
  if (!art.is_ok()) throw CommandExit{kExitError, o.artifact + ": " + art.status().message(), ""};
  const artifact::ArtifactContents& c = art->contents;
  const std::vector<artifact::EntrySpec>& entries = c.signature.entries;
  // The entry: --entry, else the first; a group of shape buckets is refused (its inputs pick
  // the bucket that runs).
  std::optional<size_t> e =
      o.entry.empty() ? std::optional<size_t>{0} : artifact::find_entry(c, o.entry);
  std::string group = e && !entries.empty() && entries[*e].bucket && o.entry.empty()
                          ? entries[*e].bucket->group
                          : "";
  std::string names;
  for (const artifact::EntrySpec& en : entries) {
    names += (names.empty() ? "" : ", ") + en.name;
    if (!e && en.bucket && en.bucket->group == o.entry) group = o.entry;
  }
  if (!group.empty())
    throw CommandExit{kExitUsage,
                      "--timing-only times one program, but '" + group +
                          "' is a group of shape buckets whose inputs pick the one that runs; "
                          "pass --entry with a bucket's own name (inspect lists them)",
                      ""};
  if (!e)
    throw CommandExit{kExitUsage,
                      "--entry '" + o.entry + "': the model's entries are " +
                          (names.empty() ? std::string(artifact::kImplicitEntryName) : names),
                      ""};
  const std::string entry = entries.empty() ? artifact::kImplicitEntryName : entries[*e].name;
  progress("timing " + o.artifact);
  const auto t0 = std::chrono::steady_clock::now();
  Timeline tl;
  try {
    tl = simulate_timeline(c, {.trace = false, .entry = *e});
  } catch (const std::exception& ex) {
    throw CommandExit{kExitError, ex.what(), ""};
  }
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  progress_done();
  size_t host_steps = 0;
  for (const TimelineStep& st : tl.steps) host_steps += !st.device;
  if (o.json) {
    nlohmann::ordered_json j;
    j["artifact"] = o.artifact;
    j["target"] = tl.target;
    j["entry"] = entry;
    j["timing_only"] = true;
    j["simulated_latency_us"] = tl.device_ns / 1e3;
    j["device_us"] = tl.device_ns / 1e3;
    j["host_ops_not_run"] = host_steps;
    j["host_wall_ms"] = wall_ms;
    nlohmann::ordered_json util;
    for (int e = 0; e < device::kNumEngines; ++e)
      util[std::string(device::engine_name(static_cast<device::Engine>(e)))] =
          tl.engine_utilization(static_cast<device::Engine>(e));
    j["engine_utilization"] = util;
    j["instructions"] = tl.instructions;
    j["hbm_bytes"] = tl.hbm_bytes();
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf(
      "timing-only: simulated device latency %.2f us on %s (entry %s; no data computed%s); "
      "%llu instructions; %llu HBM bytes; host wall time %.2f ms\n",
      tl.device_ns / 1e3, tl.target.c_str(), entry.c_str(),
      host_steps ? (", " + std::to_string(host_steps) + " host-fallback steps not run").c_str()
                 : "",
      static_cast<unsigned long long>(tl.instructions),
      static_cast<unsigned long long>(tl.hbm_bytes()), wall_ms);
  std::printf("engine utilisation:");
  for (int e = 0; e < device::kNumEngines; ++e)
    std::printf(" %s %.1f%%",
                std::string(device::engine_name(static_cast<device::Engine>(e))).c_str(),
                100.0 * tl.engine_utilization(static_cast<device::Engine>(e)));
  std::printf("\n");
}

void run_run(const RunCli& o) {
  if (o.timing_only) return run_timing_only(o);
  neuronc::Model model = load_model_or_exit(o.artifact);
  // The entry to run: --entry, else the first (the model's only one, usually).
  const EntryInfo* entry = &model.entries()[0];
  if (!o.entry.empty()) {
    entry = nullptr;
    std::string names;
    for (const EntryInfo& e : model.entries()) {
      if (e.name == o.entry || (e.bucket_group == o.entry && !entry)) entry = &e;
      names += (names.empty() ? "" : ", ") + e.name;
    }
    if (!entry)
      throw CommandExit{kExitUsage, "--entry '" + o.entry + "': the model's entries are " + names,
                        ""};
  }
  std::vector<std::pair<std::string, NpyArray>> inputs;
  if (!o.inputs.empty()) {
    // A shape bucket group's inputs by their declared dims (Model::inputs()).
    inputs = read_inputs(
        entry->bucket_group.empty() || entry->name == o.entry ? entry->inputs : model.inputs(),
        o.inputs);
  } else if (!o.model.empty()) {
    inputs = sample_inputs(model, o.model);
  } else {
    throw CommandExit{kExitUsage,
                      "no inputs: pass --input FILE.npy (or NAME=FILE.npy) per model input, or "
                      "--model MODEL.pt2 to use the sample inputs saved with the program",
                      ""};
  }
  neuronc::SessionOptions so;
  so.check_races = o.check_races;
  neuronc::Session session(model, so);
  if (!session.status().is_ok()) throw CommandExit{kExitError, session.status().message(), ""};
  progress("running " + o.artifact);
  RunResult r = run_once(session, o.entry, inputs);
  progress_done();
  std::filesystem::create_directories(o.output_dir);
  std::vector<std::string> files;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const std::string path =
        (std::filesystem::path(o.output_dir) / ("output_" + std::to_string(i) + ".npy")).string();
    if (o.output_dtype == "f32") r.outputs[i] = widen_to_f32(r.outputs[i]);
    write_npy(path, r.outputs[i]);
    files.push_back(path);
  }
  // The state the run left (a KV cache, running statistics), so no result is lost.
  std::vector<NpyArray> states;
  std::vector<std::string> state_files;
  for (size_t i = 0; i < model.states().size(); ++i) {
    states.push_back(npy_of(*session.state(model.states()[i].name)));
    if (o.output_dtype == "f32") states.back() = widen_to_f32(states.back());
    state_files.push_back(
        (std::filesystem::path(o.output_dir) / ("state_" + std::to_string(i) + ".npy")).string());
    write_npy(state_files.back(), states.back());
  }
  const RunStats& s = r.stats;
  if (o.json) {
    nlohmann::ordered_json j;
    j["artifact"] = o.artifact;
    j["target"] = model.info().target;
    j["outputs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      std::string shape = "[";
      for (size_t k = 0; k < r.outputs[i].shape.size(); ++k)
        shape += (k ? ", " : "") + std::to_string(r.outputs[i].shape[k]);
      j["outputs"].push_back({{"name", r.names[i]},
                              {"file", files[i]},
                              {"dtype", npy_type_name(r.outputs[i].type)},
                              {"shape", r.outputs[i].shape}});
    }
    j["states"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < states.size(); ++i)
      j["states"].push_back({{"name", model.states()[i].name},
                             {"file", state_files[i]},
                             {"dtype", npy_type_name(states[i].type)},
                             {"shape", states[i].shape}});
    j["entry"] = s.entry;
    j["padded"] = s.padded;
    j["simulated_latency_us"] = s.latency_ns / 1e3;
    j["device_us"] = s.device_ns / 1e3;
    j["host_ops_us"] = s.host_ops_ns / 1e3;
    j["end_to_end_latency_us"] = s.end_to_end_ns / 1e3;
    j["end_to_end_async_latency_us"] = s.end_to_end_async_ns / 1e3;
    j["host_transfer_bytes"] = s.host_transfer_bytes;
    j["host_wall_ms"] = s.host_wall_ns / 1e6;
    nlohmann::ordered_json util;
    for (size_t e = 0; e < kEngineNames.size(); ++e) {
      util[std::string(kEngineNames[e])] =
          s.device_ns > 0 ? s.engine_busy_ns[e] / s.device_ns : 0.0;
    }
    j["engine_utilization"] = util;
    j["instructions"] = s.instructions;
    j["dma_bytes"] = s.dma_bytes;
    j["device_calls"] = s.device_calls;
    j["host_ops"] = s.host_ops;
    std::cout << j.dump(2) << "\n";
    return;
  }
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    std::string shape;
    for (size_t k = 0; k < r.outputs[i].shape.size(); ++k)
      shape += (k ? "x" : "") + std::to_string(r.outputs[i].shape[k]);
    std::printf("%s: %s %s -> %s\n", r.names[i].c_str(), npy_type_name(r.outputs[i].type),
                shape.c_str(), files[i].c_str());
  }
  for (size_t i = 0; i < states.size(); ++i)
    std::printf("state %s -> %s\n", model.states()[i].name.c_str(), state_files[i].c_str());
  std::printf(
      "simulated latency %.2f us on %s (device %.2f us, host ops %.2f us); end to end %.2f us "
      "(synchronous; %.2f us asynchronous); %llu instructions; host wall time %.2f ms\n",
      s.latency_ns / 1e3, model.info().target.c_str(), s.device_ns / 1e3, s.host_ops_ns / 1e3,
      s.end_to_end_ns / 1e3, s.end_to_end_async_ns / 1e3,
      static_cast<unsigned long long>(s.instructions), s.host_wall_ns / 1e6);
  if (!model.entries()[0].bucket_group.empty())
    std::printf("ran shape bucket %s%s\n", s.entry.c_str(),
                s.padded ? " (the inputs padded up to it, the outputs cut back)" : "");
  std::printf("engine utilisation:");
  for (size_t e = 0; e < kEngineNames.size(); ++e) {
    std::printf(" %s %.1f%%", std::string(kEngineNames[e]).c_str(),
                s.device_ns > 0 ? 100.0 * s.engine_busy_ns[e] / s.device_ns : 0.0);
  }
  std::printf("\n");
}

}  // namespace

void register_run_command(CLI::App& app) {
  auto o = std::make_shared<RunCli>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run an artifact on .npy inputs with the Trainium device model");
  cmd->footer(
      "Example:\n  neuronc run mlp.nca --input models/mlp/input_0.npy --output-dir out/\n"
      "  neuronc run mlp.nca --model models/mlp/model.pt2   # the program's sample inputs");
  cmd->add_option("artifact", o->artifact, "Compiled artifact (.nca)")->required();
  cmd->add_option("-i,--input", o->inputs, "Input .npy, by position or NAME=FILE.npy (repeatable)");
  cmd->add_option("--model", o->model, "Use the sample inputs saved in this .pt2");
  cmd->add_option("--output-dir", o->output_dir,
                  "Where output_0.npy, output_1.npy, ... (and state_0.npy, ... for a model with "
                  "state) go (default: .)");
  cmd->add_option("--output-dtype", o->output_dtype,
                  "native (default: each output's own dtype; bf16 as ml_dtypes' <V2) or f32 "
                  "(bf16 and f16 outputs widened exactly, for numpy without ml_dtypes)")
      ->check(CLI::IsMember({"native", "f32"}));
  cmd->add_option("--entry", o->entry,
                  "Which program of a model that holds several (inspect lists the entries; "
                  "default: the first)");
  cmd->add_flag("--check-races", o->check_races, "Run the device model's race checker");
  cmd->add_flag("--timing-only", o->timing_only,
                "Only the simulated time, from the device model's timing half: no inputs read, "
                "no data computed, no outputs written (host-fallback ops not run)");
  cmd->add_flag("--json", o->json, "Print the run report as JSON (fields in docs/CLI.md)");
  cmd->callback([o] { run_run(*o); });
}

}  // namespace neuronc::tools
