// Writers of a simulated timeline (trace_timeline.h) for trace viewers: the Chrome trace event
// format (JSON, chrome://tracing and ui.perfetto.dev) and Perfetto's protobuf trace format.
// Both have one process per NeuronCore with a track per engine and per DMA queue (extra lanes
// "dma.q3 #2" where transfers of a queue overlap), plus an "execution plan" process with the
// device calls and host-fallback ops; every slice is named after its IR node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/trace_timeline.h"

namespace neuronc::tools {

enum class TraceFormat { chrome_json, perfetto };

// From the output file name: ".json" -> chrome_json; ".pftrace", ".perfetto-trace" or ".pb"
// -> perfetto. Throws CommandExit (usage) otherwise.
TraceFormat trace_format_for(const std::string& path);

// One track (row) of the trace: a unit lane of a core, or the plan.
struct TraceTrack {
  int pid = 0;
  int tid = 0;
  std::string process;  // "NeuronCore 0 (trn1)" or "execution plan"
  std::string name;     // "tensor", "dma.q3", "dma.q3 #2", "device calls", "host ops"
  int core = -1;        // -1 for the plan's tracks
  std::string unit;     // TimelineEvent::unit ("" for the plan's tracks)
  uint32_t lane = 0;
};

// The tracks of `t` in display order (engines, then collectives, then DMA queues).
std::vector<TraceTrack> trace_tracks(const Timeline& t);

// The Chrome trace event document: {"traceEvents": [...], "displayTimeUnit": "ns",
// "otherData": {...}}.
std::string chrome_trace_json(const Timeline& t, const std::string& artifact);
// Serialized perfetto.protos.Trace.
std::string perfetto_trace_bytes(const Timeline& t, const std::string& artifact);

// Writes `t` to `path` in `format`. Throws CommandExit on I/O failure.
void write_trace(const std::string& path, TraceFormat format, const Timeline& t,
                 const std::string& artifact);

}  // namespace neuronc::tools
