// The simulated timeline of one inference of an artifact, shared by `neuronc bench`,
// `neuronc profile` and the compile report. The loader's plan walker (loader/plan_walker.h)
// runs every device call of the execution plan through the device model in timing-only mode
// (simulated time does not depend on the data), calls laid end to end in plan order;
// host-fallback steps appear as zero-length markers because their time is measured on this
// machine, not simulated. Each instruction keeps its IR node (the artifact's debug info), so
// time can be attributed to layers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "artifact_format/artifact.h"
#include "artifact_format/reader.h"
#include "device/cost_model.h"
#include "loader/plan_walker.h"

namespace neuronc::tools {

// One instruction or DMA transfer on the timeline.
struct TimelineEvent {
  uint32_t step = 0;  // execution-plan step (device call) it belongs to
  uint16_t core = 0;
  std::string unit;     // "tensor", "vector", "scalar", "gpsimd", "sync", "dma.q<N>", "collective"
  uint32_t lane = 0;    // sub-row of the unit: events of one (core, unit, lane) never overlap
  double start_ns = 0;  // from the start of the inference
  double end_ns = 0;
  device::Opcode opcode = device::Opcode::nop;
  device::Engine engine = device::Engine::sync;  // stream that issued it
  uint32_t instruction_index = 0;                // within the engine stream
  uint64_t bytes = 0;                            // DMA transfers
  double tensor_flops = 0;                       // TensorE instructions: 2*K*M*N
  int32_t node = -1;                             // index into Timeline::nodes, -1 if none
};

// One step of the execution plan.
struct TimelineStep {
  uint32_t step = 0;
  bool device = true;
  std::string name;   // device program name, or the host op ("aten.fft_rfft.default")
  int32_t node = -1;  // host op: its debug node
  double start_ns = 0;
  double end_ns = 0;  // == start_ns for host steps
  uint64_t instructions = 0;
  uint64_t hbm_read_bytes = 0;
  uint64_t hbm_write_bytes = 0;
  double tensor_flops = 0;
  std::array<double, device::kNumEngines> engine_busy_ns{};
  double dma_active_ns = 0;
  uint32_t sbuf_peak_bytes = 0;  // per partition
  uint32_t psum_peak_bytes = 0;
};

struct Timeline {
  std::string target;        // "trn1", ...
  std::string core_version;  // "NeuronCore-v2", ...
  uint32_t num_cores = 1;    // cores the artifact runs on
  double device_ns = 0;      // simulated time of all device calls
  // What the walked entry's device calls copy between host and device, at its declared shapes
  // (plan::execution_traffic), for the end-to-end time (plan::set_end_to_end).
  device::ExecutionTraffic traffic;
  std::vector<TimelineStep> steps;
  std::vector<TimelineEvent> events;  // empty unless traced; sorted by (start, core, unit)
  std::vector<artifact::DebugNode> nodes;
  uint64_t instructions = 0;
  uint64_t hbm_read_bytes = 0;
  uint64_t hbm_write_bytes = 0;
  std::array<double, device::kNumEngines> engine_busy_ns{};  // summed over cores
  double dma_active_ns = 0;                                  // summed over cores
  double tensor_flops = 0;  // every TensorE instruction, transposes included (HFU numerator)
  double model_flops = 0;   // matmul/conv FLOPs of the source graph (MFU numerator)
  std::string model_flops_source;
  double peak_flops_per_ns = 0;  // dense BF16 TensorE peak of one core (TRAINIUM.md §2.3)
  double hbm_bytes_per_ns = 0;   // HBM bandwidth share of one core
  double dma_bytes_per_ns = 0;   // what one core's DMA engines move at most
  std::vector<device::Assumption> assumptions;

  uint64_t hbm_bytes() const { return hbm_read_bytes + hbm_write_bytes; }
  // Fractions of the peak over the device time (0 when there is no device time).
  double mfu() const;
  double hfu() const;
  double mbu() const;
  // Busy fraction of `engine` over the device time, averaged over cores.
  double engine_utilization(device::Engine e) const;
  double dma_utilization() const;
};

struct TimelineOptions {
  bool trace = true;  // record every instruction (TimelineEvent); off for aggregate numbers only
  size_t entry = 0;   // the entry whose steps are walked (artifact::entry_steps)
  // The entry by name instead (when not empty); a name the artifact lacks throws
  // std::invalid_argument naming its entries.
  std::string entry_name{};
  // The timing tables of `contents`' programs, kept between calls (null: made for this call).
  plan::ProgramTimings* timings = nullptr;
  // Copy the artifact's debug nodes into Timeline::nodes (off when only the totals are read).
  bool nodes = true;
};

// Simulates every device call of `contents` (an artifact the reader has verified). Throws
// std::runtime_error naming the plan step when the device model refuses a program.
Timeline simulate_timeline(const artifact::ArtifactContents& contents,
                           const TimelineOptions& options = {});

// How an artifact read only to be timed is read (every reader below, `run --timing-only`): a
// tensor-parallel program stays core 0 alone, and the walk times its copies without making
// them (artifact::ReadOptions::expand_replicas).
artifact::ReadOptions read_options_for_timing();

// Reads and verifies the artifact at `path` (or in `bytes`), then simulates it. Throws
// std::runtime_error with the reader's message on a bad file.
Timeline simulate_artifact_file(const std::string& path, const TimelineOptions& options = {});
// Entries `names` of the artifact at `path`, read and verified once: one Timeline each.
std::vector<Timeline> simulate_artifact_entries(const std::string& path,
                                                const std::vector<std::string>& names,
                                                bool trace = false);
Timeline simulate_artifact_bytes(std::span<const std::byte> bytes,
                                 const TimelineOptions& options = {});

// Label of an event for a trace viewer: the IR node name, else the opcode.
std::string event_label(const Timeline& t, const TimelineEvent& e);
// "file.py:12" of a node (empty when unknown).
std::string node_source(const artifact::DebugNode& n);

// Compile option key under which the compiler may record the model FLOPs of the source graph.
inline constexpr const char* kModelFlopsOption = "model_flops";

}  // namespace neuronc::tools
