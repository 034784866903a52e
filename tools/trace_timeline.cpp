// Simulated timeline of one inference (trace_timeline.h): runs each device call of the plan
// through device::Simulator in timing-only mode and lays the calls end to end.
#include "tools/trace_timeline.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <variant>

#include "artifact_format/mapped_file.h"
#include "artifact_format/reader.h"
#include "device/simulator.h"
#include "device/target.h"

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

Timeline simulate_timeline(const art::ArtifactContents& c, const TimelineOptions& options) {
  auto kind = device::parse_target(c.target);
  if (!kind.is_ok()) throw std::runtime_error("artifact target: " + kind.status().message());
  const device::Target& target = device::target(*kind);

  Timeline t;
  t.target = std::string(target.name);
  t.core_version = std::string(target.core_version);
  t.num_cores = std::max<uint32_t>(1, c.num_cores);
  t.nodes = c.debug_nodes;
  t.peak_flops_per_ns = target.tensor_peak_flops_per_ns();
  t.hbm_bytes_per_ns = target.hbm_gbps_per_core;  // GB/s == bytes/ns
  t.dma_bytes_per_ns = target.dma_peak_bytes_per_ns();

  device::SimulatorOptions so;
  so.functional = false;
  so.trace = options.trace;
  so.parallel = false;
  device::Simulator sim(target, so);
  t.assumptions = sim.cost_model().assumptions();

  const auto node_of = [&](uint32_t debug_id) -> int32_t {
    return debug_id < t.nodes.size() ? static_cast<int32_t>(debug_id) : -1;
  };
  double estimated_model_flops = 0;
  double now = 0;
  for (uint32_t i = 0; i < c.plan.steps.size(); ++i) {
    TimelineStep s;
    s.step = i;
    s.start_ns = now;
    if (const auto* op = std::get_if<art::HostOp>(&c.plan.steps[i])) {
      s.device = false;
      s.name = op->op;
      s.node = node_of(op->debug_id);
      s.end_ns = now;
      t.steps.push_back(std::move(s));
      continue;
    }
    const auto& call = std::get<art::DeviceCall>(c.plan.steps[i]);
    const art::DeviceProgram& p = c.programs.at(call.program);
    auto report = sim.run(p.program, {});
    if (!report.is_ok()) {
      throw std::runtime_error("plan step " + std::to_string(i) + " (device program '" + p.name +
                               "'): " + report.status().message());
    }
    s.name = p.name;
    s.end_ns = now + report->total_time_ns;
    s.instructions = report->instructions;
    s.hbm_read_bytes = report->hbm_read_bytes;
    s.hbm_write_bytes = report->hbm_write_bytes;
    s.sbuf_peak_bytes = p.sbuf_peak_bytes;
    s.psum_peak_bytes = p.psum_peak_bytes;
    for (const device::CoreStats& cs : report->cores) {
      for (int e = 0; e < device::kNumEngines; ++e) s.engine_busy_ns[e] += cs.engines[e].busy_ns;
      s.dma_active_ns += cs.dma_active_ns;
      s.tensor_flops += cs.tensor_flops;
    }
    // Per-instruction FLOPs from the same cost model the simulator used.
    for (const device::TraceEvent& te : report->trace) {
      TimelineEvent e;
      e.step = i;
      e.core = te.core;
      e.unit = te.unit;
      e.start_ns = now + te.start_ns;
      e.end_ns = now + te.end_ns;
      e.opcode = te.opcode;
      e.engine = te.engine;
      e.instruction_index = te.instruction_index;
      e.bytes = te.bytes;
      e.node = node_of(te.debug_id);
      if (te.engine == device::Engine::tensor && te.unit == "tensor" &&
          te.core < p.program.cores.size()) {
        const auto& stream = p.program.cores[te.core].stream(device::Engine::tensor);
        if (te.instruction_index < stream.size()) {
          e.tensor_flops = sim.cost_model()
                               .cost(device::Engine::tensor, stream[te.instruction_index].op)
                               .tensor_flops;
        }
      }
      t.events.push_back(std::move(e));
    }
    // Model-FLOP estimate for artifacts that do not record them: matmul instructions of
    // matmul-family nodes (no transposes, no one-hot embeddings; padding included).
    for (const device::CoreProgram& core : p.program.cores) {
      for (const device::Instruction& in : core.stream(device::Engine::tensor)) {
        if (in.opcode() != device::Opcode::matmul) continue;
        const int32_t n = node_of(in.debug_id);
        if (n < 0 || !is_model_matmul_op(t.nodes[n].op)) continue;
        estimated_model_flops += sim.cost_model().cost(device::Engine::tensor, in.op).tensor_flops;
      }
    }
    now = s.end_ns;
    t.device_ns += report->total_time_ns;
    t.instructions += s.instructions;
    t.hbm_read_bytes += s.hbm_read_bytes;
    t.hbm_write_bytes += s.hbm_write_bytes;
    t.tensor_flops += s.tensor_flops;
    t.dma_active_ns += s.dma_active_ns;
    for (int e = 0; e < device::kNumEngines; ++e) t.engine_busy_ns[e] += s.engine_busy_ns[e];
    t.steps.push_back(std::move(s));
  }

  t.model_flops = estimated_model_flops;
  t.model_flops_source =
      "estimated: TensorE matmul instructions of matmul/conv/attention nodes "
      "(padding included; the artifact does not record the source graph's FLOPs)";
  for (const auto& [key, value] : c.options.extra) {
    if (key != kModelFlopsOption) continue;
    try {
      t.model_flops = std::stod(value);
      t.model_flops_source = "artifact: the compiler's count of the source graph's matmul FLOPs";
    } catch (const std::exception&) {
      // A malformed value keeps the estimate.
    }
  }

  assign_lanes(t.events);
  std::stable_sort(
      t.events.begin(), t.events.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
        return std::tie(a.start_ns, a.core, a.unit) < std::tie(b.start_ns, b.core, b.unit);
      });
  return t;
}

Timeline simulate_artifact_bytes(std::span<const std::byte> bytes, const TimelineOptions& options) {
  auto a = art::read_artifact(bytes);
  if (!a.is_ok()) throw std::runtime_error(a.status().message());
  return simulate_timeline(a->contents, options);
}

Timeline simulate_artifact_file(const std::string& path, const TimelineOptions& options) {
  auto f = art::MappedFile::open(path);
  if (!f.is_ok()) throw std::runtime_error(f.status().message());
  auto a = art::read_artifact(f->bytes());
  if (!a.is_ok()) throw std::runtime_error(path + ": " + a.status().message());
  return simulate_timeline(a->contents, options);
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
