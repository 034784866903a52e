// The compare report page (compare_report.h), drawn from run_compare()'s document alone. Latency
// and cost span orders of magnitude between a NeuronCore row and a GPU baseline, so every axis
// is logarithmic (decades).
#include "tools/compare_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "tools/cli_output.h"
#include "tools/html_page.h"

namespace neuronc::tools {
namespace {

using json = nlohmann::ordered_json;
using html::esc;
using html::fmt;

// A logarithmic axis over whole decades holding every value (positive ones only).
struct LogAxis {
  double lo = 1, hi = 10;
  explicit LogAxis(const std::vector<double>& values) {
    double mn = 0, mx = 0;
    for (double v : values) {
      if (!(v > 0) || !std::isfinite(v)) continue;
      mn = mn > 0 ? std::min(mn, v) : v;
      mx = std::max(mx, v);
    }
    if (mn > 0) {
      lo = std::pow(10.0, std::floor(std::log10(mn)));
      hi = std::pow(10.0, std::ceil(std::log10(mx)));
      if (hi <= lo) hi = lo * 10;
    }
  }
  // Position of `v` on [0, 1] of the axis.
  double at(double v) const {
    return (std::log10(std::clamp(v, lo, hi)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  }
  std::vector<double> decades() const {
    std::vector<double> d;
    for (double v = lo; v <= hi * 1.0001; v *= 10) d.push_back(v);
    return d;
  }
};

std::string number_text(double v) {
  if (v >= 1e6 || v < 1e-3) return fmt("%.3g", v);
  return fmt(v >= 100 ? "%.1f" : v >= 1 ? "%.3f" : "%.5f", v);
}

struct Row {
  std::string name, kind, error;
  double p50_us = 0, p99_us = -1, cost = -1;
  std::string cost_note;  // why there is no cost
};

std::vector<Row> rows_of(const json& r) {
  std::vector<Row> rows;
  for (const json& j : r["rows"]) {
    Row row;
    row.name = j["row"].get<std::string>();
    row.kind = j["kind"].get<std::string>();
    if (!j["error"].is_null()) {
      row.error = j["error"].get<std::string>();
      rows.push_back(row);
      continue;
    }
    row.p50_us = j["latency_us"]["p50"].get<double>();
    if (!j["latency_us"]["p99"].is_null()) row.p99_us = j["latency_us"]["p99"].get<double>();
    if (!j["cost_per_million_usd"].is_null())
      row.cost = j["cost_per_million_usd"].get<double>();
    else
      row.cost_note = "no price";
    rows.push_back(row);
  }
  return rows;
}

const char* color_of(const Row& r) {
  return r.kind == "baseline" ? "#e15759" : "#4e79a7";
}

// Horizontal bars of `value(row)` on a log axis (with a tick at each row's P99 latency when
// `p99_ticks`); rows without a value show `missing(row)`.
template <typename Value, typename Missing>
std::string bars_svg(const std::string& id, const std::string& label, const std::string& unit,
                     const std::vector<Row>& rows, bool p99_ticks, Value value, Missing missing) {
  std::vector<double> values;
  for (const Row& r : rows)
    if (value(r) > 0) values.push_back(value(r));
  for (const Row& r : rows)
    if (p99_ticks && r.error.empty() && r.p99_us > 0) values.push_back(r.p99_us);
  const LogAxis axis(values);
  const double L = 170, W = 600, row_h = 24, T = 10;
  const double H = row_h * static_cast<double>(rows.size());
  std::string s = "<svg class=\"plot\" id=\"" + id + "\" width=\"" + fmt("%.0f", L + W + 130) +
                  "\" height=\"" + fmt("%.0f", T + H + 40) + "\" role=\"img\" aria-label=\"" +
                  esc(label) + "\">";
  s += "<rect x=\"" + fmt("%.0f", L) + "\" y=\"" + fmt("%.0f", T) + "\" width=\"" + fmt("%.0f", W) +
       "\" height=\"" + fmt("%.0f", H) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (double d : axis.decades()) {
    const double x = L + W * axis.at(d);
    s += "<line x1=\"" + fmt("%.1f", x) + "\" x2=\"" + fmt("%.1f", x) + "\" y1=\"" +
         fmt("%.0f", T) + "\" y2=\"" + fmt("%.0f", T + H) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.0f", T + H + 14) +
         "\" font-size=\"10\" text-anchor=\"middle\">" + fmt("%g", d) + "</text>";
  }
  s += "<text x=\"" + fmt("%.0f", L + W / 2) + "\" y=\"" + fmt("%.0f", T + H + 32) +
       "\" font-size=\"11\" text-anchor=\"middle\">" + esc(label) + " (" + esc(unit) +
       ", log scale)</text>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double y = T + row_h * static_cast<double>(i);
    s += "<text x=\"" + fmt("%.0f", L - 6) + "\" y=\"" + fmt("%.1f", y + 16) +
         "\" font-size=\"11\" text-anchor=\"end\">" + esc(r.name) + "</text>";
    const double v = value(r);
    if (!(v > 0)) {
      s += "<text x=\"" + fmt("%.0f", L + 6) + "\" y=\"" + fmt("%.1f", y + 16) +
           "\" font-size=\"11\" fill=\"#888\">" + esc(missing(r)) + "</text>";
      continue;
    }
    const double w = std::max(1.0, W * axis.at(v));
    s += "<rect x=\"" + fmt("%.0f", L) + "\" y=\"" + fmt("%.1f", y + 4) + "\" width=\"" +
         fmt("%.2f", w) + "\" height=\"" + fmt("%.0f", row_h - 8) + "\" fill=\"" + color_of(r) +
         "\"><title>" + esc(r.name) + ": " + number_text(v) + " " + esc(unit) + "</title></rect>";
    if (p99_ticks && r.p99_us > 0) {
      const double x = L + W * axis.at(r.p99_us);
      s += "<line x1=\"" + fmt("%.2f", x) + "\" x2=\"" + fmt("%.2f", x) + "\" y1=\"" +
           fmt("%.1f", y + 2) + "\" y2=\"" + fmt("%.1f", y + row_h - 2) +
           "\" stroke=\"#222\" stroke-width=\"2\"><title>" + esc(r.name) +
           " P99: " + number_text(r.p99_us) + " µs</title></line>";
    }
    s += "<text x=\"" + fmt("%.2f", L + w + 6) + "\" y=\"" + fmt("%.1f", y + 16) +
         "\" font-size=\"11\">" + number_text(v) + "</text>";
  }
  return s + "</svg>";
}

// Latency (x) against cost per million (y), both logarithmic: one point per row with both.
std::string scatter_svg(const std::vector<Row>& rows) {
  std::vector<double> xs, ys;
  for (const Row& r : rows)
    if (r.error.empty() && r.cost > 0) {
      xs.push_back(r.p50_us);
      ys.push_back(r.cost);
    }
  const LogAxis ax(xs), ay(ys);
  const double L = 80, T = 15, W = 600, H = 360;
  std::string s = "<svg class=\"plot\" id=\"latency_cost\" width=\"" + fmt("%.0f", L + W + 200) +
                  "\" height=\"" + fmt("%.0f", T + H + 45) +
                  "\" role=\"img\" aria-label=\"latency against cost per million\">";
  s += "<rect x=\"" + fmt("%.0f", L) + "\" y=\"" + fmt("%.0f", T) + "\" width=\"" + fmt("%.0f", W) +
       "\" height=\"" + fmt("%.0f", H) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (double d : ax.decades()) {
    const double x = L + W * ax.at(d);
    s += "<line x1=\"" + fmt("%.1f", x) + "\" x2=\"" + fmt("%.1f", x) + "\" y1=\"" +
         fmt("%.0f", T) + "\" y2=\"" + fmt("%.0f", T + H) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.0f", T + H + 14) +
         "\" font-size=\"10\" text-anchor=\"middle\">" + fmt("%g", d) + "</text>";
  }
  for (double d : ay.decades()) {
    const double y = T + H - H * ay.at(d);
    s += "<line x1=\"" + fmt("%.0f", L) + "\" x2=\"" + fmt("%.0f", L + W) + "\" y1=\"" +
         fmt("%.1f", y) + "\" y2=\"" + fmt("%.1f", y) + "\" stroke=\"#eee\"/>";
    s += "<text x=\"" + fmt("%.0f", L - 4) + "\" y=\"" + fmt("%.1f", y + 3) +
         "\" font-size=\"10\" text-anchor=\"end\">" + fmt("%g", d) + "</text>";
  }
  s += "<text x=\"" + fmt("%.0f", L + W / 2) + "\" y=\"" + fmt("%.0f", T + H + 32) +
       "\" font-size=\"11\" text-anchor=\"middle\">latency P50 (µs, log scale)</text>";
  s += "<text x=\"14\" y=\"" + fmt("%.0f", T + H / 2) +
       "\" font-size=\"11\" transform=\"rotate(-90 14 " + fmt("%.0f", T + H / 2) +
       ")\" text-anchor=\"middle\">USD per million inferences (log)</text>";
  if (xs.empty())
    s += "<text x=\"" + fmt("%.0f", L + 10) + "\" y=\"" + fmt("%.0f", T + 20) +
         "\" font-size=\"12\" fill=\"#888\">no row has both a latency and a price</text>";
  // Labels beside their points, moved up or down a line at a time until they overlap no label
  // placed before (rows close in latency and cost would print over each other).
  struct Box {
    double x0, x1, y0, y1;
  };
  std::vector<Box> placed;
  for (const Row& r : rows) {
    if (!r.error.empty() || !(r.cost > 0)) continue;
    const double x = L + W * ax.at(r.p50_us), y = T + H - H * ay.at(r.cost);
    s += "<circle cx=\"" + fmt("%.1f", x) + "\" cy=\"" + fmt("%.1f", y) + "\" r=\"5\" fill=\"" +
         color_of(r) + "\" fill-opacity=\"0.85\"><title>" + esc(r.name) + ": " +
         number_text(r.p50_us) + " µs, $" + number_text(r.cost) + " per million</title></circle>";
    const double width = 6.5 * static_cast<double>(r.name.size()), line = 13;
    double ly = y + 4;
    for (int k = 1; k < 40; ++k) {
      const bool clash = std::any_of(placed.begin(), placed.end(), [&](const Box& b) {
        return x + 8 < b.x1 && b.x0 < x + 8 + width && ly - line + 2 < b.y1 && b.y0 < ly + 2;
      });
      if (!clash) break;
      ly = y + 4 + line * (k % 2 ? (k + 1) / 2 : -(k / 2));
    }
    placed.push_back({x + 8, x + 8 + width, ly - line + 2, ly + 2});
    s += "<text x=\"" + fmt("%.1f", x + 8) + "\" y=\"" + fmt("%.1f", ly) + "\" font-size=\"11\">" +
         esc(r.name) + "</text>";
  }
  return s + "</svg>";
}

std::string cell(const std::string& text, bool numeric = false) {
  return std::string(numeric ? "<td class=\"n\">" : "<td>") + esc(text) + "</td>";
}

std::string table_html(const json& r) {
  std::string h =
      "<table><tr><th>row</th><th>instance</th><th>latency P50 (µs)</th><th>P99 (µs)</th>"
      "<th>throughput (/s per instance)</th><th>$ per million</th><th>price</th><th>max rel "
      "error</th><th>min cosine</th><th>top-1 agreement</th><th>quality</th></tr>";
  for (const json& row : r["rows"]) {
    h += "<tr>" + cell(row["row"].get<std::string>());
    if (!row["error"].is_null()) {
      h += "<td colspan=\"10\">error: " + esc(row["error"].get<std::string>()) + "</td></tr>";
      continue;
    }
    const json& tp = row["throughput_per_s"];
    const json& p = row["price"];
    h += cell(row["kind"] == "baseline"  ? "baseline (measured)"
              : tp["instance"].is_null() ? "-"
                                         : tp["instance"].get<std::string>());
    h += cell(number_text(row["latency_us"]["p50"].get<double>()), true);
    h += cell(row["latency_us"]["p99"].is_null()
                  ? "-"
                  : number_text(row["latency_us"]["p99"].get<double>()),
              true);
    h += cell(tp["per_instance"].is_null()
                  ? number_text(tp["per_neuron_core"].get<double>() *
                                row["neuron_cores_per_inference"].get<double>()) +
                        " per copy"
                  : number_text(tp["per_instance"].get<double>()),
              true);
    h += cell(row["cost_per_million_usd"].is_null()
                  ? "no price"
                  : number_text(row["cost_per_million_usd"].get<double>()),
              true);
    h += cell(p["usd_per_hour"].is_null()
                  ? p["source"].get<std::string>()
                  : fmt("$%.3f/h ", p["usd_per_hour"].get<double>()) +
                        p["pricing"].get<std::string>() +
                        (p["unverified"].get<bool>() ? " (unverified)" : "") + ": " +
                        p["source"].get<std::string>());
    const json& q = row["quality"];
    if (q.is_null()) {
      h += "<td colspan=\"4\" class=\"note\">" +
           esc(row["kind"] == "baseline" ? "not measured" : "no reference") + "</td>";
    } else {
      h += cell(fmt("%.3g", q["max_rel_error"].get<double>()), true);
      h += cell(fmt("%.8f", q["min_cosine"].get<double>()), true);
      h += cell(q["top1_agreement"].is_null()
                    ? "-"
                    : fmt("%.1f%%", 100 * q["top1_agreement"].get<double>()),
                true);
      h += cell(q["pass"].get<bool>() ? "within tolerance" : "outside tolerance");
    }
    h += "</tr>";
  }
  return h + "</table>\n";
}

}  // namespace

std::string render_compare_report(const json& r) {
  const std::vector<Row> rows = rows_of(r);
  std::ostringstream h;
  h << html::page_begin("neuronc compare: " + r["model"].get<std::string>());
  const json& ref = r["quality_reference"];
  h << "<h1>neuronc compare</h1><p class=\"note\">" << esc(r["model"].get<std::string>())
    << " &middot; " << r["iterations"].get<int>() << " bench iterations per row &middot; "
    << esc(r["pricing"].get<std::string>()) << " prices &middot; quality "
    << (ref["kind"] == "dataset" ? "over dataset " + esc(ref["dir"].get<std::string>()) + " (" +
                                       std::to_string(ref["sets"].get<size_t>()) + " sets)"
        : ref["kind"] == "reference" ? "on the reference in " + esc(ref["dir"].get<std::string>())
                                     : "not measured: " + esc(ref["why"].get<std::string>()))
    << "</p>\n";
  h << "<h2>Rows</h2>" << table_html(r)
    << "<p class=\"note\">Trainium rows: simulated end-to-end latency on the device model (bench: "
       "device time, host ops and each execution's program start, runtime call and PCIe "
       "copies), throughput "
       "per instance and cost per million inferences from the price table. Baselines: the "
       "measured latency given on the command line. Cost per million: "
    << esc(r["cost_per_million_definition"].get<std::string>()) << ".</p>\n";
  h << "<h2>Latency per row</h2>"
    << bars_svg(
           "latency", "latency P50 (bar) and P99 (tick)", "µs", rows, true,
           [](const Row& x) { return x.error.empty() ? x.p50_us : 0.0; },
           [](const Row& x) { return x.error.empty() ? std::string("-") : "error"; });
  h << "<h2>Cost per million inferences per row</h2>"
    << bars_svg(
           "cost", "USD per million inferences", "USD", rows, false,
           [](const Row& x) { return x.error.empty() ? x.cost : 0.0; },
           [](const Row& x) { return x.error.empty() ? x.cost_note : std::string("error"); });
  h << "<h2>Latency against cost</h2>" << scatter_svg(rows)
    << "<p class=\"note\">Lower left is faster and cheaper. Baselines in red.</p>\n";
  h << html::page_end();
  return h.str();
}

void write_compare_report(const std::string& path, const json& report) {
  const std::string page = render_compare_report(report);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw CommandExit{kExitError, "cannot create '" + path + "'", ""};
  f << page;
  if (!f) throw CommandExit{kExitError, "writing '" + path + "' failed", ""};
}

}  // namespace neuronc::tools
