// `neuronc verify MODEL`: compile, run on the device model, and compare every output with the
// reference PyTorch computed (output_<i>.npy next to the model, or --reference DIR).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "compiler/compiler.h"
#include "frontend/mapped_file.h"
#include "frontend/zip_reader.h"
#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/eval_dataset.h"
#include "tools/option_lists.h"
#include "tools/output_comparison.h"
#include "tools/runner.h"
#include "tools/text_table.h"

namespace neuronc::tools {
namespace {

struct VerifyCli {
  std::string model, reference, target = "trn1", auto_cast = "none", dataset;
  std::vector<std::string> inputs, dims, buckets;
  double atol = -1, rtol = -1, min_cosine = -2;
  bool json = false, intermediates = true;
};

// First node (in execution order) whose result differs from PyTorch's intermediate value.
struct Divergence {
  compiler::DebugValue where;
  Comparison cmp;
  size_t compared = 0;
  bool found = false;
};

const std::vector<std::string> kAutoCastModes = {"none", "matmul", "matmult", "all"};

// The bucket after `ran` (an entry of a shape-bucket group): the smallest of its group that the
// same inputs fit padded, larger in some padded symbol and equal in every exact one; "" when
// `ran` is not a bucket or is the largest.
std::string next_bucket(const neuronc::Model& model, const std::string& ran) {
  const auto& entries = model.entries();
  const neuronc::EntryInfo* from = nullptr;
  for (const neuronc::EntryInfo& e : entries)
    if (e.name == ran && !e.bucket_group.empty()) from = &e;
  if (!from) return "";
  std::string best;
  double best_volume = 0;
  for (const neuronc::EntryInfo& e : entries) {
    if (e.bucket_group != from->bucket_group || e.bucket.size() != from->bucket.size()) continue;
    bool fits = true, larger = false;
    double volume = 1;
    for (size_t k = 0; k < e.bucket.size(); ++k) {
      const auto& b = e.bucket[k];
      const int64_t have = from->bucket[k].value;
      if (b.padding == neuronc::EntryInfo::Padding::none)
        fits &= b.value == have;
      else
        fits &= b.value >= have, larger |= b.value > have;
      volume *= static_cast<double>(b.value);
    }
    if (fits && larger && (best.empty() || volume < best_volume))
      best = e.name, best_volume = volume;
  }
  return best;
}

// `verify --dataset DIR`: per auto-cast mode, one compile and a run of every set; the error
// distribution per output over the sets, and top-1/top-5 agreement of classifier outputs.
void run_verify_dataset(const VerifyCli& o) {
  if (!o.inputs.empty() || !o.reference.empty())
    throw CommandExit{kExitUsage,
                      "--dataset takes the inputs and references from " + o.dataset +
                          "'s subdirectories: drop --input and --reference",
                      ""};
  const std::vector<std::string> modes =
      parse_choice_list(o.auto_cast, kAutoCastModes, "--auto-cast");
  const std::vector<ReferenceSet> sets = list_dataset(o.dataset);
  compiler::CompileRequest req;
  req.model = o.model;
  req.target = o.target;
  req.dims = parse_dim_bindings(o.dims);
  // As `compile` compiles it: a dynamic export into its shape buckets, which run sets of
  // different sizes.
  req.buckets = parse_bucket_lists(o.buckets);
  req.progress = [](const std::string& step, double) { progress(step); };
  std::vector<std::pair<std::string, DatasetQuality>> results;
  bool all_pass = true;
  for (const std::string& mode : modes) {
    req.auto_cast = *passes::parse_auto_cast(mode);
    const compiler::CompileResult compiled = compiler::compile_model(req);
    auto m = neuronc::Model::load_from_memory(compiled.artifact);
    if (!m.is_ok()) throw CommandExit{kExitError, m.status().message(), ""};
    check_dataset(*m, sets);
    progress("verifying " + o.dataset + " (auto-cast " + mode + ")");
    results.emplace_back(mode,
                         evaluate_dataset(*m, sets, req.auto_cast != passes::AutoCastMode::none,
                                          {o.atol, o.rtol, o.min_cosine}));
    all_pass &= results.back().second.pass;
  }
  progress_done();
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["target"] = o.target;
    j["dataset"] = o.dataset;
    j["sets"] = sets.size();
    j["set_names"] = nlohmann::ordered_json::array();
    for (const ReferenceSet& s : sets) j["set_names"].push_back(s.name);
    j["pass"] = all_pass;
    j["modes"] = nlohmann::ordered_json::array();
    for (const auto& [mode, q] : results)
      j["modes"].push_back({{"auto_cast", mode}, {"pass", q.pass}, {"outputs", quality_json(q)}});
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("%s on %s over %s: %zu sets (%s .. %s)\n", o.model.c_str(), o.target.c_str(),
                o.dataset.c_str(), sets.size(), sets.front().name.c_str(),
                sets.back().name.c_str());
    std::vector<std::vector<std::string>> rows = {{"auto-cast", "output", "sets failed",
                                                   "max rel error: max / p99 / mean",
                                                   "cosine: min / mean", "top-1", "top-5"}};
    for (const auto& [mode, q] : results)
      for (const OutputQuality& out : q.outputs) {
        std::vector<std::string> row = {mode, out.name};
        for (std::string& cell : quality_cells(out, q.sets)) row.push_back(std::move(cell));
        rows.push_back(std::move(row));
      }
    std::printf("%s", text_table(rows).c_str());
    for (const auto& [mode, q] : results)
      for (const OutputQuality& out : q.outputs)
        std::printf("  auto-cast %s, %s: %s%s\n", mode.c_str(), out.name.c_str(),
                    out.tol.describe().c_str(),
                    out.sets_failed ? (", first failing set " + out.first_failed_set).c_str() : "");
    std::printf("%s\n", all_pass ? "match: every output of every set within the tolerance"
                                 : "MISMATCH: some sets differ beyond the tolerance");
  }
  if (!all_pass) throw CommandExit{kExitMismatch, "", ""};
}

void run_verify(const VerifyCli& o) {
  refuse_program_set(o.model, "verify");
  if (!o.dataset.empty()) return run_verify_dataset(o);
  if (parse_choice_list(o.auto_cast, kAutoCastModes, "--auto-cast").size() > 1)
    throw CommandExit{kExitUsage,
                      "--auto-cast '" + o.auto_cast +
                          "': a list of modes needs --dataset DIR; one reference takes one mode",
                      ""};
  const std::string ref_dir =
      o.reference.empty() ? std::filesystem::path(o.model).parent_path().string() : o.reference;
  // Compiled exactly as `compile` compiles it (a dynamic export into its shape buckets, with the
  // same --dim and --buckets), so that a pass means the artifact a user deploys is right.
  compiler::CompileRequest req;
  req.model = o.model;
  req.target = o.target;
  req.auto_cast = *passes::parse_auto_cast(o.auto_cast);
  req.dims = parse_dim_bindings(o.dims);
  req.buckets = parse_bucket_lists(o.buckets);
  req.progress = [](const std::string& step, double) { progress(step); };
  compiler::CompileResult compiled = compiler::compile_model(req);
  progress("verifying");
  auto m = neuronc::Model::load_from_memory(compiled.artifact);
  if (!m.is_ok()) throw CommandExit{kExitError, m.status().message(), ""};
  neuronc::Model model = std::move(m).value();

  std::vector<std::pair<std::string, NpyArray>> inputs;
  if (!o.inputs.empty()) {
    inputs = read_inputs(model, o.inputs);
  } else {
    // The reference inputs: input_<i>.npy in the model's input order.
    std::vector<std::string> files;
    for (size_t i = 0; i < model.inputs().size(); ++i) {
      const std::string f =
          (std::filesystem::path(ref_dir) / ("input_" + std::to_string(i) + ".npy")).string();
      if (!std::filesystem::exists(f)) {
        throw CommandExit{kExitUsage,
                          "no reference input " + f + ": pass --input or --reference DIR", ""};
      }
      files.push_back(f);
    }
    inputs = read_inputs(model, files);
  }
  neuronc::Session session(model);
  if (!session.status().is_ok()) throw CommandExit{kExitError, session.status().message(), ""};
  RunResult r = run_once(session, inputs);
  // A dynamic export whose reference sizes are bucket values runs them exact; the same inputs
  // are also run padded up to the next bucket, so the padding every other size gets is checked
  // against this reference too.
  std::optional<RunResult> padded_run;
  if (!r.stats.padded)
    if (const std::string next = next_bucket(model, r.stats.entry); !next.empty())
      padded_run = run_once(session, next, inputs);
  progress_done();

  const bool narrow = req.auto_cast != passes::AutoCastMode::none;
  // A 16-bit float result (auto-cast, or a program written in bf16/f16) is held to the bf16
  // criterion: PyTorch rounds it too, at points of its own.
  auto tolerance = [&](bool sixteen_bit) {
    return output_tolerance(narrow || sixteen_bit, {o.atol, o.rtol, o.min_cosine});
  };
  const Tolerance tol = tolerance(false);
  bool all_pass = true;
  auto compare_run = [&](const RunResult& run) {
    std::vector<Comparison> out;
    for (size_t i = 0; i < run.outputs.size(); ++i) {
      const std::string f =
          (std::filesystem::path(ref_dir) / ("output_" + std::to_string(i) + ".npy")).string();
      if (!std::filesystem::exists(f)) {
        if (i == 0)
          throw CommandExit{kExitUsage, "no reference output " + f + ": pass --reference DIR", ""};
        break;  // extra outputs (buffer mutations) have no reference
      }
      NpyArray want = read_npy(f);
      const bool sixteen =
          run.outputs[i].type == NpyType::bf16 || run.outputs[i].type == NpyType::f16;
      out.push_back(compare_output(run.names[i], run.outputs[i], want, tolerance(sixteen)));
      all_pass &= out.back().pass;
    }
    return out;
  };
  const std::vector<Comparison> results = compare_run(r);
  std::vector<Comparison> padded_results;
  if (padded_run) padded_results = compare_run(*padded_run);
  // Per node: every result the compiled program computed, against intermediates.npz.
  Divergence div;
  const std::string npz = (std::filesystem::path(ref_dir) / "intermediates.npz").string();
  if (o.intermediates && !all_pass && std::filesystem::exists(npz)) {
    progress("locating the first diverging node");
    // One program at the inputs' shapes, every node's result an output.
    compiler::CompileRequest dreq = req;
    dreq.buckets.clear();
    for (const auto& [name, in] : inputs) dreq.input_shapes.push_back(in.shape);
    dreq.debug_all_values = true;
    dreq.progress = nullptr;
    compiler::CompileResult dbg = compiler::compile_model(dreq);
    auto dm = neuronc::Model::load_from_memory(dbg.artifact);
    if (!dm.is_ok()) throw CommandExit{kExitError, dm.status().message(), ""};
    neuronc::Session ds(*dm);
    RunResult dr = run_once(ds, inputs);
    std::shared_ptr<frontend::MappedFile> file = frontend::MappedFile::open(npz);
    frontend::ZipArchive zip = frontend::ZipArchive::open(file->bytes(), npz);
    for (const compiler::DebugValue& dv : dbg.debug_values) {
      const frontend::ZipEntry* e = zip.find(dv.value + ".npy");
      if (!e) continue;
      size_t k = 0;
      while (k < dr.names.size() && dr.names[k] != "debug:" + dv.value) ++k;
      if (k == dr.names.size()) continue;
      NpyArray want = parse_npy(zip.data(*e), npz + "!" + dv.value + ".npy");
      Comparison c = compare_output(dv.value, dr.outputs[k], want, tol);
      ++div.compared;
      if (!c.pass) {
        div.where = dv;
        div.cmp = c;
        div.found = true;
        break;
      }
    }
    progress_done();
  }

  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["target"] = o.target;
    j["auto_cast"] = o.auto_cast;
    j["atol"] = tol.atol;
    j["atol_relative_to_max_ref"] = tol.atol_relative_to_max;
    j["rtol"] = tol.rtol;
    if (tol.min_cosine > -1) j["min_cosine"] = tol.min_cosine;
    j["pass"] = all_pass;
    j["simulated_latency_us"] = r.stats.latency_ns / 1e3;
    auto outputs_json = [](const std::vector<Comparison>& cs) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const Comparison& c : cs)
        a.push_back({{"name", c.name},
                     {"pass", c.pass},
                     {"shape_ok", c.shape_ok},
                     {"max_abs_error", c.max_abs},
                     {"max_rel_error", c.max_rel},
                     {"cosine", c.cosine},
                     {"mismatches", c.mismatches},
                     {"numel", c.numel},
                     {"atol", c.tol.atol},
                     {"rtol", c.tol.rtol}});
      return a;
    };
    j["entry"] = r.stats.entry;
    j["padded"] = r.stats.padded;
    j["outputs"] = outputs_json(results);
    if (padded_run)
      j["padded_run"] = {{"entry", padded_run->stats.entry},
                         {"outputs", outputs_json(padded_results)}};
    if (div.found) {
      j["first_divergence"] = {
          {"node", div.where.node},           {"op", div.where.op},
          {"location", div.where.location},   {"max_abs_error", div.cmp.max_abs},
          {"mismatches", div.cmp.mismatches}, {"nodes_compared", div.compared}};
    }
    std::cout << j.dump(2) << "\n";
  } else {
    auto print_results = [](const std::vector<Comparison>& cs) {
      for (const Comparison& c : cs) {
        if (!c.shape_ok) {
          std::printf("FAIL %s: shape differs from the reference\n", c.name.c_str());
          continue;
        }
        std::printf(
            "%s %s: max abs error %.3g, max rel error %.3g, cosine %.8f, %zu/%zu outside %s\n",
            c.pass ? "ok  " : "FAIL", c.name.c_str(), c.max_abs, c.max_rel, c.cosine, c.mismatches,
            c.numel, c.tol.describe().c_str());
      }
    };
    if (model.entries().size() > 1 && !model.entries()[0].bucket_group.empty())
      std::printf("shape bucket %s%s:\n", r.stats.entry.c_str(),
                  r.stats.padded ? " (the inputs padded up to it)" : "");
    print_results(results);
    if (padded_run) {
      std::printf("shape bucket %s (the same inputs padded up to it):\n",
                  padded_run->stats.entry.c_str());
      print_results(padded_results);
    }
    std::printf(
        "%s on %s (auto-cast %s): simulated latency %.2f us (device %.2f us, host ops %.2f us), "
        "%llu instructions\n",
        all_pass ? "match" : "MISMATCH", o.target.c_str(), o.auto_cast.c_str(),
        r.stats.latency_ns / 1e3, r.stats.device_ns / 1e3, r.stats.host_ops_ns / 1e3,
        static_cast<unsigned long long>(r.stats.instructions));
    std::printf("engine utilisation:");
    for (size_t e = 0; e < kEngineNames.size(); ++e) {
      std::printf(
          " %s %.1f%%", std::string(kEngineNames[e]).c_str(),
          r.stats.device_ns > 0 ? 100.0 * r.stats.engine_busy_ns[e] / r.stats.device_ns : 0.0);
    }
    std::printf("\n");
    if (div.found) {
      std::printf(
          "first diverging node: %s (%s), max abs error %.3g, %zu/%zu elements outside tolerance "
          "(%zu nodes compared)\n",
          div.where.node.c_str(), div.where.op.c_str(), div.cmp.max_abs, div.cmp.mismatches,
          div.cmp.numel, div.compared);
      if (!div.where.location.empty()) std::printf("  at %s\n", div.where.location.c_str());
    } else if (!all_pass && div.compared > 0) {
      std::printf(
          "every one of %zu intermediate results matched; the difference arises in the outputs\n",
          div.compared);
    }
  }
  if (!all_pass) throw CommandExit{kExitMismatch, "", ""};
}

}  // namespace

void register_verify_command(CLI::App& app) {
  auto o = std::make_shared<VerifyCli>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Compile, run on the device model and compare with PyTorch's outputs");
  cmd->footer(
      "Example:\n  neuronc verify models/bert/model.pt2 --target trn2 --auto-cast matmul\n"
      "  neuronc verify model.pt2 --dataset eval/ --auto-cast none,matmul\n"
      "Reads input_<i>.npy and output_<i>.npy from the model's folder (or --reference DIR), or\n"
      "from each subdirectory of --dataset DIR.\n"
      "Exit code 3 when an output differs beyond the tolerance.");
  cmd->add_option("model", o->model, "PyTorch program (.pt2)")->required();
  cmd->add_option("--reference", o->reference,
                  "Folder with input_<i>.npy and output_<i>.npy (default: the model's)");
  cmd->add_option("-i,--input", o->inputs,
                  "Inputs instead of the reference's, by position or NAME=FILE.npy");
  cmd->add_option("--target", o->target, "trn1, trn2 or trn3")
      ->check(CLI::IsMember({"trn1", "trn2", "trn3"}));
  cmd->add_option("--auto-cast", o->auto_cast,
                  "none, matmul or all; with --dataset a comma list (none,matmul), each compiled "
                  "and run over the dataset");
  cmd->add_option("--dataset", o->dataset,
                  "Evaluation set: DIR/<k>/input_<i>.npy with PyTorch's output_<i>.npy, one "
                  "subdirectory per set; reports the error distribution per output and top-1/top-5 "
                  "agreement of classifier outputs");
  cmd->add_option("--dim", o->dims, "Bind a symbolic dim: SYMBOL=VALUE (as compile's --dim)");
  cmd->add_option("--buckets", o->buckets,
                  "Shape buckets of a symbolic dim: SYMBOL=V1,V2,... (as compile's --buckets; a "
                  "dynamic export is verified in the bucketed artifact compile writes, at the "
                  "reference's sizes and, when those are bucket values, padded up to the next "
                  "bucket too)");
  cmd->add_option("--atol", o->atol,
                  "Absolute tolerance (default 1e-4; with auto-cast 5e-2 x the output's max|ref|)");
  cmd->add_option("--rtol", o->rtol, "Relative tolerance (default 1e-3; 5e-2 with auto-cast)");
  cmd->add_option("--min-cosine", o->min_cosine,
                  "Cosine similarity each output must reach (default: none; 0.999 with auto-cast)");
  cmd->add_flag("--json", o->json, "Print the comparison as JSON (fields in docs/CLI.md)");
  cmd->add_flag("!--no-intermediates", o->intermediates,
                "On a mismatch, do not look for the first diverging node in intermediates.npz");
  cmd->callback([o] { run_verify(*o); });
}

}  // namespace neuronc::tools
