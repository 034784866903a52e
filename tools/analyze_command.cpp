// `neuronc analyze MODEL`: which operators of a PyTorch program run on the NeuronCore, which
// fall back to the host and which are unsupported, each with the Python lines that use it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "compiler/compiler.h"
#include "compiler/pipeline.h"
#include "frontend/custom_kernels.h"
#include "frontend/load.h"
#include "ir/op_origin.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "passes/partition.h"
#include "passes/pipeline.h"
#include "tools/bucket_report.h"
#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/runner.h"

namespace neuronc::tools {
namespace {

struct AnalyzeOptions {
  std::string model;
  std::string target = "trn1";
  std::string auto_cast = "none";
  bool json = false;
  bool print_ir = false;
};

enum class Support { device, host, unsupported };

const char* support_name(Support s) {
  switch (s) {
    case Support::device:
      return "device";
    case Support::host:
      return "host";
    case Support::unsupported:
      return "unsupported";
  }
  return "?";
}

struct OpUse {
  std::string op;
  ir::OpOrigin origin = ir::OpOrigin::aten;
  Support support = Support::unsupported;
  std::string category;
  std::string reason;
  size_t count = 0;
  std::vector<std::string> locations;  // distinct, in first-use order
};

// What analyze reports: the source operators with their placements, and the optimised graph
// partitioned as `compile` will build it.
struct Analysis {
  std::vector<OpUse> ops;
  size_t counts[3] = {0, 0, 0};  // nodes per Support
  passes::PartitionPlan plan;
  std::vector<std::pair<const ir::Node*, passes::Placement>> unsupported_after;
  size_t device_parts = 0, host_parts = 0, device_nodes = 0, host_nodes = 0;
  std::string imported_ir;
  // Types as written (before shape specialisation) of the values the signature shows.
  std::map<const ir::Value*, std::string> written_types;
  std::map<std::string, int64_t> specialized;   // symbols bound from the sample inputs
  std::vector<compiler::BucketSymbol> buckets;  // the shape buckets `compile` writes
  // The custom-kernel inventory: source operators outside PyTorch's own sets (ir::OpOrigin).
  std::vector<const OpUse*> custom_kernels() const {
    std::vector<const OpUse*> out;
    for (const OpUse& u : ops)
      if (ir::is_custom_kernel(u.origin)) out.push_back(&u);
    return out;
  }
  // Source nodes that port as is: all but those of custom kernels neuronc cannot run.
  size_t portable_nodes() const {
    size_t total = 0;
    for (const OpUse& u : ops)
      if (!ir::is_custom_kernel(u.origin) || u.support != Support::unsupported) total += u.count;
    return total;
  }
  size_t source_nodes() const {
    size_t total = 0;
    for (const OpUse& u : ops) total += u.count;
    return total;
  }
  std::string portability_line() const;
  std::string type_of(const ir::Graph& g, const ir::Value* v) const {
    auto it = written_types.find(v);
    return it != written_types.end() ? it->second : g.type_to_string(v->type());
  }
  void print_json(const AnalyzeOptions& o, const frontend::LoadedProgram& prog) const;
  void print_text(const AnalyzeOptions& o, const frontend::LoadedProgram& prog) const;
};

// The source operators in first-use order (a stable report), each placed as written.
std::vector<OpUse> group_source_ops(const ir::Graph& g, const passes::PlacementOracle& oracle) {
  std::map<std::string, size_t> index;
  std::vector<OpUse> ops;
  for (const auto& n : g.nodes()) {
    auto [it, inserted] = index.emplace(n->op(), ops.size());
    if (inserted) {
      OpUse u;
      u.op = n->op();
      u.origin = ir::op_origin(u.op);
      if (const ir::OpInfo* info = n->info()) u.category = ir::op_category_name(info->category);
      const passes::Placement p = oracle(*n);
      u.support = p.kind == passes::Placement::device ? Support::device
                  : p.kind == passes::Placement::host ? Support::host
                                                      : Support::unsupported;
      u.reason = p.reason;
      ops.push_back(u);
    }
    OpUse& u = ops[it->second];
    ++u.count;
    const std::string loc = n->location().to_string();
    if (!loc.empty() && std::find(u.locations.begin(), u.locations.end(), loc) == u.locations.end())
      u.locations.push_back(loc);
  }
  return ops;
}

// A source operator the pipeline rewrote away entirely (decomposed, folded into constants or
// into its neighbours) is not what decides where the model runs: what it became does, and that
// is placed here (partitions, host reasons, unsupported leftovers). Each surviving node is placed
// once (the oracle asks codegen and the host kernels); per source operator, the worst placement
// among its surviving nodes, or none survive.
void place_optimized(const ir::Graph& g, const passes::PlacementOracle& oracle, Analysis& a) {
  std::map<std::string, passes::Placement> after;
  for (const auto& n : g.nodes()) {
    const passes::Placement p = oracle(*n);
    if (p.kind == passes::Placement::unsupported) a.unsupported_after.push_back({n.get(), p});
    auto [it, inserted] = after.emplace(n->op(), p);
    if (!inserted && static_cast<int>(p.kind) > static_cast<int>(it->second.kind)) it->second = p;
  }
  for (OpUse& u : a.ops) {
    if (u.support == Support::device) continue;
    auto it = after.find(u.op);
    if (it == after.end()) {
      u.support = Support::device;
      u.reason =
          "rewritten by the optimiser (decomposed, folded or fused); as written: " + u.reason;
    } else if (it->second.kind == passes::Placement::device) {
      u.support = Support::device;
      u.reason =
          "on the device after optimisation (shape specialisation, constant folding); as "
          "written: " +
          u.reason;
    } else if (it->second.kind == passes::Placement::host) {
      u.support = Support::host;
      u.reason = it->second.reason;
    }
  }
  for (const OpUse& u : a.ops) a.counts[static_cast<int>(u.support)] += u.count;
  a.plan = passes::partition_graph(g, oracle);
  for (const passes::Partition& p : a.plan.partitions) {
    if (p.kind == passes::PartitionKind::device) {
      ++a.device_parts;
      a.device_nodes += p.nodes.size();
    } else {
      ++a.host_parts;
      a.host_nodes += p.nodes.size();
    }
  }
}

// What a custom kernel needs, for the inventory.
std::string custom_kernel_verdict(const OpUse& u) {
  if (u.support != Support::unsupported)
    return std::string("ports: neuronc runs it on the ") + support_name(u.support);
  switch (u.origin) {
    case ir::OpOrigin::custom:
      return "will not port: a library's own kernel (torch.ops." + u.op.substr(0, u.op.find('.')) +
             ") with no Trainium implementation";
    case ir::OpOrigin::higher_order:
      return "will not port: a higher-order kernel call (triton, flex attention) kept whole by "
             "torch.export";
    case ir::OpOrigin::cuda_only:
      return "will not port: PyTorch implements it for CUDA only; export on CPU to get the "
             "portable form";
    default:
      return "";
  }
}

// One line on how much of the model is portable as is.
std::string Analysis::portability_line() const {
  const size_t total = source_nodes(), portable = portable_nodes();
  size_t blocking = 0;
  for (const OpUse* u : custom_kernels())
    if (u->support == Support::unsupported) ++blocking;
  char pct[32];
  std::snprintf(
      pct, sizeof pct, "%.1f%%",
      total == 0 ? 100.0 : 100.0 * static_cast<double>(portable) / static_cast<double>(total));
  std::string line = "portable as is: " + std::string(pct) + " of the operator nodes (" +
                     std::to_string(portable) + " of " + std::to_string(total) + ")";
  if (blocking == 0) {
    line += custom_kernels().empty() ? "; no custom kernels"
                                     : "; every custom kernel has a neuronc implementation";
  } else {
    line += "; " + std::to_string(total - portable) + " node" + (total - portable == 1 ? "" : "s") +
            " of " + std::to_string(blocking) +
            (blocking == 1 ? " custom kernel needs a port" : " custom kernels need a port");
  }
  return line;
}

void Analysis::print_json(const AnalyzeOptions& o, const frontend::LoadedProgram& prog) const {
  const ir::Graph& g = *prog.graph;
  nlohmann::ordered_json j;
  j["model"] = o.model;
  j["container"] = prog.container;
  j["torch_version"] = prog.torch_version;
  j["schema_version"] = std::to_string(prog.schema_major) + "." + std::to_string(prog.schema_minor);
  j["sha256"] = prog.sha256.get();
  j["target"] = o.target;
  j["nodes"] = g.nodes().size();
  auto sig = [&](bool inputs) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    if (inputs) {
      for (const ir::GraphInput& in : g.inputs()) {
        a.push_back({{"name", in.value->name()},
                     {"role", ir::input_role_name(in.role)},
                     {"target", in.target},
                     {"type", type_of(g, in.value)}});
      }
    } else {
      for (const ir::GraphOutput& out : g.outputs()) {
        a.push_back({{"name", out.value->name()},
                     {"role", ir::output_role_name(out.role)},
                     {"target", out.target},
                     {"type", type_of(g, out.value)}});
      }
    }
    return a;
  };
  j["inputs"] = sig(true);
  j["outputs"] = sig(false);
  j["summary"] = {{"device", counts[0]}, {"host", counts[1]}, {"unsupported", counts[2]}};
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const OpUse* u : custom_kernels()) {
    kernels.push_back({{"op", u->op},
                       {"origin", ir::op_origin_name(u->origin)},
                       {"count", u->count},
                       {"ports", u->support != Support::unsupported},
                       {"support", support_name(u->support)},
                       {"verdict", custom_kernel_verdict(*u)},
                       {"locations", u->locations}});
  }
  j["custom_kernels"] = kernels;
  j["portability"] = {{"portable_nodes", portable_nodes()},
                      {"nodes", source_nodes()},
                      {"summary", portability_line()}};
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const OpUse& u : ops) {
    arr.push_back({{"op", u.op},
                   {"origin", ir::op_origin_name(u.origin)},
                   {"count", u.count},
                   {"support", support_name(u.support)},
                   {"category", u.category},
                   {"reason", u.reason},
                   {"locations", u.locations}});
  }
  j["ops"] = arr;
  j["optimized"] = {{"nodes", g.nodes().size()},
                    {"device_partitions", device_parts},
                    {"host_partitions", host_parts},
                    {"device_nodes", device_nodes},
                    {"host_nodes", host_nodes}};
  nlohmann::ordered_json reasons = nlohmann::ordered_json::array();
  for (const passes::HostReason& r : plan.host_reasons) {
    reasons.push_back({{"node", r.node->name()},
                       {"op", r.node->op()},
                       {"reason", r.reason},
                       {"location", r.node->location().to_string()}});
  }
  j["optimized"]["host_nodes_detail"] = reasons;
  j["optimized"]["specialized_dims"] = specialized;
  j["optimized"]["buckets"] = buckets_json(buckets);
  nlohmann::ordered_json left = nlohmann::ordered_json::array();
  for (const auto& [n, p] : unsupported_after) {
    left.push_back({{"node", n->name()},
                    {"op", n->op()},
                    {"reason", p.reason},
                    {"location", n->location().to_string()}});
  }
  j["optimized"]["unsupported"] = left;
  if (o.print_ir) {
    j["ir"] = imported_ir;
    j["optimized_ir"] = ir::print(g);
  }
  std::cout << j.dump(2) << "\n";
}

void Analysis::print_text(const AnalyzeOptions& o, const frontend::LoadedProgram& prog) const {
  const ir::Graph& g = *prog.graph;
  std::printf("%s: %s, torch %s, schema %d.%d, %zu nodes\n", o.model.c_str(),
              prog.container.c_str(), prog.torch_version.c_str(), prog.schema_major,
              prog.schema_minor, g.nodes().size());
  size_t params = 0, param_bytes = 0;
  for (const ir::GraphInput& in : g.inputs()) {
    if (in.role == ir::InputRole::user_input) {
      std::printf("  input  %-24s %s\n", in.value->name().c_str(), type_of(g, in.value).c_str());
    } else {
      ++params;
      if (auto n = ir::numel(in.value->shape()); n && n->is_constant())
        param_bytes += static_cast<size_t>(n->coeff) * ir::dtype_size(in.value->dtype());
    }
  }
  for (const ir::GraphOutput& out : g.outputs()) {
    std::printf("  output %-24s %s%s\n", out.value->name().c_str(), type_of(g, out.value).c_str(),
                out.role == ir::OutputRole::user_output
                    ? ""
                    : ("  (" + std::string(ir::output_role_name(out.role)) + " " + out.target + ")")
                          .c_str());
  }
  std::printf("  %zu weights/buffers/constants, %.2f MB\n\n", params, param_bytes / 1e6);
  std::printf("%-52s %6s  %-12s %s\n", "operator", "count", "support", "category");
  for (const OpUse& u : ops) {
    std::printf("%-52s %6zu  %-12s %s\n", u.op.c_str(), u.count, support_name(u.support),
                u.category.c_str());
  }
  std::printf("\n%zu nodes on the device, %zu on the host, %zu unsupported (target %s)\n",
              counts[0], counts[1], counts[2], o.target.c_str());
  if (const auto kernels = custom_kernels(); !kernels.empty()) {
    std::printf("\ncustom kernels (%zu):\n", kernels.size());
    for (const OpUse* u : kernels) {
      std::printf("  %s (%s, %zu node%s): %s\n", u->op.c_str(), ir::op_origin_name(u->origin),
                  u->count, u->count == 1 ? "" : "s", custom_kernel_verdict(*u).c_str());
      for (size_t i = 0; i < u->locations.size() && i < 5; ++i)
        std::printf("    at %s\n", u->locations[i].c_str());
      if (u->locations.size() > 5) std::printf("    ... and %zu more\n", u->locations.size() - 5);
    }
  }
  std::printf("%s\n", portability_line().c_str());
  std::printf("after optimisation: %zu nodes in %zu device and %zu host partitions\n",
              g.nodes().size(), device_parts, host_parts);
  if (!specialized.empty()) {
    std::string dims;
    for (const auto& [sym, v] : specialized)
      dims += (dims.empty() ? "" : ", ") + sym + " = " + std::to_string(v);
    std::printf("  symbolic dims bound from the sample inputs for this report: %s\n", dims.c_str());
  }
  print_buckets(buckets);
  for (const passes::HostReason& r : plan.host_reasons) {
    const std::string loc = r.node->location().to_string();
    std::printf("  host %s (%s): %s%s%s\n", r.node->name().c_str(), r.node->op().c_str(),
                r.reason.c_str(), loc.empty() ? "" : " at ", loc.c_str());
  }
  for (const auto& [n, p] : unsupported_after) {
    const std::string loc = n->location().to_string();
    std::printf("  unsupported %s (%s): %s%s%s\n", n->name().c_str(), n->op().c_str(),
                p.reason.c_str(), loc.empty() ? "" : " at ", loc.c_str());
  }
  for (const OpUse& u : ops) {
    if (u.support == Support::device) continue;
    std::printf("\n%s %s: %s\n", support_name(u.support), u.op.c_str(), u.reason.c_str());
    for (size_t i = 0; i < u.locations.size() && i < 5; ++i)
      std::printf("    at %s\n", u.locations[i].c_str());
    if (u.locations.size() > 5) std::printf("    ... and %zu more\n", u.locations.size() - 5);
  }
  if (o.print_ir) {
    std::printf("\n// imported\n%s", imported_ir.c_str());
    std::printf("\n// optimised\n%s", ir::print(g).c_str());
  }
}

// A TorchScript program calling custom kernels cannot be imported (libtorch needs their library):
// the inventory is all analyze can give, and the program runs nowhere until they are ported.
[[noreturn]] void report_unimportable(const AnalyzeOptions& o,
                                      const frontend::CustomKernelError& e) {
  std::vector<OpUse> kernels;
  for (const frontend::CustomKernelCall& c : e.calls()) {
    if (kernels.empty() || kernels.back().op != c.op) {
      OpUse u;
      u.op = c.op;
      u.origin = ir::op_origin(c.op);
      kernels.push_back(u);
    }
    ++kernels.back().count;
    kernels.back().locations.push_back(c.location);
  }
  const std::string summary =
      "portable as is: unknown, the program cannot be imported until its " +
      std::to_string(kernels.size()) +
      (kernels.size() == 1 ? " custom kernel is ported" : " custom kernels are ported");
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["container"] = "torchscript";
    j["target"] = o.target;
    j["error"] = e.what();
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const OpUse& u : kernels) {
      list.push_back({{"op", u.op},
                      {"origin", ir::op_origin_name(u.origin)},
                      {"count", u.count},
                      {"ports", false},
                      {"support", support_name(u.support)},
                      {"verdict", custom_kernel_verdict(u)},
                      {"locations", u.locations}});
    }
    j["custom_kernels"] = list;
    j["portability"] = {{"portable_nodes", nullptr}, {"nodes", nullptr}, {"summary", summary}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("%s: TorchScript, cannot be imported\n\ncustom kernels (%zu):\n", o.model.c_str(),
                kernels.size());
    for (const OpUse& u : kernels) {
      std::printf("  %s (%s, %zu call%s): %s\n", u.op.c_str(), ir::op_origin_name(u.origin),
                  u.count, u.count == 1 ? "" : "s", custom_kernel_verdict(u).c_str());
      for (const std::string& at : u.locations) std::printf("    at %s\n", at.c_str());
    }
    std::printf("%s\n", summary.c_str());
  }
  throw CommandExit{kExitError, "", ""};
}

void run_analyze(const AnalyzeOptions& o) {
  refuse_program_set(o.model, "analyze");
  progress("reading " + o.model);
  frontend::LoadedProgram prog;
  try {
    prog = frontend::load_program(o.model);
  } catch (const frontend::CustomKernelError& e) {
    progress_done();
    report_unimportable(o, e);
  }
  progress_done();
  const ir::Graph& g = *prog.graph;
  const device::Target& target = compiler::resolve_target(o.target);
  const passes::PlacementOracle oracle = compiler::placement_oracle(target);
  Analysis an;
  an.ops = group_source_ops(g, oracle);
  if (o.print_ir) an.imported_ir = ir::print(g);
  for (const ir::GraphInput& in : g.inputs())
    an.written_types[in.value] = g.type_to_string(in.value->type());
  for (const ir::GraphOutput& out : g.outputs())
    an.written_types[out.value] = g.type_to_string(out.value->type());

  // What the compiler will actually run: the optimised graph, partitioned. The compiler's own
  // pipeline (compiler/pipeline.h): the same shape specialisation (from the sample inputs; a
  // symbol they do not bind stays symbolic and is placed as such), passes and auto-cast as
  // `compile` with the same options.
  compiler::PipelineOptions popts;
  popts.dims = compiler::bind_symbolic_dims(g, prog.sample_inputs, {}, /*require_all=*/false);
  popts.auto_cast = *passes::parse_auto_cast(o.auto_cast);
  // The shape buckets `compile` would write (the report below is the sample inputs' shape).
  an.buckets = compiler::plan_buckets(prog, {{}, {}, popts.opt_level, popts.auto_cast}).symbols;
  passes::PassManager pm;
  compiler::build_compile_pipeline(pm, popts);
  an.specialized = popts.dims;
  pm.run(*prog.graph);
  place_optimized(g, oracle, an);
  if (o.json)
    an.print_json(o, prog);
  else
    an.print_text(o, prog);
  if (an.counts[2] > 0 || !an.unsupported_after.empty()) throw CommandExit{kExitError, "", ""};
}

}  // namespace

void register_analyze_command(CLI::App& app) {
  auto opts = std::make_shared<AnalyzeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Report which operators run on the NeuronCore, on the host, or not at all");
  cmd->footer(
      "Example:\n  neuronc analyze models/bert/model.pt2\n  neuronc analyze model.pt2 --json > "
      "ops.json\n"
      "Exit code 1 when any operator is unsupported.");
  cmd->add_option("model", opts->model, "PyTorch program: .pt2 (torch.export) or .pt (TorchScript)")
      ->required();
  cmd->add_option("--target", opts->target, "trn1, trn2 or trn3")
      ->check(CLI::IsMember({"trn1", "trn2", "trn3"}));
  cmd->add_option("--auto-cast", opts->auto_cast,
                  "Analyse the program as compiled with this auto-cast: none, matmul or all")
      ->check(CLI::IsMember({"none", "matmul", "matmult", "all"}));
  cmd->add_flag("--json", opts->json, "Print the report as JSON (fields in docs/CLI.md)");
  cmd->add_flag("--print-ir", opts->print_ir, "Also print the imported graph in the IR text form");
  cmd->callback([opts] { run_analyze(*opts); });
}

}  // namespace neuronc::tools
