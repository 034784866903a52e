// `neuronc compile MODEL -o OUT.nca`: a PyTorch program into a Trainium artifact.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/compiler.h"
#include "tools/bucket_report.h"
#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/report_html.h"

namespace neuronc::tools {
namespace {

nlohmann::ordered_json tensor_parallel_json(int tp, const passes::TensorParallelStats& s) {
  nlohmann::ordered_json j;
  j["cores"] = tp;
  if (tp <= 1) return j;
  j["column_parallel_linears"] = s.column_parallel;
  j["row_parallel_linears"] = s.row_parallel;
  j["split_embeddings"] = s.embeddings;
  j["all_reduces"] = s.all_reduces;
  j["all_gathers"] = s.all_gathers;
  j["split_states"] = s.split_states;
  return j;
}

void print_tensor_parallel(int tp, const passes::TensorParallelStats& s) {
  if (tp <= 1) return;
  std::printf(
      "  tensor parallel over %d cores: %d column- and %d row-parallel linears, %d split "
      "embeddings; %d all-reduces, %d all-gathers; %zu states split over the cores\n",
      tp, s.column_parallel, s.row_parallel, s.embeddings, s.all_reduces, s.all_gathers,
      s.split_states.size());
}

struct CompileCli {
  std::string model, output, target = "trn1", auto_cast = "none", print_after, report;
  int opt_level = 2, threads = 0, tp = 1;
  std::vector<std::string> dims, buckets;
  bool json = false;
};

void run_compile(const CompileCli& o) {
  compiler::CompileRequest req;
  req.model = o.model;
  req.target = o.target;
  req.auto_cast = *passes::parse_auto_cast(o.auto_cast);
  req.opt_level = o.opt_level;
  req.threads = o.threads;
  req.tp = o.tp;
  req.dims = parse_dim_bindings(o.dims);
  req.buckets = parse_bucket_lists(o.buckets);
  if (!o.print_after.empty()) {
    size_t b = 0;
    while (b <= o.print_after.size()) {
      size_t e = o.print_after.find(',', b);
      if (e == std::string::npos) e = o.print_after.size();
      req.print_after.insert(o.print_after.substr(b, e - b));
      b = e + 1;
    }
  }
  req.progress = [](const std::string& s) { progress(s); };
  compiler::CompileResult r = compiler::compile_model(req);
  progress_done();
  std::string out = o.output;
  if (out.empty()) {
    out = o.model;
    while (out.size() > 1 && out.back() == '/') out.pop_back();  // a directory of programs
    const size_t slash = out.find_last_of('/');
    const size_t dot = out.find_last_of('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) out.resize(dot);
    out += ".nca";
  }
  {
    std::ofstream f(out, std::ios::binary);
    if (!f) throw CommandExit{kExitError, "cannot create '" + out + "'", ""};
    f.write(reinterpret_cast<const char*>(r.artifact.data()),
            static_cast<std::streamsize>(r.artifact.size()));
    if (!f) throw CommandExit{kExitError, "writing '" + out + "' failed", ""};
  }
  if (!o.report.empty())
    write_compile_report(o.report, r, {o.model, out, o.target, o.auto_cast, req.opt_level});
  size_t device_parts = 0, host_parts = 0;
  uint64_t instructions = 0;
  for (const compiler::PartitionReport& p : r.partitions) {
    (p.device ? device_parts : host_parts) += 1;
    instructions += p.instructions;
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["artifact"] = out;
    j["artifact_bytes"] = r.artifact.size();
    j["target"] = o.target;
    j["auto_cast"] = o.auto_cast;
    j["opt_level"] = req.opt_level;
    j["container"] = r.container;
    j["torch_version"] = r.torch_version;
    j["imported_nodes"] = r.imported_nodes;
    j["optimized_nodes"] = r.optimized_nodes;
    j["device_partitions"] = device_parts;
    j["host_partitions"] = host_parts;
    j["instructions"] = instructions;
    j["constant_bytes"] = r.constant_bytes;
    j["flops"] = r.flops;
    j["tensor_parallel"] = tensor_parallel_json(o.tp, r.tensor_parallel);
    j["specialized_dims"] = r.specialized;
    j["buckets"] = buckets_json(r.buckets);
    j["host_nodes"] = nlohmann::ordered_json::array();
    for (const compiler::HostNodeReport& h : r.host_nodes) {
      j["host_nodes"].push_back(
          {{"node", h.node}, {"op", h.op}, {"reason", h.reason}, {"location", h.location}});
    }
    j["seconds"] = {{"frontend", r.seconds_frontend},
                    {"passes", r.seconds_passes},
                    {"codegen", r.seconds_codegen},
                    {"write", r.seconds_write}};
    j["pass_seconds"] = nlohmann::ordered_json::object();
    for (const auto& [name, sec] : r.pass_seconds) j["pass_seconds"][name] = sec;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s -> %s (%zu bytes, target %s, auto-cast %s, -O%d)\n", o.model.c_str(), out.c_str(),
              r.artifact.size(), o.target.c_str(), o.auto_cast.c_str(), req.opt_level);
  std::printf(
      "  %zu imported nodes, %zu after optimisation; %zu device and %zu host partitions; "
      "%llu device instructions; %.2f MB constants\n",
      r.imported_nodes, r.optimized_nodes, device_parts, host_parts,
      static_cast<unsigned long long>(instructions), r.constant_bytes / 1e6);
  for (const auto& [sym, v] : r.specialized) {
    std::printf("  symbolic dim %s specialised to %lld (from %s)\n", sym.c_str(),
                static_cast<long long>(v), r.specialized_from.c_str());
  }
  print_buckets(r.buckets);
  print_tensor_parallel(o.tp, r.tensor_parallel);
  for (const compiler::HostNodeReport& h : r.host_nodes) {
    std::printf("  host %s (%s): %s%s%s\n", h.node.c_str(), h.op.c_str(), h.reason.c_str(),
                h.location.empty() ? "" : " at ", h.location.c_str());
  }
  std::printf("  compile time %.2f s (frontend %.2f, passes %.2f, codegen %.2f, write %.2f)\n",
              r.seconds_frontend + r.seconds_passes + r.seconds_codegen + r.seconds_write,
              r.seconds_frontend, r.seconds_passes, r.seconds_codegen, r.seconds_write);
}

}  // namespace

void register_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileCli>();
  CLI::App* cmd =
      app.add_subcommand("compile", "Compile a PyTorch program into a Trainium artifact (.nca)");
  cmd->footer(
      "Example:\n  neuronc compile models/bert/model.pt2 -o bert.nca --target trn2 --auto-cast "
      "matmul\n"
      "  neuronc compile models/llm/llama_tiny -o llama.nca   # prefill + decode, one artifact\n"
      "A program with symbolic dims compiles into shape buckets, one entry each, that the loader\n"
      "picks from by the inputs' shapes (padding them where that is exact); --dim binds a dim to\n"
      "one value, --buckets chooses a dim's buckets.");
  cmd->add_option("model", o->model,
                  "PyTorch program: .pt2 (torch.export) or .pt (TorchScript), or a directory of "
                  "one model's programs with a manifest.json (models/scripts/export_causal_lm.py), "
                  "compiled into one artifact with an entry per program")
      ->required();
  cmd->add_option("-o,--output", o->output, "Artifact path (default: MODEL with .nca)");
  cmd->add_option("--target", o->target, "trn1, trn2 or trn3")
      ->check(CLI::IsMember({"trn1", "trn2", "trn3"}));
  cmd->add_option("--auto-cast", o->auto_cast, "Run fp32 work in bf16: none, matmul or all")
      ->check(CLI::IsMember({"none", "matmul", "matmult", "all"}));
  cmd->add_option("-O,--opt-level", o->opt_level,
                  "Optimisation level: 0 = no CSE and no fusion, every op its own kernel "
                  "(debugging); 1 = CSE and fusion; 2 (the default) = also keeps activations in "
                  "SBUF between kernels (store-to-load forwarding) and list-schedules "
                  "instructions within and across kernels (orders and SBUF placements timed by the "
                  "device model); "
                  "3 = as 2 with a wider search over instruction orders")
      ->check(CLI::Range(0, 3));
  cmd->add_option("--threads", o->threads,
                  "Codegen worker threads (0 = all cores); output is identical for any value");
  cmd->add_option("--tp", o->tp,
                  "Tensor parallelism: split the model over N NeuronCores (trn1: 1, 2, 8, 16, 32; "
                  "trn2 and trn3: 1 to 64). Linears split by columns then rows with an all-reduce, "
                  "attention by heads, the KV cache by heads; every core keeps its own chunk");
  cmd->add_option("--dim", o->dims,
                  "Bind a symbolic dim to one value: SYMBOL=VALUE (repeatable; no buckets for it)");
  cmd->add_option("--buckets", o->buckets,
                  "Shape buckets of a symbolic dim: SYMBOL=V1,V2,... (repeatable; default: the "
                  "powers of two in its range when padding it is exact, else the sample's value)");
  cmd->add_option("--print-after", o->print_after,
                  "Print the IR after these passes (comma list, or 'all')");
  cmd->add_flag("--json", o->json, "Print the compile report as JSON (fields in docs/CLI.md)");
  cmd->add_option("--report", o->report,
                  "Also write a self-contained HTML report (coverage, memory, timeline, roofline)");
  cmd->callback([o] { run_compile(*o); });
}

}  // namespace neuronc::tools
