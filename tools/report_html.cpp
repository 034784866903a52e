// The compile report page (report_html.h). Everything is drawn here as inline SVG so the page
// needs no network and no script to show its plots; the inline script only adds hover details
// and marks the page (data-plots-drawn, data-js-errors) so a headless browser test can check
// that every plot rendered and nothing failed.
#include "tools/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "artifact_format/reader.h"
#include "device/target.h"
#include "tools/cli_output.h"
#include "tools/html_page.h"
#include "tools/trace_export.h"
#include "tools/trace_timeline.h"

namespace neuronc::tools {
namespace {

namespace art = ::neuronc::artifact;

using html::esc;
using html::fmt;

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt("%.2f GB", b / 1e9);
  if (b >= 1e6) return fmt("%.2f MB", b / 1e6);
  if (b >= 1e3) return fmt("%.1f KB", b / 1e3);
  return fmt("%.0f B", b);
}

std::string us_text(double ns) {
  return fmt("%.3f", ns / 1e3) + " µs";
}

std::string flops_text(double f) {
  if (f >= 1e12) return fmt("%.2f TFLOP", f / 1e12);
  if (f >= 1e9) return fmt("%.2f GFLOP", f / 1e9);
  if (f >= 1e6) return fmt("%.2f MFLOP", f / 1e6);
  return fmt("%.0f FLOP", f);
}

std::string color_of(const std::string& unit) {
  if (unit == "tensor") return "#4e79a7";
  if (unit == "vector") return "#f28e2b";
  if (unit == "scalar") return "#59a14f";
  if (unit == "gpsimd") return "#b07aa1";
  if (unit == "sync") return "#9c755f";
  if (unit == "collective") return "#e15759";
  if (unit.rfind("dma", 0) == 0) return "#76b7b2";
  return "#bab0ac";
}

std::string unit_class(const std::string& unit) {
  return unit.rfind("dma", 0) == 0 ? "dma" : unit;
}

// Per-layer (IR node) aggregates of the timeline.
struct LayerTime {
  int32_t node = -1;
  std::map<std::string, double> busy_ns;  // by unit class
  double total_busy_ns = 0;
  double first_ns = 1e300, last_ns = 0;
  double flops = 0;
  uint64_t dma_bytes = 0;
};

std::vector<LayerTime> layer_times(const Timeline& t) {
  std::map<int32_t, LayerTime> by;
  for (const TimelineEvent& e : t.events) {
    LayerTime& l = by[e.node];
    l.node = e.node;
    const double d = e.end_ns - e.start_ns;
    l.busy_ns[unit_class(e.unit)] += d;
    l.total_busy_ns += d;
    l.first_ns = std::min(l.first_ns, e.start_ns);
    l.last_ns = std::max(l.last_ns, e.end_ns);
    l.flops += e.tensor_flops;
    l.dma_bytes += e.bytes;
  }
  std::vector<LayerTime> out;
  for (auto& [k, v] : by) out.push_back(std::move(v));
  std::stable_sort(out.begin(), out.end(), [](const LayerTime& a, const LayerTime& b) {
    return a.total_busy_ns > b.total_busy_ns;
  });
  return out;
}

std::string layer_name(const Timeline& t, int32_t node) {
  return node >= 0 ? t.nodes[node].name : std::string("(no IR node)");
}

const char* kUnitClasses[] = {"tensor", "vector", "scalar", "gpsimd", "sync", "dma", "collective"};

std::string legend_html() {
  std::string s = "<div class=\"legend\">";
  for (const char* u : kUnitClasses) {
    s += "<span><i style=\"background:" + color_of(u) + "\"></i>" + u + "</span>";
  }
  return s + "</div>";
}

// ----- plots --------------------------------------------------------------------------------

std::string coverage_svg(size_t device_nodes, size_t host_nodes) {
  const double total = std::max<double>(1, static_cast<double>(device_nodes + host_nodes));
  const double w = 600, dw = w * static_cast<double>(device_nodes) / total;
  std::string s =
      "<svg class=\"plot\" id=\"coverage\" width=\"620\" height=\"46\" role=\"img\" "
      "aria-label=\"device and host node share\">";
  s += "<rect x=\"10\" y=\"8\" width=\"" + fmt("%.2f", dw) +
       "\" height=\"22\" fill=\"#4e79a7\"><title>device: " + std::to_string(device_nodes) +
       " nodes</title></rect>";
  s += "<rect x=\"" + fmt("%.2f", 10 + dw) + "\" y=\"8\" width=\"" + fmt("%.2f", w - dw) +
       "\" height=\"22\" fill=\"#e15759\"><title>host: " + std::to_string(host_nodes) +
       " nodes</title></rect>";
  s += "<text x=\"12\" y=\"43\" font-size=\"11\">device " +
       fmt("%.1f", 100.0 * device_nodes / total) + "% of optimised nodes, host " +
       fmt("%.1f", 100.0 * host_nodes / total) + "%</text>";
  return s + "</svg>";
}

std::string memory_svg(const std::vector<std::tuple<std::string, double, double>>& bars) {
  const double w = 420, row = 26;
  std::string s = "<svg class=\"plot\" id=\"memory\" width=\"900\" height=\"" +
                  fmt("%.0f", row * bars.size() + 10) +
                  "\" role=\"img\" aria-label=\"memory use against capacity\">";
  double y = 5;
  for (const auto& [label, used, cap] : bars) {
    const double frac = cap > 0 ? std::min(1.0, used / cap) : 0;
    s += "<text x=\"0\" y=\"" + fmt("%.1f", y + 15) + "\" font-size=\"12\">" + esc(label) +
         "</text>";
    s += "<rect x=\"170\" y=\"" + fmt("%.1f", y + 3) + "\" width=\"" + fmt("%.1f", w) +
         "\" height=\"16\" fill=\"#eee\" stroke=\"#ccc\"/>";
    s += "<rect x=\"170\" y=\"" + fmt("%.1f", y + 3) + "\" width=\"" +
         fmt("%.2f", std::max(1.0, w * frac)) + "\" height=\"16\" fill=\"#4e79a7\"><title>" +
         esc(label) + ": " + bytes_text(used) + " of " + bytes_text(cap) + "</title></rect>";
    s += "<text x=\"" + fmt("%.1f", 176 + w) + "\" y=\"" + fmt("%.1f", y + 15) +
         "\" font-size=\"12\">" + bytes_text(used) + " / " + bytes_text(cap) + " (" +
         fmt("%.1f", 100 * frac) + "%)</text>";
    y += row;
  }
  return s + "</svg>";
}

std::string layers_svg(const Timeline& t, const std::vector<LayerTime>& layers, size_t shown) {
  const double label_w = 220, w = 560, row = 18;
  double maxv = 0;
  for (size_t i = 0; i < shown; ++i) maxv = std::max(maxv, layers[i].total_busy_ns);
  maxv = std::max(maxv, 1e-9);
  std::string s = "<svg class=\"plot\" id=\"layers\" width=\"" + fmt("%.0f", label_w + w + 110) +
                  "\" height=\"" + fmt("%.0f", row * shown + 10) +
                  "\" role=\"img\" aria-label=\"busy time per layer\">";
  for (size_t i = 0; i < shown; ++i) {
    const LayerTime& l = layers[i];
    const double y = 5 + row * static_cast<double>(i);
    std::string name = layer_name(t, l.node);
    if (name.size() > 32) name = name.substr(0, 30) + "..";
    s += "<text x=\"" + fmt("%.0f", label_w - 6) + "\" y=\"" + fmt("%.1f", y + 12) +
         "\" font-size=\"11\" text-anchor=\"end\">" + esc(name) + "</text>";
    double x = label_w;
    for (const char* u : kUnitClasses) {
      auto it = l.busy_ns.find(u);
      if (it == l.busy_ns.end()) continue;
      const double bw = w * it->second / maxv;
      s += "<rect x=\"" + fmt("%.2f", x) + "\" y=\"" + fmt("%.1f", y + 2) + "\" width=\"" +
           fmt("%.2f", std::max(0.5, bw)) + "\" height=\"" + fmt("%.0f", row - 4) + "\" fill=\"" +
           color_of(u) + "\"><title>" + esc(layer_name(t, l.node)) + " " + u + ": " +
           us_text(it->second) + "</title></rect>";
      x += bw;
    }
    s += "<text x=\"" + fmt("%.2f", x + 4) + "\" y=\"" + fmt("%.1f", y + 12) +
         "\" font-size=\"11\">" + us_text(l.total_busy_ns) + "</text>";
  }
  return s + "</svg>";
}

std::string timeline_svg(const Timeline& t) {
  // Rows: every engine/DMA track in the trace writers' order, then the plan (device calls with
  // host-op markers).
  std::map<std::tuple<int, std::string, uint32_t>, size_t> row_of;
  std::vector<std::string> labels;
  for (const TraceTrack& tr : trace_tracks(t)) {
    if (tr.core < 0) continue;
    row_of[{tr.core, tr.unit, tr.lane}] = labels.size();
    labels.push_back(t.num_cores > 1 ? "core " + std::to_string(tr.core) + " " + tr.name : tr.name);
  }
  const size_t plan_row = labels.size();
  labels.push_back("plan");
  const double label_w = 110, w = 900, row = 16, top = 20;
  const double span = std::max(1e-9, t.device_ns);
  const double h = top + row * static_cast<double>(labels.size()) + 24;
  std::string s = "<svg class=\"plot\" id=\"timeline\" width=\"" + fmt("%.0f", label_w + w + 20) +
                  "\" height=\"" + fmt("%.0f", h) +
                  "\" role=\"img\" aria-label=\"engine timeline\">";
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = top + row * static_cast<double>(i);
    s += "<text x=\"" + fmt("%.0f", label_w - 6) + "\" y=\"" + fmt("%.1f", y + 11) +
         "\" font-size=\"10\" text-anchor=\"end\">" + esc(labels[i]) + "</text>";
    s += "<line x1=\"" + fmt("%.0f", label_w) + "\" x2=\"" + fmt("%.0f", label_w + w) + "\" y1=\"" +
         fmt("%.1f", y + row) + "\" y2=\"" + fmt("%.1f", y + row) + "\" stroke=\"#eee\"/>";
  }
  for (int k = 0; k <= 5; ++k) {
    const double x = label_w + w * k / 5.0;
    s += "<line x1=\"" + fmt("%.1f", x) + "\" x2=\"" + fmt("%.1f", x) + "\" y1=\"" +
         fmt("%.0f", top - 4) + "\" y2=\"" + fmt("%.1f", h - 20) + "\" stroke=\"#ddd\"/>";
    s += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", h - 6) +
         "\" font-size=\"10\" text-anchor=\"middle\">" + fmt("%.2f", span * k / 5.0 / 1e3) +
         " µs</text>";
  }
  // Events, merged per row when they fall within half a pixel of each other, so a large
  // program stays a few thousand shapes.
  struct Open {
    double x0 = -1, x1 = -1;
    std::string color, first_label;
    size_t count = 0;
  };
  std::map<size_t, Open> open;
  const auto x_of = [&](double ns) { return label_w + w * ns / span; };
  const auto flush = [&](size_t r, Open& o) {
    if (o.count == 0) return;
    const double y = top + row * static_cast<double>(r) + 2;
    s += "<rect x=\"" + fmt("%.2f", o.x0) + "\" y=\"" + fmt("%.1f", y) + "\" width=\"" +
         fmt("%.2f", std::max(0.4, o.x1 - o.x0)) + "\" height=\"" + fmt("%.0f", row - 4) +
         "\" fill=\"" + o.color + "\"><title>" + esc(o.first_label) +
         (o.count > 1 ? " (+" + std::to_string(o.count - 1) + " more)" : "") + "</title></rect>";
    o.count = 0;
  };
  for (const TimelineEvent& e : t.events) {
    const size_t r = row_of.at({e.core, e.unit, e.lane});
    Open& o = open[r];
    const double x0 = x_of(e.start_ns), x1 = x_of(e.end_ns);
    const std::string color = color_of(e.unit);
    if (o.count > 0 && x0 - o.x1 < 0.5 && color == o.color) {
      o.x1 = std::max(o.x1, x1);
      ++o.count;
      continue;
    }
    flush(r, o);
    o.x0 = x0;
    o.x1 = x1;
    o.color = color;
    o.first_label = event_label(t, e) + " (" + std::string(device::opcode_name(e.opcode)) + ") " +
                    us_text(e.end_ns - e.start_ns);
    o.count = 1;
  }
  for (auto& [r, o] : open) flush(r, o);
  for (const TimelineStep& st : t.steps) {
    const double y = top + row * static_cast<double>(plan_row) + 2;
    if (st.device) {
      s += "<rect x=\"" + fmt("%.2f", x_of(st.start_ns)) + "\" y=\"" + fmt("%.1f", y) +
           "\" width=\"" + fmt("%.2f", std::max(0.5, x_of(st.end_ns) - x_of(st.start_ns))) +
           "\" height=\"" + fmt("%.0f", row - 4) +
           "\" fill=\"#cfd8e3\" stroke=\"#4e79a7\"><title>" + esc(st.name) + ": " +
           us_text(st.end_ns - st.start_ns) + "</title></rect>";
    } else {
      s += "<path d=\"M" + fmt("%.2f", x_of(st.start_ns)) + " " + fmt("%.1f", y) + " l4 " +
           fmt("%.0f", row - 4) + " h-8 z\" fill=\"#e15759\"><title>host op " + esc(st.name) +
           " (CPU time measured by neuronc bench, not simulated)</title></path>";
    }
  }
  return s + "</svg>";
}

struct RoofPoint {
  std::string label, kind;
  double ai = 0, tflops = 0;
};

std::string roofline_svg(const Timeline& t, const std::vector<RoofPoint>& pts) {
  const double peak = t.peak_flops_per_ns / 1e3;  // TFLOPS
  const double bw = t.hbm_bytes_per_ns;           // GB/s per core -> TFLOPS = AI * bw / 1e3
  const double x_lo = 0.01, x_hi = 1e5, y_lo = 1e-5, y_hi = peak * 3;
  const double L = 70, T = 15, W = 640, H = 360;
  const auto X = [&](double ai) {
    return L + W * (std::log10(ai) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo));
  };
  const auto Y = [&](double tf) {
    return T + H - H * (std::log10(tf) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo));
  };
  std::string s = "<svg class=\"plot\" id=\"roofline\" width=\"" + fmt("%.0f", L + W + 200) +
                  "\" height=\"" + fmt("%.0f", T + H + 45) +
                  "\" role=\"img\" aria-label=\"roofline\">";
  s += "<rect x=\"" + fmt("%.0f", L) + "\" y=\"" + fmt("%.0f", T) + "\" width=\"" + fmt("%.0f", W) +
       "\" height=\"" + fmt("%.0f", H) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (double d = x_lo; d <= x_hi * 1.0001; d *= 10) {
    s += "<line x1=\"" + fmt("%.1f", X(d)) + "\" x2=\"" + fmt("%.1f", X(d)) + "\" y1=\"" +
         fmt("%.0f", T) + "\" y2=\"" + fmt("%.0f", T + H) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + fmt("%.1f", X(d)) + "\" y=\"" + fmt("%.0f", T + H + 14) +
         "\" font-size=\"10\" text-anchor=\"middle\">" + fmt("%g", d) + "</text>";
  }
  for (double d = y_lo; d <= y_hi; d *= 10) {
    s += "<line x1=\"" + fmt("%.0f", L) + "\" x2=\"" + fmt("%.0f", L + W) + "\" y1=\"" +
         fmt("%.1f", Y(d)) + "\" y2=\"" + fmt("%.1f", Y(d)) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + fmt("%.0f", L - 4) + "\" y=\"" + fmt("%.1f", Y(d) + 3) +
         "\" font-size=\"10\" text-anchor=\"end\">" + fmt("%g", d) + "</text>";
  }
  s += "<text x=\"" + fmt("%.0f", L + W / 2) + "\" y=\"" + fmt("%.0f", T + H + 32) +
       "\" font-size=\"11\" text-anchor=\"middle\">arithmetic intensity (FLOP per HBM/DMA "
       "byte)</text>";
  s += "<text x=\"14\" y=\"" + fmt("%.0f", T + H / 2) +
       "\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 14 " +
       fmt("%.0f", T + H / 2) + ")\">achieved TFLOPS (one core)</text>";
  // Roofs: BF16 and FP32 peaks under the HBM bandwidth share.
  const auto roof = [&](double p, const char* color, const char* dash, const std::string& name) {
    const double ridge = p * 1e3 / bw;
    const double x0 = std::max(x_lo, y_lo * 1e3 / bw);
    s += "<path d=\"M" + fmt("%.1f", X(x0)) + " " + fmt("%.1f", Y(x0 * bw / 1e3)) + " L" +
         fmt("%.1f", X(ridge)) + " " + fmt("%.1f", Y(p)) + " L" + fmt("%.1f", X(x_hi)) + " " +
         fmt("%.1f", Y(p)) + "\" fill=\"none\" stroke=\"" + color +
         "\" stroke-width=\"2\" stroke-dasharray=\"" + dash + "\"><title>" + esc(name) + ": peak " +
         fmt("%.2f", p) + " TFLOPS, ridge " + fmt("%.0f", ridge) + " FLOP/B</title></path>";
    s += "<text x=\"" + fmt("%.1f", X(x_hi) - 4) + "\" y=\"" + fmt("%.1f", Y(p) - 4) +
         "\" font-size=\"10\" text-anchor=\"end\">" + esc(name) + " " + fmt("%.1f", p) +
         " TFLOPS</text>";
  };
  roof(peak, "#333", "none", "BF16");
  roof(peak / 4, "#888", "5,4", "FP32");
  {
    // Label along the bandwidth roof, rotated to its slope on screen.
    const double x1 = X(1), y1 = Y(bw / 1e3), x2 = X(10), y2 = Y(bw / 1e2);
    const double deg = std::atan2(y2 - y1, x2 - x1) * 180 / 3.14159265358979;
    s += "<text x=\"" + fmt("%.1f", x1) + "\" y=\"" + fmt("%.1f", y1 - 6) +
         "\" font-size=\"10\" transform=\"rotate(" + fmt("%.1f", deg) + " " + fmt("%.1f", x1) +
         " " + fmt("%.1f", y1 - 6) + ")\">HBM " + fmt("%.0f", bw) + " GB/s</text>";
  }
  for (const RoofPoint& p : pts) {
    if (!(p.ai > 0) || !(p.tflops > 0)) continue;
    const double ai = std::clamp(p.ai, x_lo, x_hi), tf = std::clamp(p.tflops, y_lo, y_hi);
    const char* color = p.kind == "model"       ? "#e15759"
                        : p.kind == "partition" ? "#f28e2b"
                                                : "#4e79a7";
    const double r = p.kind == "model" ? 6 : p.kind == "partition" ? 5 : 3.5;
    s += "<circle cx=\"" + fmt("%.1f", X(ai)) + "\" cy=\"" + fmt("%.1f", Y(tf)) + "\" r=\"" +
         fmt("%.1f", r) + "\" fill=\"" + color + "\" fill-opacity=\"0.8\"><title>" + esc(p.label) +
         ": " + fmt("%.2f", p.ai) + " FLOP/B, " + fmt("%.4f", p.tflops) +
         " TFLOPS</title></circle>";
  }
  double ly = T + 10;
  for (auto [name, color] : {std::pair{"whole model", "#e15759"},
                             {"device partition", "#f28e2b"},
                             {"layer", "#4e79a7"}}) {
    s += "<circle cx=\"" + fmt("%.0f", L + W + 16) + "\" cy=\"" + fmt("%.0f", ly) +
         "\" r=\"5\" fill=\"" + color + "\"/>";
    s += "<text x=\"" + fmt("%.0f", L + W + 26) + "\" y=\"" + fmt("%.0f", ly + 4) +
         "\" font-size=\"11\">" + name + "</text>";
    ly += 18;
  }
  return s + "</svg>";
}

}  // namespace

namespace {

// The compile report, written section by section into `h`.
class CompileReport {
 public:
  CompileReport(std::ostringstream& h, const compiler::CompileResult& r,
                const art::ArtifactContents& c, const Timeline& t, const device::Target& target,
                const CompileReportInfo& info)
      : h(h), r(r), c(c), t(t), target(target), info(info) {}
  void write() {
    summary_section();
    coverage_section();
    partitions_section();
    memory_plan_section();
    layers_section();
    timeline_and_roofline_section();
    assumptions_section();
  }

 private:
  // Summary: input, artifact, time, FLOPs and utilisation, HBM traffic, specialised dims.
  void summary_section() {
    for (const compiler::PartitionReport& p : r.partitions) {
      (p.device ? device_parts : host_parts) += 1;
      (p.device ? device_nodes : host_nodes) += p.nodes;
    }
    h << "<h2>Summary</h2><table>"
      << "<tr><th>input</th><td>" << esc(r.container) << ", PyTorch " << esc(r.torch_version)
      << "; " << r.imported_nodes << " nodes imported, " << r.optimized_nodes
      << " after optimisation</td></tr>"
      << "<tr><th>artifact</th><td>" << bytes_text(static_cast<double>(r.artifact.size())) << "; "
      << device_parts << " device and " << host_parts << " host partitions; " << t.instructions
      << " device instructions</td></tr>"
      << "<tr><th>simulated device time</th><td>" << us_text(t.device_ns)
      << (host_parts
              ? " (plus the host-fallback ops, timed on the CPU by <code>neuronc bench</code>)"
              : "")
      << "</td></tr>"
      << "<tr><th>model FLOPs</th><td>" << flops_text(r.flops) << "</td></tr>"
      << "<tr><th>MFU / HFU / MBU</th><td>"
      << fmt("%.3g",
             100 * (t.device_ns > 0 ? r.flops / (t.peak_flops_per_ns * t.num_cores * t.device_ns)
                                    : 0))
      << "% / " << fmt("%.3g", 100 * t.hfu()) << "% / " << fmt("%.3g", 100 * t.mbu())
      << "% (BF16 peak " << fmt("%.2f", t.peak_flops_per_ns / 1e3) << " TFLOPS, HBM "
      << fmt("%.1f", t.hbm_bytes_per_ns) << " GB/s per core)</td></tr>"
      << "<tr><th>HBM traffic</th><td>" << bytes_text(static_cast<double>(t.hbm_read_bytes))
      << " read, " << bytes_text(static_cast<double>(t.hbm_write_bytes)) << " written</td></tr>";
    for (const auto& [sym, v] : r.specialized) {
      h << "<tr><th>symbolic dim " << esc(sym) << "</th><td>specialised to " << v << " (from "
        << esc(r.specialized_from) << ")</td></tr>";
    }
    h << "<tr><th>compile time</th><td>"
      << fmt("%.3f", r.seconds_frontend + r.seconds_passes + r.seconds_codegen + r.seconds_write)
      << " s</td></tr></table>\n";
  }

  // Op coverage after optimisation: device and host nodes per operator, with the host reasons.
  void coverage_section() {
    struct OpRow {
      size_t device = 0, host = 0;
      std::vector<std::string> reasons;
    };
    std::map<std::string, OpRow> ops;
    std::set<int32_t> device_node_ids;
    for (const TimelineEvent& e : t.events) {
      if (e.node >= 0) device_node_ids.insert(e.node);
    }
    for (int32_t n : device_node_ids) ops[c.debug_nodes[n].op].device += 1;
    for (const compiler::HostNodeReport& hn : r.host_nodes) {
      OpRow& o = ops[hn.op];
      o.host += 1;
      o.reasons.push_back(hn.node + ": " + hn.reason +
                          (hn.location.empty() ? "" : " at " + hn.location));
    }
    h << "<h2>Op coverage</h2>" << coverage_svg(device_nodes, host_nodes)
      << "<p class=\"note\">After optimisation. Unsupported operators stop compilation, so a "
         "written "
         "report has none. "
         "Device counts are the nodes that emitted NeuronCore instructions.</p>"
      << "<table><tr><th>operator</th><th>device nodes</th><th>host nodes</th><th>why on the "
         "host</th></tr>";
    for (const auto& [op, row] : ops) {
      h << "<tr><td><code>" << esc(op) << "</code></td><td class=\"n\">" << row.device
        << "</td><td class=\"n\">" << row.host << "</td><td>";
      for (const std::string& why : row.reasons) h << esc(why) << "<br>";
      h << "</td></tr>";
    }
    h << "</table>\n";
  }

  // Partitions: per partition its engine, size, traffic, memory peaks, FLOPs and time; adds their
  // roofline points.
  void partitions_section() {
    h << "<h2>Partitions</h2><table><tr><th>#</th><th>runs "
         "on</th><th>nodes</th><th>instructions</th><th>HBM traffic "
         "(simulated)</th><th>SBUF peak / partition</th><th>PSUM peak / partition</th><th>model "
         "FLOPs</th><th>simulated "
         "time</th></tr>";
    std::vector<const TimelineStep*> device_steps;
    for (const TimelineStep& s : t.steps) {
      if (s.device) device_steps.push_back(&s);
    }
    size_t dk = 0;
    for (size_t i = 0; i < r.partitions.size(); ++i) {
      const compiler::PartitionReport& p = r.partitions[i];
      h << "<tr><td>" << i << "</td><td>" << (p.device ? "NeuronCore" : "host CPU")
        << "</td><td class=\"n\">" << p.nodes << "</td>";
      if (p.device && dk < device_steps.size()) {
        const TimelineStep& s = *device_steps[dk++];
        const double hbm = static_cast<double>(s.hbm_read_bytes + s.hbm_write_bytes);
        h << "<td class=\"n\">" << p.instructions << "</td><td class=\"n\">" << bytes_text(hbm)
          << "</td><td class=\"n\">" << bytes_text(p.sbuf_peak_bytes) << "</td><td class=\"n\">"
          << bytes_text(p.psum_peak_bytes) << "</td><td class=\"n\">" << flops_text(p.flops)
          << "</td><td class=\"n\">" << us_text(s.end_ns - s.start_ns) << "</td>";
        const double dt = s.end_ns - s.start_ns;
        if (hbm > 0 && dt > 0 && s.tensor_flops > 0) {
          points.push_back({s.name, "partition", s.tensor_flops / hbm, s.tensor_flops / dt / 1e3});
        }
      } else {
        h << "<td colspan=\"6\" class=\"note\">host-fallback ops, run by the loader's CPU "
             "kernels</td>";
      }
      h << "</tr>";
    }
    h << "</table>\n";
  }

  // Memory plan: the HBM arena and the SBUF / PSUM peaks against the target.
  void memory_plan_section() {
    std::vector<std::tuple<std::string, double, double>> bars;
    bars.emplace_back("HBM arena", static_cast<double>(c.memory_plan.hbm_arena_bytes),
                      static_cast<double>(target.hbm_bytes_per_core));
    bars.emplace_back("SBUF peak / partition", c.memory_plan.sbuf_peak_bytes,
                      target.sbuf_partition_bytes);
    bars.emplace_back("PSUM peak / partition", c.memory_plan.psum_peak_bytes,
                      target.psum_partition_bytes);
    uint64_t placed = 0;
    for (const art::Constant& k : c.constants)
      placed += k.hbm_offset != art::kHostOnly ? k.size : 0;
    h << "<h2>Memory plan</h2>" << memory_svg(bars) << "<p class=\"note\">HBM arena "
      << bytes_text(c.memory_plan.hbm_arena_bytes)
      << " (inputs, weights and intermediates, liveness-reused) of the core's "
      << bytes_text(target.hbm_bytes_per_core) << " share; " << c.constants.size() << " constants, "
      << bytes_text(static_cast<double>(r.constant_bytes)) << " ("
      << bytes_text(static_cast<double>(placed)) << " placed in HBM). SBUF " << target.partitions
      << " &times; " << bytes_text(target.sbuf_partition_bytes) << ", PSUM " << target.partitions
      << " &times; " << bytes_text(target.psum_partition_bytes) << ".</p>\n";
  }

  // Per-layer simulated time: the busiest IR nodes; adds layer and whole-model roofline points.
  void layers_section() {
    const std::vector<LayerTime> layers = layer_times(t);
    const size_t shown = std::min<size_t>(layers.size(), 40);
    h << "<h2>Per-layer simulated time</h2>" << legend_html();
    if (shown) {
      h << layers_svg(t, layers, shown);
    } else {
      h << "<svg class=\"plot\" id=\"layers\" width=\"400\" height=\"30\"><rect x=\"0\" y=\"0\" "
           "width=\"1\" height=\"1\" "
           "fill=\"none\"/><text x=\"4\" y=\"20\" font-size=\"12\">no device "
           "instructions</text></svg>";
    }
    h << "<p class=\"note\">Busy time of each IR node's instructions and DMA transfers, summed "
         "over "
         "engines "
         "(engines overlap, so the sum exceeds the wall span). Top "
      << shown << " of " << layers.size()
      << ".</p><table><tr><th>node</th><th>op</th><th>source</th><th>busy</th><th>span</th>"
         "<th>TensorE FLOPs</th><th>DMA bytes</th></tr>";
    for (size_t i = 0; i < shown; ++i) {
      const LayerTime& l = layers[i];
      const std::string op = l.node >= 0 ? t.nodes[l.node].op : "";
      const std::string src = l.node >= 0 ? node_source(t.nodes[l.node]) : "";
      h << "<tr><td>" << esc(layer_name(t, l.node)) << "</td><td><code>" << esc(op)
        << "</code></td><td>" << esc(src) << "</td><td class=\"n\">" << us_text(l.total_busy_ns)
        << "</td><td class=\"n\">" << us_text(l.last_ns - l.first_ns) << "</td><td class=\"n\">"
        << flops_text(l.flops) << "</td><td class=\"n\">"
        << bytes_text(static_cast<double>(l.dma_bytes)) << "</td></tr>";
    }
    h << "</table>\n";
    for (const LayerTime& l : layers) {
      const double span = l.last_ns - l.first_ns;
      if (l.flops > 0 && l.dma_bytes > 0 && span > 0) {
        points.push_back({layer_name(t, l.node), "layer",
                          l.flops / static_cast<double>(l.dma_bytes), l.flops / span / 1e3});
      }
    }
    if (t.device_ns > 0 && t.hbm_bytes() > 0 && r.flops > 0) {
      points.push_back({"whole model", "model", r.flops / static_cast<double>(t.hbm_bytes()),
                        r.flops / t.device_ns / 1e3 / t.num_cores});
    }
  }

  // Engine timeline of one inference and the roofline of the points gathered above.
  void timeline_and_roofline_section() {
    h << "<h2>Engine timeline (one inference)</h2>" << legend_html() << timeline_svg(t)
      << "<p class=\"note\">Rows are the NeuronCore engines' instruction streams and the DMA "
         "queues "
         "(extra rows where "
         "transfers of one queue overlap); the last row is the execution plan. Hover a mark for "
         "its "
         "IR node. For every "
         "instruction use <code>neuronc profile "
      << esc(info.artifact) << " -o trace.pftrace</code>.</p>\n";
    h << "<h2>Roofline</h2>" << roofline_svg(t, points)
      << "<p class=\"note\">One core. Roofs: dense BF16 TensorE peak and FP32 (1/4 rate) under the "
         "core's HBM share "
         "(TRAINIUM.md &sect;6.6). Layers use their DMA bytes and their span on the timeline; "
         "partitions and the "
         "whole model use simulated HBM traffic.</p>\n";
  }

  // The device model's assumptions in effect.
  void assumptions_section() {
    h << "<h2>Assumptions in effect</h2><p class=\"note\">Model choices that no public source "
         "fixes "
         "(TRAINIUM.md "
         "&sect;1); every simulated number above depends on "
         "them.</p><table><tr><th>parameter</th><th>value</th><th>why</th></tr>";
    for (const device::Assumption& as : t.assumptions) {
      h << "<tr><td><code>" << esc(as.name) << "</code></td><td class=\"n\">" << fmt("%g", as.value)
        << " " << esc(as.unit) << "</td><td>" << esc(as.why) << "</td></tr>";
    }
    h << "</table>\n" << html::page_end();
  }

  std::ostringstream& h;
  const compiler::CompileResult& r;
  const art::ArtifactContents& c;
  const Timeline& t;
  const device::Target& target;
  const CompileReportInfo& info;
  size_t device_parts = 0, host_parts = 0, device_nodes = 0, host_nodes = 0;
  std::vector<RoofPoint> points;  // roofline marks, gathered by the sections
};

}  // namespace

std::string render_compile_report(const compiler::CompileResult& r, const CompileReportInfo& info) {
  auto a = art::read_artifact(std::span<const std::byte>(r.artifact.data(), r.artifact.size()));
  if (!a.is_ok())
    throw std::runtime_error("compile report: reading the artifact back: " + a.status().message());
  const art::ArtifactContents& c = a->contents;
  const Timeline t = simulate_timeline(c);
  auto kind = device::parse_target(c.target);
  const device::Target& target = device::target(kind.is_ok() ? *kind : device::TargetKind::trn1);

  std::ostringstream h;
  h << html::page_begin("neuronc compile report: " + info.model);
  h << "<h1>neuronc compile report</h1><p class=\"note\">" << esc(info.model) << " &rarr; "
    << esc(info.artifact) << " &middot; target " << esc(c.target) << " (" << esc(t.core_version)
    << ", " << t.num_cores << " core) &middot; auto-cast " << esc(info.auto_cast) << " &middot; -O"
    << info.opt_level << " &middot; " << esc(c.producer.name + " " + c.producer.version)
    << "</p>\n";

  CompileReport(h, r, c, t, target, info).write();
  return h.str();
}

void write_compile_report(const std::string& path, const compiler::CompileResult& result,
                          const CompileReportInfo& info) {
  std::string page;
  try {
    page = render_compile_report(result, info);
  } catch (const std::exception& e) {
    throw CommandExit{kExitError, e.what(), ""};
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) throw CommandExit{kExitError, "cannot create '" + path + "'", ""};
  f << page;
  if (!f) throw CommandExit{kExitError, "writing '" + path + "' failed", ""};
}

}  // namespace neuronc::tools
