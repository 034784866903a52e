// `neuronc compare MODEL`: compiles the model for every target x auto-cast mode in this process,
// benches each artifact with bench's own code (run_bench_bytes: latency percentiles,
// throughput, the price table's cost per million), measures its quality against PyTorch with
// verify's comparison (eval_dataset.h), and adds measured baselines as rows of their own.
#include "tools/compare_command.h"

#include <neuronc/model.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "compiler/compiler.h"
#include "tools/bench_command.h"
#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/compare_report.h"
#include "tools/eval_dataset.h"
#include "tools/option_lists.h"
#include "tools/runner.h"
#include "tools/text_table.h"

namespace neuronc::tools {
namespace {

using json = nlohmann::ordered_json;

const std::vector<std::string> kTargets = {"trn1", "trn2", "trn3"};
const std::vector<std::string> kAutoCastModes = {"none", "matmul", "all"};

constexpr const char* kBaselineForm =
    "expected NAME=LATENCY_MS@USD_PER_HOUR, e.g. --baseline g5.xlarge=2.4@1.006";

[[noreturn]] void usage(const std::string& message) {
  throw CommandExit{kExitUsage, message, ""};
}

// `text` as a finite number > 0, else a usage error naming `what` in option value `item`.
double positive_number(const std::string& text, const std::string& what, const std::string& item,
                       const std::string& flag) {
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size())
    usage(flag + " '" + item + "': " + what + " '" + text + "' is not a number; " +
          (flag == "--baseline" ? kBaselineForm : "expected TARGET=USD_PER_HOUR"));
  if (!std::isfinite(v) || !(v > 0))
    usage(flag + " '" + item + "': " + what + " is " + text + ", expected a number > 0");
  return v;
}

// A row's error text: one line.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// The quality of a row: the dataset's per-output figures and the row's summary (the worst
// output: largest max relative error, smallest cosine, lowest top-1 agreement).
json quality_of(const DatasetQuality& q) {
  json outputs = quality_json(q);
  double max_rel = 0, min_cos = 1;
  json top1 = nullptr;
  for (const json& o : outputs) {
    max_rel = std::max(max_rel, o["max_rel_error"]["max"].get<double>());
    min_cos = std::min(min_cos, o["cosine"]["min"].get<double>());
    if (!o["agreement"].is_null()) {
      const double t = o["agreement"]["top1"].get<double>();
      top1 = top1.is_null() ? t : std::min(top1.get<double>(), t);
    }
  }
  return {{"sets", q.sets},        {"pass", q.pass},         {"max_rel_error", max_rel},
          {"min_cosine", min_cos}, {"top1_agreement", top1}, {"outputs", std::move(outputs)}};
}

// One target x auto-cast row: compile, bench, quality. Errors of the compile, the bench's run
// or the quality run end up in the row; usage errors propagate.
json trainium_row(const CompareOptions& o, const std::string& target, const std::string& mode,
                  const std::vector<ReferenceSet>& sets) {
  json row;
  row["row"] = target + " " + mode;
  row["kind"] = "trainium";
  row["target"] = target;
  row["auto_cast"] = mode;
  row["error"] = nullptr;
  compiler::CompileRequest req;
  req.model = o.model;
  req.target = target;
  req.auto_cast = *passes::parse_auto_cast(mode);
  // Symbolic dims follow the reference inputs, as verify binds them.
  if (!sets.empty()) req.input_shapes = input_shapes(sets.front());
  progress("compiling for " + target + " (auto-cast " + mode + ")");
  compiler::CompileResult compiled;
  try {
    compiled = compiler::compile_model(req);
  } catch (const std::exception& e) {
    row["error"] = "compile: " + one_line(e.what());
    return row;
  }
  BenchOptions b;
  b.iterations = o.iterations;
  b.artifact = o.model + " (" + target + ", auto-cast " + mode + ")";
  if (auto it = o.instances.find(target); it != o.instances.end()) b.instance = it->second;
  if (auto it = o.price_per_hour.find(target); it != o.price_per_hour.end())
    b.price_per_hour = it->second;
  b.pricing = o.pricing;
  b.prices_file = o.prices_file;
  progress("benchmarking " + target + " (auto-cast " + mode + ")");
  try {
    const json bench = run_bench_bytes(b, compiled.artifact);
    row["neuron_cores_per_inference"] = bench["neuron_cores_per_inference"];
    // Beside a measured GPU latency: end to end (device, host ops and each execution's time
    // outside the device: docs/DEVICE_MODEL.md), as the throughput and cost are.
    row["latency_us"] = bench["end_to_end_latency_us"];
    row["device_latency_us"] = bench["simulated_latency_us"];
    row["throughput_per_s"] = bench["throughput_per_s"];
    row["price"] = bench["price"];
    row["cost_per_million_usd"] = bench["cost_per_million_usd"];
  } catch (const CommandExit& e) {
    if (e.code == kExitUsage) throw;
    row["error"] = "bench: " + one_line(e.message);
    return row;
  }
  row["quality"] = nullptr;
  if (sets.empty()) return row;
  auto m = neuronc::Model::load_from_memory(compiled.artifact);
  if (!m.is_ok()) {
    row["error"] = "quality: " + one_line(m.status().message());
    return row;
  }
  check_dataset(*m, sets);  // a malformed reference stops the comparison
  progress("checking quality on " + target + " (auto-cast " + mode + ")");
  try {
    row["quality"] =
        quality_of(evaluate_dataset(*m, sets, req.auto_cast != passes::AutoCastMode::none, {}));
  } catch (const CommandExit& e) {
    row["error"] = "quality: " + one_line(e.message);
  }
  return row;
}

// A measured baseline: one inference in flight per instance, so its throughput is 1000 /
// latency_ms per second and its cost per million inferences bench's cost at that throughput.
json baseline_row(const Baseline& b) {
  const double per_s = 1e3 / b.latency_ms;
  json row;
  row["row"] = b.name;
  row["kind"] = "baseline";
  row["error"] = nullptr;
  row["latency_us"] = {{"p50", b.latency_ms * 1e3}, {"p99", nullptr}, {"mean", b.latency_ms * 1e3}};
  row["throughput_per_s"] = {{"per_instance", per_s}, {"instance", b.name}};
  row["price"] = {{"instance", b.name}, {"usd_per_hour", b.usd_per_hour},
                  {"pricing", "user"},  {"source", "--baseline"},
                  {"date", nullptr},    {"unverified", false}};
  row["cost_per_million_usd"] = cost_per_million_usd(b.usd_per_hour, per_s);
  row["quality"] = nullptr;
  row["quality_note"] = "not measured";
  return row;
}

struct CompareCli {
  CompareArgs args;
  std::string report;
  bool json = false;
};

// "TARGET=VALUE" items of `flag`, each target one of `targets`.
std::vector<std::pair<std::string, std::string>> per_target(const std::vector<std::string>& items,
                                                            const std::vector<std::string>& targets,
                                                            const std::string& flag) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      usage(flag + " '" + item + "': expected TARGET=VALUE, e.g. " + flag +
            (flag == "--instance" ? " trn1=inf2.xlarge" : " trn2=40.5"));
    const std::string target = item.substr(0, eq);
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) {
      std::string listed;
      for (const std::string& t : targets) listed += (listed.empty() ? "" : ",") + t;
      usage(flag + " '" + item + "': target '" + target + "' is not among --targets " + listed);
    }
    for (const auto& [t, v] : out)
      if (t == target) usage(flag + " gives target '" + target + "' twice");
    out.emplace_back(target, item.substr(eq + 1));
  }
  return out;
}

void run_compare_cli(const CompareCli& cli) {
  const CompareOptions o = parse_compare_args(cli.args);
  const json r = run_compare(o);
  progress_done();
  if (!cli.report.empty()) write_compare_report(cli.report, r);
  if (cli.json)
    std::cout << r.dump(2) << "\n";
  else
    std::cout << format_compare_text(r);
  bool any = false;
  for (const json& row : r["rows"]) any |= row["kind"] == "trainium" && row["error"].is_null();
  if (!any)
    throw CommandExit{kExitError, "no target compiled and ran " + o.model + ": see the rows", ""};
}

}  // namespace

Baseline parse_baseline(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos) usage("--baseline '" + text + "': no '=': " + kBaselineForm);
  Baseline b;
  b.name = text.substr(0, eq);
  if (b.name.empty()) usage("--baseline '" + text + "': the name is empty; " + kBaselineForm);
  const std::string rest = text.substr(eq + 1);
  const size_t at = rest.find('@');
  if (at == std::string::npos)
    usage("--baseline '" + text + "': no '@' before the price; " + kBaselineForm);
  b.latency_ms = positive_number(rest.substr(0, at), "the latency", text, "--baseline");
  b.usd_per_hour = positive_number(rest.substr(at + 1), "the price", text, "--baseline");
  return b;
}

CompareOptions parse_compare_args(const CompareArgs& a) {
  CompareOptions o = a.o;
  o.targets = parse_choice_list(a.targets, kTargets, "--targets");
  o.auto_casts = parse_choice_list(a.auto_casts, kAutoCastModes, "--auto-cast");
  for (const std::string& b : a.baselines) o.baselines.push_back(parse_baseline(b));
  for (const auto& [t, v] : per_target(a.instances, o.targets, "--instance")) o.instances[t] = v;
  for (const auto& [t, v] : per_target(a.prices, o.targets, "--price-per-hour"))
    o.price_per_hour[t] = positive_number(v, "the price", t + "=" + v, "--price-per-hour");
  return o;
}

json run_compare(const CompareOptions& o) {
  refuse_program_set(o.model, "compare");
  if (o.iterations < 1)
    usage("--iterations is " + std::to_string(o.iterations) + ", expected at least 1");
  for (size_t i = 0; i < o.baselines.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (o.baselines[i].name == o.baselines[k].name)
        usage("--baseline names '" + o.baselines[i].name + "' twice");
  if (!o.dataset.empty() && !o.reference.empty())
    usage("--dataset and --reference both name the reference: give one");
  // The reference: --dataset's sets, else the one set beside the model (or in --reference).
  std::vector<ReferenceSet> sets;
  json reference;
  if (!o.dataset.empty()) {
    sets = list_dataset(o.dataset);
    reference = {{"kind", "dataset"}, {"dir", o.dataset}, {"sets", sets.size()}};
  } else {
    const std::filesystem::path dir = o.reference.empty()
                                          ? std::filesystem::path(o.model).parent_path()
                                          : std::filesystem::path(o.reference);
    ReferenceSet set = reference_set(dir);
    if (!set.inputs.empty() && !set.outputs.empty()) {
      sets.push_back(std::move(set));
      reference = {{"kind", "reference"}, {"dir", dir.string()}, {"sets", 1}};
    } else {
      reference = {{"kind", "none"},
                   {"dir", dir.string()},
                   {"sets", 0},
                   {"why", "no input_0.npy and output_0.npy in " + dir.string() +
                               ": pass --reference DIR or --dataset DIR"}};
    }
  }
  json r;
  r["model"] = o.model;
  r["targets"] = o.targets;
  r["auto_cast"] = o.auto_casts;
  r["iterations"] = o.iterations;
  r["pricing"] = o.pricing;
  r["quality_reference"] = reference;
  r["cost_per_million_definition"] =
      "USD per hour / 3600 / inferences per second per instance x 10^6; an inference is one call "
      "of the model at its input shapes. A Trainium row's instance runs one model copy per group "
      "of the artifact's cores, one inference in flight per copy (bench); a baseline runs one "
      "inference in flight per instance, 1000 / LATENCY_MS per second";
  r["rows"] = json::array();
  for (const std::string& target : o.targets)
    for (const std::string& mode : o.auto_casts)
      r["rows"].push_back(trainium_row(o, target, mode, sets));
  for (const Baseline& b : o.baselines) r["rows"].push_back(baseline_row(b));
  return r;
}

std::string format_compare_text(const json& r) {
  std::string s;
  const json& ref = r["quality_reference"];
  s += r["model"].get<std::string>() + ": " + std::to_string(r["rows"].size()) + " rows, " +
       std::to_string(r["iterations"].get<int>()) + " bench iterations each, " +
       r["pricing"].get<std::string>() + " prices; quality ";
  if (ref["kind"] == "dataset")
    s += "over dataset " + ref["dir"].get<std::string>() + " (" +
         std::to_string(ref["sets"].get<size_t>()) + " sets)\n";
  else if (ref["kind"] == "reference")
    s += "on the reference in " + ref["dir"].get<std::string>() + " (1 set)\n";
  else
    s += "not measured: " + ref["why"].get<std::string>() + "\n";
  std::vector<std::vector<std::string>> rows = {{"row", "instance", "P50 us", "P99 us",
                                                 "throughput/s", "$ per 1M", "max rel err",
                                                 "min cosine", "top-1", "quality"}};
  std::vector<std::string> prices;
  for (const json& row : r["rows"]) {
    const std::string name = row["row"].get<std::string>();
    if (!row["error"].is_null()) {
      rows.push_back({name + "  error: " + row["error"].get<std::string>()});
      continue;
    }
    const json& tp = row["throughput_per_s"];
    const json& lat = row["latency_us"];
    std::vector<std::string> cells = {name};
    cells.push_back(row["kind"] == "baseline"  ? "baseline"
                    : tp["instance"].is_null() ? "-"
                                               : tp["instance"].get<std::string>());
    cells.push_back(number_cell("%.2f", lat["p50"].get<double>()));
    cells.push_back(lat["p99"].is_null() ? "-" : number_cell("%.2f", lat["p99"].get<double>()));
    cells.push_back(tp["per_instance"].is_null()
                        ? number_cell("%.1f", tp["per_neuron_core"].get<double>() *
                                                  row["neuron_cores_per_inference"].get<double>()) +
                              " per copy"
                        : number_cell("%.1f", tp["per_instance"].get<double>()));
    const json& p = row["price"];
    cells.push_back(row["cost_per_million_usd"].is_null()
                        ? "no price"
                        : number_cell("%.4g", row["cost_per_million_usd"].get<double>()) +
                              (p["unverified"].get<bool>() ? "*" : ""));
    if (!p["usd_per_hour"].is_null() || row["kind"] == "trainium") {
      const std::string line =
          (!p["instance"].is_null()    ? p["instance"].get<std::string>()
           : row["kind"] == "trainium" ? row["target"].get<std::string>()
                                       : name) +
          ": " +
          (p["usd_per_hour"].is_null() ? p["source"].get<std::string>()
                                       : number_cell("$%.3f/h", p["usd_per_hour"].get<double>()) +
                                             " " + p["pricing"].get<std::string>() +
                                             (p["unverified"].get<bool>() ? " (UNVERIFIED)" : "") +
                                             ", " + p["source"].get<std::string>());
      if (std::find(prices.begin(), prices.end(), line) == prices.end()) prices.push_back(line);
    }
    const json& q = row["quality"];
    if (row["kind"] == "baseline") {
      cells.insert(cells.end(), {"not measured", "", "", ""});
    } else if (q.is_null()) {
      cells.insert(cells.end(), {"-", "-", "-", "no reference"});
    } else {
      cells.push_back(number_cell("%.3g", q["max_rel_error"].get<double>()));
      cells.push_back(number_cell("%.8f", q["min_cosine"].get<double>()));
      cells.push_back(q["top1_agreement"].is_null()
                          ? "-"
                          : number_cell("%.1f%%", 100 * q["top1_agreement"].get<double>()));
      cells.push_back(q["pass"].get<bool>() ? "ok" : "outside tolerance");
    }
    rows.push_back(std::move(cells));
  }
  s += text_table(rows);
  s += "prices (* unverified):\n";
  for (const std::string& p : prices) s += "  " + p + "\n";
  s += "cost per million: " + r["cost_per_million_definition"].get<std::string>() + "\n";
  return s;
}

void register_compare_command(CLI::App& app) {
  auto cli = std::make_shared<CompareCli>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compile for each target and auto-cast mode; latency, cost per million and quality side by "
      "side, with measured baselines");
  cmd->footer(
      "Example:\n  neuronc compare models/cnn/model.pt2 --targets trn1,trn2 --auto-cast "
      "none,matmul --baseline g5.xlarge=2.4@1.006 --report cnn.html\n"
      "Each row is compiled in this process, benched as `neuronc bench` does and verified against "
      "PyTorch's\n"
      "outputs beside the model (or --dataset DIR). A row that fails shows its error.");
  cmd->add_option("model", cli->args.o.model, "PyTorch program (.pt2 or .pt)")->required();
  cmd->add_option("--targets", cli->args.targets, "Comma list of targets (default trn1,trn2,trn3)");
  cmd->add_option("--auto-cast", cli->args.auto_casts,
                  "Comma list of auto-cast modes: none, matmul, all (default none,matmul)");
  cmd->add_option("--baseline", cli->args.baselines,
                  "A measured baseline, NAME=LATENCY_MS@USD_PER_HOUR: the latency of one inference "
                  "at the model's input shapes on an instance of that hourly price (repeatable)");
  cmd->add_option("--dataset", cli->args.o.dataset,
                  "Quality over an evaluation set (DIR/<k>/input_<i>.npy and output_<i>.npy, as "
                  "verify --dataset)");
  cmd->add_option("--reference", cli->args.o.reference,
                  "Folder with input_<i>.npy and output_<i>.npy (default: the model's)");
  cmd->add_option("-n,--iterations", cli->args.o.iterations,
                  "Bench iterations per row, each on new random inputs (default: bench's, 20)");
  cmd->add_option("--instance", cli->args.instances,
                  "Instance a target's rows are priced on: TARGET=NAME (repeatable; default: "
                  "bench's, trn1.2xlarge for trn1, trn2.48xlarge for trn2)");
  cmd->add_option(
      "--price-per-hour", cli->args.prices,
      "USD per instance-hour for a target's rows: TARGET=USD (repeatable; overrides the "
      "table)");
  cmd->add_option("--pricing", cli->args.o.pricing,
                  "Which table price: on_demand (default) or reserved_effective");
  cmd->add_option("--prices", cli->args.o.prices_file,
                  "JSON price table whose instances replace the built-in ones (as bench --prices)");
  cmd->add_flag("--json", cli->json, "Print the comparison as JSON (fields in docs/CLI.md)");
  cmd->add_option("--report", cli->report,
                  "Also write a self-contained HTML page with the table and plots of latency, cost "
                  "and latency against cost");
  cmd->callback([cli] { run_compare_cli(*cli); });
}

}  // namespace neuronc::tools
