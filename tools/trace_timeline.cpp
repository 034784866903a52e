// Simulated timeline of one inference (trace_timeline.h): walks the plan with the loader's plan
// walker (loader/plan_walker.h) on a timing-only device::Simulator and lays the calls end to
// end.
#include "tools/trace_timeline.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <variant>

#include "artifact_format/mapped_file.h"
#include "artifact_format/reader.h"
#include "device/simulator.h"
#include "device/target.h"
#include "loader/plan_walker.h"

namespace neuronc::tools {
namespace {

namespace art = ::neuronc::artifact;

// Ops whose TensorE work is model FLOPs when the artifact does not record them.
bool is_model_matmul_op(const std::string& op) {
  if (op.find("embedding") != std::string::npos) return false;  // one-hot gathers
  for (const char* k : {"linear", "mm", "matmul", "bmm", "addmm", "baddbmm", "conv", "einsum",
                        "scaled_dot_product_attention"}) {
    if (op.find(k) != std::string::npos) return true;
  }
  return false;
}

// Assigns lanes so that events of one (core, unit, lane) never overlap (DMA transfers on one
// queue may overlap: they finish in order but start as soon as their engines are free).
void assign_lanes(std::vector<TimelineEvent>& events) {
  std::vector<size_t> order(events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return events[a].start_ns < events[b].start_ns; });
  std::map<std::pair<uint16_t, std::string>, std::vector<double>> lane_end;
  for (size_t i : order) {
    TimelineEvent& e = events[i];
    std::vector<double>& ends = lane_end[{e.core, e.unit}];
    size_t lane = 0;
    while (lane < ends.size() && ends[lane] > e.start_ns) ++lane;
    if (lane == ends.size()) ends.push_back(0);
    ends[lane] = e.end_ns;
    e.lane = static_cast<uint32_t>(lane);
  }
}

}  // namespace

double Timeline::mfu() const {
  const double d = peak_flops_per_ns * num_cores * device_ns;
  return d > 0 ? model_flops / d : 0;
}

double Timeline::hfu() const {
  const double d = peak_flops_per_ns * num_cores * device_ns;
  return d > 0 ? tensor_flops / d : 0;
}

double Timeline::mbu() const {
  const double d = hbm_bytes_per_ns * num_cores * device_ns;
  return d > 0 ? static_cast<double>(hbm_bytes()) / d : 0;
}

double Timeline::engine_utilization(device::Engine e) const {
  const double d = device_ns * num_cores;
  return d > 0 ? engine_busy_ns[static_cast<int>(e)] / d : 0;
}

double Timeline::dma_utilization() const {
  const double d = device_ns * num_cores;
  return d > 0 ? dma_active_ns / d : 0;
}

namespace {

// Lays the plan walk's steps end to end on the timeline.
class TimelineObserver final : public plan::PlanObserver {
 public:
  // `nodes`: the artifact's debug nodes (the events' and steps' node indices name them).
  // `estimate`: estimate the model's FLOPs from its matmul instructions (an artifact that
  // records them needs no estimate).
  TimelineObserver(Timeline& t, const std::vector<art::DebugNode>& nodes,
                   const device::CostModel& cost, bool estimate)
      : t_(t), nodes_(nodes), cost_(cost), estimate_(estimate) {}

  void host_step(uint32_t step, const art::HostOp& op, bool, double) override {
    TimelineStep s;
    s.step = step;
    s.device = false;
    s.name = op.op;
    s.node = node_of(op.debug_id);
    s.start_ns = s.end_ns = now_;
    t_.steps.push_back(std::move(s));
  }

  void device_call(uint32_t step, const art::DeviceProgram& p,
                   const device::RunReport& report) override {
    TimelineStep s;
    s.step = step;
    s.start_ns = now_;
    s.name = p.name;
    s.end_ns = now_ + report.total_time_ns;
    s.instructions = report.instructions;
    s.hbm_read_bytes = report.hbm_read_bytes;
    s.hbm_write_bytes = report.hbm_write_bytes;
    s.sbuf_peak_bytes = p.sbuf_peak_bytes;
    s.psum_peak_bytes = p.psum_peak_bytes;
    for (const device::CoreStats& cs : report.cores) {
      for (int e = 0; e < device::kNumEngines; ++e) s.engine_busy_ns[e] += cs.engines[e].busy_ns;
      s.dma_active_ns += cs.dma_active_ns;
      s.tensor_flops += cs.tensor_flops;
    }
    add_events(step, p, report);
    if (estimate_) estimate_model_flops(p);
    now_ = s.end_ns;
    t_.device_ns += report.total_time_ns;
    t_.instructions += s.instructions;
    t_.hbm_read_bytes += s.hbm_read_bytes;
    t_.hbm_write_bytes += s.hbm_write_bytes;
    t_.tensor_flops += s.tensor_flops;
    t_.dma_active_ns += s.dma_active_ns;
    for (int e = 0; e < device::kNumEngines; ++e) t_.engine_busy_ns[e] += s.engine_busy_ns[e];
    t_.steps.push_back(std::move(s));
  }

  double estimated_model_flops() const { return estimated_model_flops_; }

 private:
  int32_t node_of(uint32_t debug_id) const {
    return debug_id < nodes_.size() ? static_cast<int32_t>(debug_id) : -1;
  }

  // Per-instruction FLOPs from the same cost model the simulator used.
  void add_events(uint32_t step, const art::DeviceProgram& p, const device::RunReport& report) {
    for (const device::TraceEvent& te : report.trace) {
      TimelineEvent e;
      e.step = step;
      e.core = te.core;
      e.unit = te.unit;
      e.start_ns = now_ + te.start_ns;
      e.end_ns = now_ + te.end_ns;
      e.opcode = te.opcode;
      e.engine = te.engine;
      e.instruction_index = te.instruction_index;
      e.bytes = te.bytes;
      e.node = node_of(te.debug_id);
      // A program that holds core 0 alone runs it on every core.
      const size_t core = p.holds_core0_alone() ? 0 : te.core;
      if (te.engine == device::Engine::tensor && te.unit == "tensor" &&
          core < p.program.cores.size()) {
        const auto& stream = p.program.cores[core].stream(device::Engine::tensor);
        if (te.instruction_index < stream.size()) {
          e.tensor_flops =
              cost_.cost(device::Engine::tensor, stream[te.instruction_index].op).tensor_flops;
        }
      }
      t_.events.push_back(std::move(e));
    }
  }

  // Model-FLOP estimate for artifacts that do not record them: matmul instructions of
  // matmul-family nodes (no transposes, no one-hot embeddings; padding included).
  void estimate_model_flops(const art::DeviceProgram& p) {
    // A program that holds core 0 alone runs it on every core.
    const double copies = p.holds_core0_alone() ? p.replicas : 1;
    for (const device::CoreProgram& core : p.program.cores) {
      for (const device::Instruction& in : core.stream(device::Engine::tensor)) {
        if (in.opcode() != device::Opcode::matmul) continue;
        const int32_t n = node_of(in.debug_id);
        if (n < 0 || !is_model_matmul_op(nodes_[n].op)) continue;
        estimated_model_flops_ += copies * cost_.cost(device::Engine::tensor, in.op).tensor_flops;
      }
    }
  }

  Timeline& t_;
  const std::vector<art::DebugNode>& nodes_;
  const device::CostModel& cost_;
  bool estimate_ = true;
  double now_ = 0;
  double estimated_model_flops_ = 0;
};

}  // namespace

Timeline simulate_timeline(const art::ArtifactContents& c, const TimelineOptions& options) {
  auto kind = device::parse_target(c.target);
  if (!kind.is_ok()) throw std::runtime_error("artifact target: " + kind.status().message());
  const device::Target& target = device::target(*kind);

  Timeline t;
  t.target = std::string(target.name);
  t.core_version = std::string(target.core_version);
  t.num_cores = std::max<uint32_t>(1, c.num_cores);
  if (options.nodes) t.nodes = c.debug_nodes;
  t.peak_flops_per_ns = target.tensor_peak_flops_per_ns();
  t.hbm_bytes_per_ns = target.hbm_gbps_per_core;  // GB/s == bytes/ns
  t.dma_bytes_per_ns = target.dma_peak_bytes_per_ns();

  device::SimulatorOptions so;
  so.functional = false;
  so.trace = options.trace;
  so.parallel = false;
  device::Simulator sim(target, so);
  t.assumptions = sim.cost_model().assumptions();

  // The compiler's count of the source graph's matmul FLOPs, when the artifact records one (a
  // malformed value is estimated instead).
  std::optional<double> recorded_flops;
  for (const auto& [key, value] : c.options.extra) {
    if (key != kModelFlopsOption) continue;
    try {
      recorded_flops = std::stod(value);
    } catch (const std::exception&) {
      // A malformed value keeps what came before it.
    }
  }
  TimelineObserver observer(t, c.debug_nodes, sim.cost_model(), /*estimate=*/!recorded_flops);
  size_t entry = options.entry;
  if (!options.entry_name.empty()) {
    const std::optional<size_t> found = art::find_entry(c, options.entry_name);
    if (!found) {
      std::string names;
      for (const auto& en : c.signature.entries) names += (names.empty() ? "" : ", ") + en.name;
      throw std::invalid_argument("no entry '" + options.entry_name + "'; the artifact has " +
                                  (names.empty()
                                       ? std::string("one entry, ") + art::kImplicitEntryName
                                       : "entries " + names));
    }
    entry = *found;
  }
  if (!c.signature.entries.empty() && entry >= c.signature.entries.size())
    throw std::runtime_error("entry " + std::to_string(entry) + " but the artifact has " +
                             std::to_string(c.signature.entries.size()));
  if (Status s = plan::walk_plan(c, sim, /*buffers=*/nullptr, observer, art::entry_steps(c, entry),
                                 options.timings);
      !s.is_ok())
    throw std::runtime_error(s.message());
  int64_t last_program = -1;
  t.traffic = plan::execution_traffic(
      plan::entry_traffic(c, entry),
      [&](uint32_t v) {
        const std::optional<uint64_t> n = art::static_numel(c.plan.values[v]);
        return n ? *n * neuronc::dtype_size(c.plan.values[v].dtype) : uint64_t{0};
      },
      last_program);

  if (recorded_flops) {
    t.model_flops = *recorded_flops;
    t.model_flops_source = "artifact: the compiler's count of the source graph's matmul FLOPs";
  } else {
    t.model_flops = observer.estimated_model_flops();
    t.model_flops_source =
        "estimated: TensorE matmul instructions of matmul/conv/attention nodes "
        "(padding included; the artifact does not record the source graph's FLOPs)";
  }

  assign_lanes(t.events);
  std::stable_sort(
      t.events.begin(), t.events.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
        return std::tie(a.start_ns, a.core, a.unit) < std::tie(b.start_ns, b.core, b.unit);
      });
  return t;
}

art::ReadOptions read_options_for_timing() {
  art::ReadOptions ro;
  ro.expand_replicas = false;
  return ro;
}

Timeline simulate_artifact_bytes(std::span<const std::byte> bytes, const TimelineOptions& options) {
  auto a = art::read_artifact(bytes, read_options_for_timing());
  if (!a.is_ok()) throw std::runtime_error(a.status().message());
  return simulate_timeline(a->contents, options);
}

Timeline simulate_artifact_file(const std::string& path, const TimelineOptions& options) {
  auto f = art::MappedFile::open(path);
  if (!f.is_ok()) throw std::runtime_error(f.status().message());
  auto a = art::read_artifact(f->bytes(), read_options_for_timing());
  if (!a.is_ok()) throw std::runtime_error(path + ": " + a.status().message());
  return simulate_timeline(a->contents, options);
}

std::vector<Timeline> simulate_artifact_entries(const std::string& path,
                                                const std::vector<std::string>& names, bool trace) {
  auto f = art::MappedFile::open(path);
  if (!f.is_ok()) throw std::runtime_error(f.status().message());
  auto a = art::read_artifact(f->bytes(), read_options_for_timing());
  if (!a.is_ok()) throw std::runtime_error(path + ": " + a.status().message());
  std::vector<Timeline> out;
  for (const std::string& name : names)
    out.push_back(simulate_timeline(a->contents, {.trace = trace, .entry_name = name}));
  return out;
}

std::string event_label(const Timeline& t, const TimelineEvent& e) {
  if (e.node >= 0 && !t.nodes[e.node].name.empty()) return t.nodes[e.node].name;
  return std::string(device::opcode_name(e.opcode));
}

std::string node_source(const art::DebugNode& n) {
  if (n.file.empty()) return "";
  return n.line > 0 ? n.file + ":" + std::to_string(n.line) : n.file;
}

}  // namespace neuronc::tools
