// `neuronc compile MODEL -o OUT.nca`: a PyTorch program into a Trainium artifact.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "compiler/compile_cache.h"
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
  std::string model, output, target = "trn1", auto_cast = "none", print_after, report, cache_dir;
  int opt_level = 2, threads = 0, tp = 1;
  double cache_max_gb = static_cast<double>(compiler::CompileCache::kDefaultMaxBytes) / 1e9;
  std::vector<std::string> dims, buckets;
  bool json = false, no_cache = false, cache_copy = false;
};

// What the compile cache did for one compile.
struct CacheUse {
  std::string state = "off";  // off, hit, stored, not_stored
  std::string why;            // why off or not stored, or which corrupt entry was rebuilt
  std::string dir, key;
  std::string output;  // on a hit: the output was "linked" to the entry, "copied", "unchanged"
  // Computing the key, and on a hit, checking and linking (or copying) the entry; on a miss,
  // storing it. A key computed beside the compile (a source's digest not remembered) adds only the
  // store.
  double seconds = 0;
};

nlohmann::ordered_json cache_json(const CacheUse& c) {
  nlohmann::ordered_json j;
  j["state"] = c.state;
  if (!c.why.empty()) j["why"] = c.why;
  if (!c.dir.empty()) j["dir"] = c.dir;
  if (!c.key.empty()) j["key"] = c.key;
  if (!c.output.empty()) j["output"] = c.output;
  j["seconds"] = c.seconds;
  return j;
}

std::string default_output(std::string out) {
  while (out.size() > 1 && out.back() == '/') out.pop_back();  // a directory of programs
  const size_t slash = out.find_last_of('/');
  const size_t dot = out.find_last_of('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) out.resize(dot);
  return out + ".nca";
}

std::vector<std::byte> read_artifact_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw CommandExit{kExitError, "cannot read '" + path + "'", ""};
  std::vector<std::byte> bytes(static_cast<size_t>(f.tellg()));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw CommandExit{kExitError, "reading '" + path + "' failed", ""};
  return bytes;
}

void warn(const std::string& message) {
  std::fprintf(stderr, "neuronc: warning: %s\n", message.c_str());
}

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
  auto eta = std::make_unique<EtaProgress>();  // reset before anything is printed
  req.progress = [e = eta.get()](const std::string& step, double fraction) {
    e->update(step, fraction);
  };
  const std::string out = o.output.empty() ? default_output(o.model) : o.output;

  // The compile cache: a hit links the artifact out instead of compiling. When a source's
  // digest is not remembered (a new or changed model), the key is taken beside the compile
  // rather than before it: the compile starts at once, the source is hashed once (for the key
  // and for the artifact), and a hit found when the key is ready drops the compile at its next
  // step. So a cold compile through the cache costs what one with --no-cache does.
  CacheUse cache_use;
  std::optional<compiler::CompileCache> cache;
  std::optional<compiler::CompileCache::PendingKey> pending;
  const auto t_cache = std::chrono::steady_clock::now();
  auto cache_seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_cache).count();
  };
  if (o.no_cache) {
    cache_use.why = "--no-cache";
  } else if (std::string why = compiler::CompileCache::uncacheable(req); !why.empty()) {
    cache_use.why = why;
  } else {
    const std::filesystem::path dir = o.cache_dir.empty() ? compiler::CompileCache::default_dir()
                                                          : std::filesystem::path(o.cache_dir);
    if (dir.empty()) {
      cache_use.why = "no --cache-dir, and neither XDG_CACHE_HOME nor HOME is set";
    } else {
      cache.emplace(dir, static_cast<uint64_t>(std::max(0.0, o.cache_max_gb) * 1e9),
                    /*link_outputs=*/!o.cache_copy);
      cache_use.dir = dir.string();
      try {
        pending = cache->begin_key(req);
        req.known_sha256 = pending->digests;
      } catch (const std::exception&) {
        cache.reset();  // an unreadable model: the compile below reports it
        cache_use.state = "off";
      }
    }
  }
  compiler::CompileResult r;
  uint64_t artifact_bytes = 0;
  bool hit = false;
  compiler::CacheKey key;
  std::string fetch_why, key_error;
  // Looks the key up, once its digests are made; nullopt on a miss, or when a source could not
  // be hashed (`key_error`; the compile reports the file).
  auto look_up = [&]() -> std::optional<compiler::CompileCache::Hit> {
    try {
      key = pending->key.get();
    } catch (const std::exception& e) {
      key_error = e.what();
      return std::nullopt;
    }
    return cache->fetch(key, out, &fetch_why);
  };
  auto take_hit = [&](compiler::CompileCache::Hit& h) {
    r = std::move(h.result);
    artifact_bytes = h.artifact_bytes;
    hit = true;
    cache_use.state = "hit";
    using Out = compiler::CompileCache::HitOutput;
    cache_use.output = h.output == Out::kLinked   ? "linked"
                       : h.output == Out::kCopied ? "copied"
                                                  : "unchanged";
  };
  bool compiled = false;
  req.output = out;  // streamed to the file by the writer
  if (cache && pending->ready()) {
    eta->update("looking up the compile cache", 0);
    if (auto h = look_up()) take_hit(*h);
    cache_use.seconds = cache_seconds();
  } else if (cache) {
    // The key's digests are being made: compile beside the lookup, which stops the compile (at
    // its next step) when it hits.
    std::atomic<bool> superseded{false};
    struct Superseded {};
    std::optional<compiler::CompileCache::Hit> found;
    auto lookup = std::async(std::launch::async, [&] {
      try {
        found = look_up();
      } catch (const std::exception& e) {  // the compile goes on, uncached
        fetch_why = e.what();
      }
      if (found) superseded = true;
    });
    compiler::CompileRequest speculative = req;
    speculative.progress = [&, e = eta.get()](const std::string& step, double fraction) {
      if (superseded) throw Superseded{};
      e->update(step, fraction);
    };
    try {
      r = compiler::compile_model(speculative);
      compiled = true;
    } catch (const Superseded&) {
    } catch (...) {
      lookup.wait();  // it uses `out` and `key`
      throw;
    }
    lookup.get();
    if (found) {
      take_hit(*found);  // the compile, if it finished, wrote the same bytes
      cache_use.seconds = cache_seconds();
    }
  }
  if (!fetch_why.empty()) {
    warn(fetch_why);
    cache_use.why = fetch_why;
  }
  if (!key_error.empty()) cache_use.why = key_error;  // state stays "off"
  if (!hit) {
    if (!compiled) r = compiler::compile_model(req);
    artifact_bytes = r.artifact_size;
    if (cache && !key.hex.empty()) {
      const auto t_store = std::chrono::steady_clock::now();
      eta->update("storing the artifact in the compile cache", 1);
      std::string why;
      if (cache->store(key, r, out, &why)) {
        cache_use.state = "stored";
      } else {
        warn(why);
        cache_use.state = "not_stored";
        cache_use.why = why;
      }
      cache_use.seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t_store).count();
    }
  }
  cache_use.key = key.hex;
  eta.reset();
  req.progress = nullptr;
  if (!o.report.empty() && r.artifact.empty()) r.artifact = read_artifact_file(out);
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
    j["artifact_bytes"] = artifact_bytes;
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
    j["cache"] = cache_json(cache_use);
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s -> %s (%llu bytes, target %s, auto-cast %s, -O%d)\n", o.model.c_str(),
              out.c_str(), static_cast<unsigned long long>(artifact_bytes), o.target.c_str(),
              o.auto_cast.c_str(), req.opt_level);
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
  const double compile_seconds =
      r.seconds_frontend + r.seconds_passes + r.seconds_codegen + r.seconds_write;
  if (hit) {
    std::printf(
        "  from the compile cache in %.2f s (%s, %s); compiling it took %.2f s (frontend %.2f, "
        "passes %.2f, codegen %.2f, write %.2f)\n",
        cache_use.seconds, cache_use.dir.c_str(), cache_use.output.c_str(), compile_seconds,
        r.seconds_frontend, r.seconds_passes, r.seconds_codegen, r.seconds_write);
    return;
  }
  std::printf("  compile time %.2f s (frontend %.2f, passes %.2f, codegen %.2f, write %.2f)\n",
              compile_seconds, r.seconds_frontend, r.seconds_passes, r.seconds_codegen,
              r.seconds_write);
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
                  "Worker threads for code generation and writing the artifact (0 = all cores); "
                  "output is identical for any value");
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
  cmd->add_option("--cache-dir", o->cache_dir,
                  "Compile cache directory (default: $XDG_CACHE_HOME/neuronc, else "
                  "~/.cache/neuronc). An unchanged model with the same options and compiler is "
                  "linked from it instead of compiled; entries are checksummed and rebuilt when "
                  "corrupt");
  cmd->add_flag("--no-cache", o->no_cache, "Neither read nor write the compile cache");
  cmd->add_flag("--cache-copy", o->cache_copy,
                "Copy artifacts out of and into the compile cache instead of hard-linking them "
                "(the output then shares no file with the cache)");
  cmd->add_option("--cache-max-gb", o->cache_max_gb,
                  "Size limit of the compile cache in GB; least recently used entries go first")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--report", o->report,
                  "Also write a self-contained HTML report (coverage, memory, timeline, roofline)");
  cmd->callback([o] { run_compile(*o); });
}

}  // namespace neuronc::tools
