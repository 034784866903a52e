// `neuronc profile ARTIFACT -o TRACE`: the engine and DMA-queue timeline of one inference on the
// device model, every instruction named after its IR node, for chrome://tracing or
// ui.perfetto.dev.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/trace_export.h"
#include "tools/trace_timeline.h"

namespace neuronc::tools {
namespace {

struct ProfileCli {
  std::string artifact, output, entry;
  bool json = false;
};

void run_profile(const ProfileCli& o) {
  const TraceFormat format = trace_format_for(o.output);
  progress("simulating " + o.artifact);
  Timeline t;
  try {
    t = simulate_artifact_file(o.artifact, {.trace = true, .entry_name = o.entry});
  } catch (const std::invalid_argument& e) {
    throw CommandExit{kExitUsage, "--entry: " + o.artifact + " has " + e.what(), ""};
  } catch (const std::exception& e) {
    throw CommandExit{kExitError, e.what(), ""};
  }
  progress("writing " + o.output);
  write_trace(o.output, format, t, o.artifact);
  progress_done();

  const std::vector<TraceTrack> tracks = trace_tracks(t);
  size_t named = 0;
  for (const TimelineEvent& e : t.events) named += e.node >= 0;
  if (o.json) {
    nlohmann::ordered_json j;
    j["artifact"] = o.artifact;
    j["trace"] = o.output;
    j["format"] = format == TraceFormat::chrome_json ? "chrome_json" : "perfetto";
    j["target"] = t.target;
    j["simulated_device_us"] = t.device_ns / 1e3;
    j["events"] = t.events.size();
    j["events_with_node"] = named;
    j["tracks"] = nlohmann::ordered_json::array();
    for (const TraceTrack& tr : tracks)
      j["tracks"].push_back({{"process", tr.process}, {"name", tr.name}});
    j["plan_steps"] = nlohmann::ordered_json::array();
    for (const TimelineStep& s : t.steps) {
      j["plan_steps"].push_back({{"step", s.step},
                                 {"kind", s.device ? "device" : "host"},
                                 {"name", s.name},
                                 {"start_us", s.start_ns / 1e3},
                                 {"end_us", s.end_ns / 1e3}});
    }
    nlohmann::ordered_json as = nlohmann::ordered_json::array();
    for (const device::Assumption& a : t.assumptions) {
      as.push_back({{"name", a.name}, {"value", a.value}, {"unit", a.unit}, {"why", a.why}});
    }
    j["assumptions"] = as;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf(
      "%s -> %s (%s): %zu events on %zu tracks, %zu named after their IR node; simulated device "
      "time %.2f us on %s\n",
      o.artifact.c_str(), o.output.c_str(),
      format == TraceFormat::chrome_json ? "Chrome trace JSON" : "Perfetto protobuf",
      t.events.size(), tracks.size(), named, t.device_ns / 1e3, t.target.c_str());
  size_t host = 0;
  for (const TimelineStep& s : t.steps) host += !s.device;
  if (host) {
    std::printf(
        "  %zu host-fallback op(s) appear as markers: their time is measured on the CPU (neuronc "
        "bench), "
        "not simulated\n",
        host);
  }
  std::printf("  open it in https://ui.perfetto.dev or chrome://tracing; assumptions in effect:");
  for (const device::Assumption& a : t.assumptions)
    std::printf(" %s=%g%s", a.name.c_str(), a.value, a.unit.empty() ? "" : (" " + a.unit).c_str());
  std::printf("\n");
}

}  // namespace

void register_profile_command(CLI::App& app) {
  auto o = std::make_shared<ProfileCli>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Write the engine and DMA-queue timeline of one inference as a trace");
  cmd->footer(
      "Example:\n  neuronc profile mlp.nca -o mlp.pftrace     # Perfetto: open in "
      "https://ui.perfetto.dev\n"
      "  neuronc profile mlp.nca -o mlp.json        # Chrome trace event format "
      "(chrome://tracing)");
  cmd->add_option("artifact", o->artifact, "Compiled artifact (.nca)")->required();
  cmd->add_option("-o,--output", o->output,
                  "Trace file: .json (Chrome trace events) or .pftrace (Perfetto)")
      ->required();
  cmd->add_option("--entry", o->entry,
                  "The entry to simulate, of an artifact with several (default: the first)");
  cmd->add_flag("--json", o->json, "Print a summary of the trace as JSON (fields in docs/CLI.md)");
  cmd->callback([o] { run_profile(*o); });
}

}  // namespace neuronc::tools
