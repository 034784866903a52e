// Chrome trace event JSON and Perfetto protobuf writers for simulated timelines
// (trace_export.h).
#include "tools/trace_export.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "tools/cli_output.h"
#include "tools/trace_perfetto.pb.h"

namespace neuronc::tools {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Display rank of a unit: engines in their stream order, then collectives, then DMA queues.
std::tuple<int, int> unit_rank(const std::string& unit) {
  for (int e = 0; e < device::kNumEngines; ++e) {
    if (unit == device::engine_name(static_cast<device::Engine>(e))) return {0, e};
  }
  if (unit == "collective") return {1, 0};
  if (unit.rfind("dma.q", 0) == 0) return {2, std::atoi(unit.c_str() + 5)};
  return {3, 0};
}

struct TrackKey {
  uint16_t core;
  std::string unit;
  uint32_t lane;
  bool operator<(const TrackKey& o) const {
    return std::tuple(core, unit_rank(unit), unit, lane) <
           std::tuple(o.core, unit_rank(o.unit), o.unit, o.lane);
  }
};

int core_pid(uint16_t core) {
  return core + 1;
}
int plan_pid(const Timeline& t) {
  return static_cast<int>(t.num_cores) + 1;
}

std::string core_process_name(const Timeline& t, uint16_t core) {
  return "NeuronCore " + std::to_string(core) + " (" + t.target + ", " + t.core_version + ")";
}

std::string track_name(const TrackKey& k) {
  return k.lane == 0 ? k.unit : k.unit + " #" + std::to_string(k.lane + 1);
}

// Track of every event, tids numbered in display order within each process.
struct TrackIndex {
  std::map<TrackKey, TraceTrack> tracks;
  TraceTrack plan_calls, plan_host;
};

TrackIndex index_tracks(const Timeline& t) {
  TrackIndex ix;
  for (const TimelineEvent& e : t.events) ix.tracks[{e.core, e.unit, e.lane}] = {};
  std::map<uint16_t, int> next_tid;
  for (auto& [k, tr] : ix.tracks) {
    tr.pid = core_pid(k.core);
    tr.tid = tr.pid * 1000 + next_tid[k.core]++;
    tr.process = core_process_name(t, k.core);
    tr.name = track_name(k);
    tr.core = k.core;
    tr.unit = k.unit;
    tr.lane = k.lane;
  }
  const int pp = plan_pid(t);
  ix.plan_calls = {pp, pp * 1000, "execution plan", "device calls", -1, "", 0};
  ix.plan_host = {pp, pp * 1000 + 1, "execution plan", "host ops", -1, "", 0};
  return ix;
}

nlohmann::ordered_json event_args(const Timeline& t, const TimelineEvent& e) {
  nlohmann::ordered_json a;
  a["opcode"] = std::string(device::opcode_name(e.opcode));
  a["engine"] = std::string(device::engine_name(e.engine));
  a["instruction"] = e.instruction_index;
  a["plan_step"] = e.step;
  if (e.node >= 0) {
    const artifact::DebugNode& n = t.nodes[e.node];
    a["node"] = n.name;
    a["op"] = n.op;
    const std::string src = node_source(n);
    if (!src.empty()) a["source"] = src;
  }
  if (e.bytes) a["bytes"] = e.bytes;
  if (e.tensor_flops > 0) a["flops"] = e.tensor_flops;
  return a;
}

uint64_t to_ns(double ns) {
  return static_cast<uint64_t>(std::llround(std::max(0.0, ns)));
}

}  // namespace

TraceFormat trace_format_for(const std::string& path) {
  if (ends_with(path, ".json")) return TraceFormat::chrome_json;
  if (ends_with(path, ".pftrace") || ends_with(path, ".perfetto-trace") || ends_with(path, ".pb")) {
    return TraceFormat::perfetto;
  }
  throw CommandExit{kExitUsage,
                    "-o '" + path +
                        "': expected a .json (Chrome trace event format) or .pftrace "
                        "(Perfetto protobuf) file name",
                    ""};
}

std::vector<TraceTrack> trace_tracks(const Timeline& t) {
  TrackIndex ix = index_tracks(t);
  std::vector<TraceTrack> out;
  for (const auto& [k, tr] : ix.tracks) out.push_back(tr);
  out.push_back(ix.plan_calls);
  out.push_back(ix.plan_host);
  return out;
}

std::string chrome_trace_json(const Timeline& t, const std::string& artifact) {
  const TrackIndex ix = index_tracks(t);
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  // Metadata: process and thread names and their order.
  std::map<int, std::string> processes;
  for (const auto& [k, tr] : ix.tracks) processes[tr.pid] = tr.process;
  processes[ix.plan_calls.pid] = ix.plan_calls.process;
  for (const auto& [pid, name] : processes) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", name}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
  }
  std::vector<TraceTrack> tracks = trace_tracks(t);
  for (const TraceTrack& tr : tracks) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", tr.pid},
                      {"tid", tr.tid},
                      {"args", {{"name", tr.name}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", tr.pid},
                      {"tid", tr.tid},
                      {"args", {{"sort_index", tr.tid}}}});
  }
  // Plan steps.
  for (const TimelineStep& s : t.steps) {
    nlohmann::ordered_json ev;
    ev["name"] =
        s.device ? s.name : (s.node >= 0 ? t.nodes[s.node].name + " (" + s.name + ")" : s.name);
    ev["cat"] = s.device ? "device_call" : "host_op";
    if (s.device) {
      ev["ph"] = "X";
      ev["ts"] = s.start_ns / 1e3;
      ev["dur"] = (s.end_ns - s.start_ns) / 1e3;
      ev["pid"] = ix.plan_calls.pid;
      ev["tid"] = ix.plan_calls.tid;
      ev["args"] = {{"plan_step", s.step},
                    {"instructions", s.instructions},
                    {"hbm_bytes", s.hbm_read_bytes + s.hbm_write_bytes}};
    } else {
      ev["ph"] = "i";
      ev["s"] = "t";
      ev["ts"] = s.start_ns / 1e3;
      ev["pid"] = ix.plan_host.pid;
      ev["tid"] = ix.plan_host.tid;
      nlohmann::ordered_json a = {
          {"plan_step", s.step},
          {"op", s.name},
          {"note", "runs on the host CPU; its time is measured by bench/run, not simulated"}};
      if (s.node >= 0 && !node_source(t.nodes[s.node]).empty())
        a["source"] = node_source(t.nodes[s.node]);
      ev["args"] = a;
    }
    events.push_back(std::move(ev));
  }
  for (const TimelineEvent& e : t.events) {
    const TraceTrack& tr = ix.tracks.at({e.core, e.unit, e.lane});
    nlohmann::ordered_json ev;
    ev["name"] = event_label(t, e);
    ev["cat"] = e.unit.rfind("dma", 0) == 0 ? "dma" : std::string(device::engine_name(e.engine));
    ev["ph"] = "X";
    ev["ts"] = e.start_ns / 1e3;
    ev["dur"] = (e.end_ns - e.start_ns) / 1e3;
    ev["pid"] = tr.pid;
    ev["tid"] = tr.tid;
    ev["args"] = event_args(t, e);
    events.push_back(std::move(ev));
  }
  nlohmann::ordered_json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ns";
  nlohmann::ordered_json other;
  other["artifact"] = artifact;
  other["target"] = t.target;
  other["simulated_device_us"] = t.device_ns / 1e3;
  other["time_base"] = "simulated device time; host-fallback ops are markers of zero length";
  nlohmann::ordered_json as = nlohmann::ordered_json::array();
  for (const device::Assumption& a : t.assumptions) {
    as.push_back({{"name", a.name}, {"value", a.value}, {"unit", a.unit}, {"why", a.why}});
  }
  other["assumptions"] = std::move(as);
  doc["otherData"] = std::move(other);
  return doc.dump();
}

std::string perfetto_trace_bytes(const Timeline& t, const std::string& artifact) {
  namespace pp = ::perfetto::protos;
  constexpr uint32_t kSequence = 1;
  const TrackIndex ix = index_tracks(t);
  pp::Trace trace;
  // Track uuids: processes at pid << 32, tracks at (pid << 32) | tid-in-process + 1.
  const auto process_uuid = [](int pid) { return static_cast<uint64_t>(pid) << 32; };
  const auto track_uuid = [](const TraceTrack& tr) {
    return (static_cast<uint64_t>(tr.pid) << 32) | static_cast<uint64_t>(tr.tid + 1);
  };
  bool first = true;
  const auto new_packet = [&]() {
    pp::TracePacket* p = trace.add_packet();
    p->set_trusted_packet_sequence_id(kSequence);
    if (first) p->set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    first = false;
    return p;
  };
  std::map<int, std::string> processes;
  for (const auto& [k, tr] : ix.tracks) processes[tr.pid] = tr.process;
  processes[ix.plan_calls.pid] = ix.plan_calls.process + " of " + artifact;
  for (const auto& [pid, name] : processes) {
    pp::TrackDescriptor* d = new_packet()->mutable_track_descriptor();
    d->set_uuid(process_uuid(pid));
    d->mutable_process()->set_pid(pid);
    d->mutable_process()->set_process_name(name);
  }
  for (const TraceTrack& tr : trace_tracks(t)) {
    pp::TrackDescriptor* d = new_packet()->mutable_track_descriptor();
    d->set_uuid(track_uuid(tr));
    d->set_parent_uuid(process_uuid(tr.pid));
    d->set_name(tr.name);
    d->mutable_thread()->set_pid(tr.pid);
    d->mutable_thread()->set_tid(tr.tid);
    d->mutable_thread()->set_thread_name(tr.name);
  }

  // Slices: per track in time order (begin, end, begin, end, ...), then merged by timestamp
  // with a stable sort so zero-length and back-to-back slices stay well nested.
  struct Pending {
    uint64_t ts;
    pp::TrackEvent event;
  };
  std::vector<Pending> slices;
  const auto annotate = [](pp::TrackEvent& ev, const std::string& name, const auto& value) {
    pp::DebugAnnotation* a = ev.add_debug_annotations();
    a->set_name(name);
    using V = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<V, std::string>) {
      a->set_string_value(value);
    } else if constexpr (std::is_floating_point_v<V>) {
      a->set_double_value(value);
    } else {
      a->set_uint_value(static_cast<uint64_t>(value));
    }
  };
  std::map<uint64_t, std::vector<size_t>> by_track;  // track uuid -> indices into t.events
  for (size_t i = 0; i < t.events.size(); ++i) {
    const TimelineEvent& e = t.events[i];
    by_track[track_uuid(ix.tracks.at({e.core, e.unit, e.lane}))].push_back(i);
  }
  for (auto& [uuid, indices] : by_track) {
    std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      return t.events[a].start_ns < t.events[b].start_ns;
    });
    for (size_t i : indices) {
      const TimelineEvent& e = t.events[i];
      Pending b{to_ns(e.start_ns), {}};
      b.event.set_type(pp::TrackEvent::TYPE_SLICE_BEGIN);
      b.event.set_track_uuid(uuid);
      b.event.set_name(event_label(t, e));
      b.event.add_categories(
          e.unit.rfind("dma", 0) == 0 ? "dma" : std::string(device::engine_name(e.engine)));
      annotate(b.event, "opcode", std::string(device::opcode_name(e.opcode)));
      annotate(b.event, "engine", std::string(device::engine_name(e.engine)));
      annotate(b.event, "instruction", e.instruction_index);
      annotate(b.event, "plan_step", e.step);
      if (e.node >= 0) {
        annotate(b.event, "op", t.nodes[e.node].op);
        const std::string src = node_source(t.nodes[e.node]);
        if (!src.empty()) annotate(b.event, "source", src);
      }
      if (e.bytes) annotate(b.event, "bytes", e.bytes);
      if (e.tensor_flops > 0) annotate(b.event, "flops", e.tensor_flops);
      Pending en{std::max(b.ts, to_ns(e.end_ns)), {}};
      en.event.set_type(pp::TrackEvent::TYPE_SLICE_END);
      en.event.set_track_uuid(uuid);
      slices.push_back(std::move(b));
      slices.push_back(std::move(en));
    }
  }
  for (const TimelineStep& s : t.steps) {
    Pending b{to_ns(s.start_ns), {}};
    if (s.device) {
      b.event.set_type(pp::TrackEvent::TYPE_SLICE_BEGIN);
      b.event.set_track_uuid(track_uuid(ix.plan_calls));
      b.event.set_name(s.name);
      annotate(b.event, "plan_step", s.step);
      annotate(b.event, "instructions", s.instructions);
      Pending en{std::max(b.ts, to_ns(s.end_ns)), {}};
      en.event.set_type(pp::TrackEvent::TYPE_SLICE_END);
      en.event.set_track_uuid(track_uuid(ix.plan_calls));
      slices.push_back(std::move(b));
      slices.push_back(std::move(en));
    } else {
      b.event.set_type(pp::TrackEvent::TYPE_INSTANT);
      b.event.set_track_uuid(track_uuid(ix.plan_host));
      b.event.set_name(s.node >= 0 ? t.nodes[s.node].name + " (" + s.name + ")" : s.name);
      annotate(b.event, "plan_step", s.step);
      annotate(b.event, "note",
               std::string("host CPU op: time measured by bench/run, not simulated"));
      slices.push_back(std::move(b));
    }
  }
  std::stable_sort(slices.begin(), slices.end(),
                   [](const Pending& a, const Pending& b) { return a.ts < b.ts; });
  for (Pending& p : slices) {
    pp::TracePacket* packet = new_packet();
    packet->set_timestamp(p.ts);
    *packet->mutable_track_event() = std::move(p.event);
  }
  std::string out;
  if (!trace.SerializeToString(&out))
    throw CommandExit{kExitError, "serialising the Perfetto trace failed", ""};
  return out;
}

void write_trace(const std::string& path, TraceFormat format, const Timeline& t,
                 const std::string& artifact) {
  const std::string bytes = format == TraceFormat::chrome_json ? chrome_trace_json(t, artifact)
                                                               : perfetto_trace_bytes(t, artifact);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw CommandExit{kExitError, "cannot create '" + path + "'", ""};
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw CommandExit{kExitError, "writing '" + path + "' failed", ""};
}

}  // namespace neuronc::tools
