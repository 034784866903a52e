// `neuronc inspect` (inspect_command.h). Reads the artifact with the same reader the loader
// uses (verification reported, not required, so a broken file can still be looked at).
#include "tools/inspect_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "artifact_format/instruction_text.h"
#include "artifact_format/mapped_file.h"
#include "artifact_format/reader.h"
#include "artifact_format/verifier.h"
#include "tools/cli_output.h"

namespace neuronc::tools {
namespace {

// "NAME@coreK" -> (NAME, K), the name a tensor-parallel compile gives core K's copy of a value;
// any other name -> (name, -1).
std::pair<std::string, int> split_core_suffix(const std::string& name) {
  const size_t at = name.rfind("@core");
  if (at == std::string::npos || at + 5 == name.size()) return {name, -1};
  int core = 0;
  for (size_t i = at + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || core > 100000) return {name, -1};
    core = core * 10 + (name[i] - '0');
  }
  return {name.substr(0, at), core};
}

namespace art = ::neuronc::artifact;
namespace d = ::neuronc::device;
using nlohmann::ordered_json;

std::string hex(const std::vector<uint8_t>& b) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) s += std::string{k[x >> 4], k[x & 15]};
  return s;
}

std::string dims_text(const art::ArtifactContents& c, const art::Value& v) {
  std::string s = std::string(dtype_name(v.dtype)) + "[";
  for (size_t i = 0; i < v.dims.size(); ++i) {
    const art::Dim& dm = v.dims[i];
    s += i ? ", " : "";
    if (dm.is_constant()) {
      s += std::to_string(dm.value);
    } else {
      const bool known = static_cast<size_t>(dm.symbol) < c.signature.symbols.size();
      s += (dm.coeff != 1 ? std::to_string(dm.coeff) + "*" : "") +
           (known ? c.signature.symbols[dm.symbol].name : "s" + std::to_string(dm.symbol));
    }
  }
  return s + "]";
}

// "i64[s43, s53]": declared dims (a shape bucket's) with the value's dtype.
std::string declared_text(const art::ArtifactContents& c, art::TensorDType dt,
                          const std::vector<art::Dim>& dims) {
  art::Value v;
  v.dtype = dt;
  v.dims = dims;
  return dims_text(c, v);
}

const char* padding_text(art::BucketPadding p) {
  switch (p) {
    case art::BucketPadding::zeros:
      return "zeros";
    case art::BucketPadding::edge:
      return "edge";
    default:
      return "exact";
  }
}

std::string value_name(const art::ArtifactContents& c, int64_t v) {
  if (v < 0) return "None";
  return static_cast<size_t>(v) < c.plan.values.size() ? c.plan.values[v].name
                                                       : "#" + std::to_string(v);
}

std::string debug_text(const art::ArtifactContents& c, uint32_t id) {
  if (id == d::kNoDebugId || id >= c.debug_nodes.size()) return "";
  const art::DebugNode& n = c.debug_nodes[id];
  std::string s = n.name + " (" + n.op + ")";
  if (!n.file.empty()) s += " " + n.file + ":" + std::to_string(n.line);
  return s;
}

struct Counts {
  std::array<uint64_t, d::kNumEngines> per_engine{};
  uint64_t total = 0;
};

// Instructions over every core the program runs on: a replicated program's file holds core 0,
// which each of its cores runs a copy of.
Counts count(const art::DeviceProgram& p) {
  Counts k;
  const uint64_t copies = p.holds_core0_alone() ? p.replicas : 1;
  for (const auto& core : p.program.cores)
    for (int e = 0; e < d::kNumEngines; ++e) {
      k.per_engine[e] += core.streams[e].size() * copies;
      k.total += core.streams[e].size() * copies;
    }
  return k;
}

ordered_json engines_json(const Counts& k) {
  ordered_json j = ordered_json::object();
  for (int e = 0; e < d::kNumEngines; ++e)
    j[std::string(d::engine_name(static_cast<d::Engine>(e)))] = k.per_engine[e];
  return j;
}

ordered_json build_json(const std::string& path, uint64_t file_bytes, const art::LoadedArtifact& a,
                        const art::Status& verified, bool disasm) {
  const art::ArtifactContents& c = a.contents;
  ordered_json j;
  j["file"] = path;
  j["file_bytes"] = file_bytes;
  j["format_version"] =
      std::to_string(a.header.format_major) + "." + std::to_string(a.header.format_minor);
  j["verified"] = verified.is_ok();
  if (!verified.is_ok()) j["verification_error"] = verified.message();
  j["producer"] = {{"name", c.producer.name}, {"version", c.producer.version}};
  j["source"] = {{"container", c.source.container},
                 {"schema_version", c.source.schema_version},
                 {"torch_version", c.source.torch_version},
                 {"file_name", c.source.file_name},
                 {"sha256", hex(c.source.sha256)}};
  j["target"] = c.target;
  j["num_cores"] = c.num_cores;
  ordered_json opts = {{"auto_cast", c.options.auto_cast}, {"opt_level", c.options.opt_level}};
  for (const auto& [k, v] : c.options.extra) opts[k] = v;
  j["options"] = opts;
  auto specs = [&](const std::vector<art::TensorSpec>& ts) {
    ordered_json arr = ordered_json::array();
    for (const auto& t : ts) {
      const bool ok = t.value < c.plan.values.size();
      ordered_json e = {{"name", t.name},
                        {"type", ok ? dims_text(c, c.plan.values[t.value]) : "?"}};
      if (t.index_bound)
        e["valid_range"] = {
            {"lo", t.index_bound->lo}, {"hi", t.index_bound->hi}, {"reason", t.index_bound->what}};
      arr.push_back(std::move(e));
    }
    return arr;
  };
  ordered_json syms = ordered_json::array();
  for (const auto& s : c.signature.symbols)
    syms.push_back({{"name", s.name}, {"min", s.min}, {"max", s.max}});
  j["signature"] = {{"inputs", specs(c.signature.inputs)},
                    {"outputs", specs(c.signature.outputs)},
                    {"symbols", syms}};
  // State (a KV cache, running statistics): kept by the Session between runs.
  ordered_json states = ordered_json::array();
  for (const art::StateSpec& s : c.signature.states) {
    const bool ok = s.value < c.plan.values.size() && s.update < c.plan.values.size();
    states.push_back({{"name", s.name},
                      {"type", ok ? dims_text(c, c.plan.values[s.value]) : "?"},
                      {"update", ok ? c.plan.values[s.update].name : "?"}});
  }
  j["signature"]["states"] = states;
  // Entries (several programs over the same constants and states): each one's steps, inputs,
  // outputs and the value each state takes after it.
  ordered_json entries = ordered_json::array();
  for (const art::EntrySpec& e : c.signature.entries) {
    ordered_json in = ordered_json::array(), out = ordered_json::array(),
                 updates = ordered_json::array();
    for (uint32_t i : e.inputs)
      in.push_back(i < c.signature.inputs.size() ? c.signature.inputs[i].name : "?");
    for (uint32_t i : e.outputs)
      out.push_back(i < c.signature.outputs.size() ? c.signature.outputs[i].name : "?");
    for (uint32_t v : e.state_updates)
      updates.push_back(v < c.plan.values.size() ? c.plan.values[v].name : "?");
    entries.push_back({{"name", e.name},
                       {"first_step", e.first_step},
                       {"num_steps", e.num_steps},
                       {"inputs", in},
                       {"outputs", out},
                       {"state_updates", updates}});
    if (const auto& b = e.bucket) {
      ordered_json values = ordered_json::object();
      for (size_t k = 0; k < b->symbols.size() && k < b->values.size(); ++k)
        values[b->symbols[k] < c.signature.symbols.size() ? c.signature.symbols[b->symbols[k]].name
                                                          : "?"] = b->values[k];
      entries.back()["bucket"] = {{"group", b->group}, {"values", values}};
    }
  }
  j["signature"]["entries"] = entries;
  // Shape bucket groups: one per group, with its declared signature and each symbol's padding.
  ordered_json groups = ordered_json::array();
  std::set<std::string> seen;
  for (const art::EntrySpec& e : c.signature.entries) {
    if (!e.bucket || !seen.insert(e.bucket->group).second) continue;
    const art::ShapeBucket& b = *e.bucket;
    ordered_json g = {{"group", b.group}, {"entries", 0}};
    for (const art::EntrySpec& f : c.signature.entries)
      if (f.bucket && f.bucket->group == b.group) g["entries"] = g["entries"].get<int>() + 1;
    ordered_json syms_padding = ordered_json::object();
    for (size_t k = 0; k < b.symbols.size() && k < b.padding.size(); ++k)
      syms_padding[b.symbols[k] < c.signature.symbols.size()
                       ? c.signature.symbols[b.symbols[k]].name
                       : "?"] = padding_text(b.padding[k]);
    g["padding"] = syms_padding;
    for (auto [list, declared, sig, key] :
         {std::tuple{&e.inputs, &b.input_dims, &c.signature.inputs, "inputs"},
          std::tuple{&e.outputs, &b.output_dims, &c.signature.outputs, "outputs"}}) {
      ordered_json arr = ordered_json::array();
      for (size_t i = 0; i < list->size() && i < declared->size(); ++i) {
        if ((*list)[i] >= sig->size() || (*sig)[(*list)[i]].value >= c.plan.values.size()) continue;
        const art::TensorSpec& t = (*sig)[(*list)[i]];
        arr.push_back({{"name", t.name},
                       {"type", declared_text(c, c.plan.values[t.value].dtype, (*declared)[i])}});
        if (t.index_bound)
          arr.back()["valid_range"] = {{"lo", t.index_bound->lo},
                                       {"hi", t.index_bound->hi},
                                       {"reason", t.index_bound->what}};
      }
      g[key] = arr;
    }
    groups.push_back(std::move(g));
  }
  j["signature"]["bucket_groups"] = groups;
  ordered_json steps = ordered_json::array();
  uint32_t n_device = 0, n_host = 0;
  for (size_t i = 0; i < c.plan.steps.size(); ++i) {
    ordered_json s;
    s["step"] = i;
    if (const auto* call = std::get_if<art::DeviceCall>(&c.plan.steps[i])) {
      ++n_device;
      s["kind"] = "device";
      s["program"] = call->program;
      if (call->program < c.programs.size()) {
        s["program_name"] = c.programs[call->program].name;
        s["instructions"] = count(c.programs[call->program]).total;
      }
      ordered_json in = ordered_json::array(), out = ordered_json::array();
      for (const auto& b : call->inputs)
        in.push_back({{"value", value_name(c, b.value)}, {"hbm_offset", b.hbm_offset}});
      for (const auto& b : call->outputs)
        out.push_back({{"value", value_name(c, b.value)}, {"hbm_offset", b.hbm_offset}});
      s["inputs"] = in;
      s["outputs"] = out;
    } else {
      ++n_host;
      const auto& op = std::get<art::HostOp>(c.plan.steps[i]);
      s["kind"] = "host";
      s["op"] = op.op;
      ordered_json in = ordered_json::array(), out = ordered_json::array();
      for (const auto& arg : op.args)
        for (int32_t t : arg.tensors) in.push_back(value_name(c, t));
      for (uint32_t v : op.outputs) out.push_back(value_name(c, v));
      s["inputs"] = in;
      s["outputs"] = out;
      if (auto dt = debug_text(c, op.debug_id); !dt.empty()) s["source"] = dt;
    }
    steps.push_back(s);
  }
  j["partitions"] = {{"device", n_device}, {"host", n_host}, {"steps", steps}};
  uint64_t const_bytes = 0, in_hbm = 0;
  for (const auto& k : c.constants) {
    const_bytes += k.size;
    in_hbm += k.hbm_offset != art::kHostOnly;
  }
  j["memory_plan"] = {{"hbm_arena_bytes", c.memory_plan.hbm_arena_bytes},
                      {"sbuf_peak_bytes_per_partition", c.memory_plan.sbuf_peak_bytes},
                      {"psum_peak_bytes_per_partition", c.memory_plan.psum_peak_bytes},
                      {"constants", c.constants.size()},
                      {"constant_bytes", const_bytes},
                      {"constants_in_hbm", in_hbm}};
  // Compiled from a weights-free export: the file holds programs and costs but no weights.
  uint64_t absent_bytes = 0;
  for (const auto& k : c.constants) absent_bytes += k.absent() ? k.size : 0;
  j["timing_only"] = c.timing_only();
  j["absent_constant_bytes"] = absent_bytes;
  Counts all;
  ordered_json programs = ordered_json::array();
  for (const auto& p : c.programs) {
    const Counts k = count(p);
    for (int e = 0; e < d::kNumEngines; ++e) all.per_engine[e] += k.per_engine[e];
    all.total += k.total;
    ordered_json pj = {{"name", p.name},
                       {"cores", p.replicas > 0 ? uint64_t{p.replicas} : p.program.cores.size()},
                       {"replica_stride", p.replica_stride},
                       {"semaphores", p.program.num_semaphores},
                       {"hbm_bytes", p.hbm_size()},
                       {"instructions", k.total},
                       {"per_engine", engines_json(k)}};
    if (disasm) {
      ordered_json streams = ordered_json::array();
      for (size_t core = 0; core < p.program.cores.size(); ++core)
        for (int e = 0; e < d::kNumEngines; ++e) {
          const auto& st = p.program.cores[core].streams[e];
          if (st.empty()) continue;
          ordered_json insts = ordered_json::array();
          for (const auto& in : st) {
            ordered_json ij = {{"text", art::instruction_text(in)}};
            if (in.debug_id != d::kNoDebugId && in.debug_id < c.debug_nodes.size()) {
              const auto& n = c.debug_nodes[in.debug_id];
              ij["node"] = n.name;
              ij["op"] = n.op;
              ij["file"] = n.file;
              ij["line"] = n.line;
            }
            insts.push_back(ij);
          }
          streams.push_back({{"core", core},
                             {"engine", std::string(d::engine_name(static_cast<d::Engine>(e)))},
                             {"instructions", insts}});
        }
      pj["streams"] = streams;
    }
    programs.push_back(pj);
  }
  j["instructions"] = {{"total", all.total}, {"per_engine", engines_json(all)}};
  j["programs"] = programs;
  ordered_json segs = ordered_json::array();
  for (const auto& s : c.segments)
    segs.push_back({{"name", s.name},
                    {"offset", a.header.segments_offset + s.offset},
                    {"stored_bytes", s.stored_size},
                    {"raw_bytes", s.raw_size},
                    {"compression", s.compression == art::Compression::zstd ? "zstd" : "none"},
                    {"crc32c", s.crc32c}});
  j["segments"] = segs;
  return j;
}

std::string text_report(const ordered_json& j) {
  std::ostringstream o;
  o << "artifact   " << j["file"].get<std::string>() << " (" << j["file_bytes"] << " bytes)\n";
  o << "format     " << j["format_version"].get<std::string>() << "  verified: "
    << (j["verified"].get<bool>() ? "ok" : "FAILED: " + j["verification_error"].get<std::string>())
    << "\n";
  o << "producer   " << j["producer"]["name"].get<std::string>() << " "
    << j["producer"]["version"].get<std::string>() << "\n";
  const auto& s = j["source"];
  o << "source     " << s["container"].get<std::string>() << " "
    << s["file_name"].get<std::string>() << " (schema " << s["schema_version"].get<std::string>()
    << ", torch " << s["torch_version"].get<std::string>() << ")\n";
  o << "sha256     " << s["sha256"].get<std::string>() << "\n";
  o << "target     " << j["target"].get<std::string>() << ", " << j["num_cores"] << " core(s)\n";
  if (j["timing_only"].get<bool>())
    o << "timing-only compiled from a weights-free export: " << j["absent_constant_bytes"]
      << " B of weights are not in the file, so it computes no outputs; `neuronc bench` and "
         "`neuronc profile` give its simulated timing\n";
  o << "options   ";
  for (const auto& [k, v] : j["options"].items())
    o << " " << k << "=" << (v.is_string() ? v.get<std::string>() : v.dump());
  o << "\nsignature\n";
  // Inputs and outputs of shape buckets are listed once per group, with their declared dims.
  std::set<std::string> bucketed_inputs, bucketed_outputs;
  for (const auto& e : j["signature"]["entries"])
    if (e.contains("bucket")) {
      for (const auto& n : e["inputs"]) bucketed_inputs.insert(n.get<std::string>());
      for (const auto& n : e["outputs"]) bucketed_outputs.insert(n.get<std::string>());
    }
  for (const auto& g : j["signature"]["bucket_groups"]) {
    o << "  shape buckets '" << g["group"].get<std::string>() << "': " << g["entries"]
      << " entries; padding";
    for (const auto& [sym, how] : g["padding"].items())
      o << " " << sym << "=" << how.get<std::string>();
    o << " (Session::run picks the smallest bucket that fits)\n";
    for (const auto& t : g["inputs"]) {
      o << "    input  " << t["name"].get<std::string>() << ": " << t["type"].get<std::string>();
      if (t.contains("valid_range"))
        o << " in [" << t["valid_range"]["lo"] << ", " << t["valid_range"]["hi"]
          << "): " << t["valid_range"]["reason"].get<std::string>();
      o << "\n";
    }
    for (const auto& t : g["outputs"])
      o << "    output " << t["name"].get<std::string>() << ": " << t["type"].get<std::string>()
        << "\n";
  }
  for (const auto& t : j["signature"]["inputs"]) {
    if (bucketed_inputs.count(t["name"].get<std::string>())) continue;
    o << "  input  " << t["name"].get<std::string>() << ": " << t["type"].get<std::string>();
    if (t.contains("valid_range"))
      o << " in [" << t["valid_range"]["lo"] << ", " << t["valid_range"]["hi"]
        << "): " << t["valid_range"]["reason"].get<std::string>();
    o << "\n";
  }
  for (const auto& t : j["signature"]["outputs"])
    if (!bucketed_outputs.count(t["name"].get<std::string>()))
      o << "  output " << t["name"].get<std::string>() << ": " << t["type"].get<std::string>()
        << "\n";
  const bool has_entries = !j["signature"]["entries"].empty();
  // A tensor-parallel artifact's per-core states (NAME@core0 .. NAME@coreN-1, one type) are one
  // line; --json lists each.
  const auto& states = j["signature"]["states"];
  for (size_t i = 0; i < states.size();) {
    const std::string name = states[i]["name"].get<std::string>();
    const std::string type = states[i]["type"].get<std::string>();
    const auto [base, core] = split_core_suffix(name);
    size_t k = i + 1;
    while (core == 0 && k < states.size() && states[k]["type"] == type &&
           split_core_suffix(states[k]["name"].get<std::string>()) ==
               std::pair<std::string, int>(base, static_cast<int>(k - i)))
      ++k;
    o << "  state  " << (k - i > 1 ? base + "@core0.." + std::to_string(k - i - 1) : name) << ": "
      << type << " (kept by the session; "
      << (has_entries ? "each entry writes its own update"
                      : "each run leaves " + states[i]["update"].get<std::string>())
      << ")\n";
    i = k;
  }
  auto names = [](const ordered_json& a) {
    std::string s;
    for (const auto& n : a) s += (s.empty() ? "" : ", ") + n.get<std::string>();
    return s;
  };
  for (const auto& e : j["signature"]["entries"]) {
    const uint32_t first = e["first_step"], count = e["num_steps"];
    o << "  entry  " << e["name"].get<std::string>() << ": steps [" << first << ", "
      << first + count << "), inputs " << names(e["inputs"]) << "; outputs " << names(e["outputs"])
      << "\n";
  }
  for (const auto& y : j["signature"]["symbols"])
    o << "  symbol " << y["name"].get<std::string>() << " in [" << y["min"] << ", " << y["max"]
      << "]\n";
  o << "partitions " << j["partitions"]["device"] << " device, " << j["partitions"]["host"]
    << " host\n";
  for (const auto& st : j["partitions"]["steps"]) {
    o << "  [" << st["step"] << "] ";
    // A value bound once per core (NAME@coreK, or the same name at each core's offset) is
    // listed once with its count; --json has every binding.
    auto list = [](const ordered_json& a) {
      std::vector<std::pair<std::string, size_t>> seen;  // value (core suffix dropped), count
      std::vector<std::string> first;
      for (const auto& e : a) {
        const std::string v = e.is_string() ? e.get<std::string>() : e["value"].get<std::string>();
        const std::string key = split_core_suffix(v).first;
        auto it =
            std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == key; });
        if (it != seen.end()) {
          ++it->second;
          continue;
        }
        seen.emplace_back(key, 1);
        first.push_back(e.is_string() ? v
                                      : v + "@" + std::to_string(e["hbm_offset"].get<uint64_t>()));
      }
      std::string r;
      for (size_t i = 0; i < seen.size(); ++i)
        r += (r.empty() ? "" : ", ") + first[i] +
             (seen[i].second > 1 ? " (x" + std::to_string(seen[i].second) + ")" : "");
      return r;
    };
    if (st["kind"] == "device")
      o << "device  program " << st["program"] << " '" << st.value("program_name", "") << "' ("
        << st.value("instructions", 0) << " instructions)  in: " << list(st["inputs"])
        << "  out: " << list(st["outputs"]) << "\n";
    else
      o << "host    " << st["op"].get<std::string>() << "(" << list(st["inputs"]) << ") -> "
        << list(st["outputs"])
        << (st.contains("source") ? "   # " + st["source"].get<std::string>() : "") << "\n";
  }
  const auto& m = j["memory_plan"];
  o << "memory     hbm arena " << m["hbm_arena_bytes"] << " B, sbuf peak "
    << m["sbuf_peak_bytes_per_partition"] << " B/partition, psum peak "
    << m["psum_peak_bytes_per_partition"] << " B/partition\n";
  o << "constants  " << m["constants"] << " (" << m["constant_bytes"] << " B, "
    << m["constants_in_hbm"] << " placed in hbm)\n";
  o << "instructions " << j["instructions"]["total"] << ":";
  for (const auto& [e, n] : j["instructions"]["per_engine"].items()) o << " " << e << " " << n;
  o << "\nsegments\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-3s %-28s %12s %12s %12s %-5s %s\n", "#", "name", "offset",
                "stored", "raw", "comp", "crc32c");
  o << line;
  int i = 0;
  for (const auto& sg : j["segments"]) {
    std::snprintf(line, sizeof line, "  %-3d %-28s %12llu %12llu %12llu %-5s 0x%08x\n", i++,
                  sg["name"].get<std::string>().substr(0, 28).c_str(),
                  static_cast<unsigned long long>(sg["offset"].get<uint64_t>()),
                  static_cast<unsigned long long>(sg["stored_bytes"].get<uint64_t>()),
                  static_cast<unsigned long long>(sg["raw_bytes"].get<uint64_t>()),
                  sg["compression"].get<std::string>().c_str(), sg["crc32c"].get<uint32_t>());
    o << line;
  }
  for (const auto& p : j["programs"]) {
    if (!p.contains("streams")) break;
    o << "program '" << p["name"].get<std::string>() << "' (" << p["cores"] << " core(s), ";
    if (p["replica_stride"].get<uint64_t>() > 0)
      o << "copies of core 0 " << p["replica_stride"] << " B of hbm apart, ";
    o << p["semaphores"] << " semaphores, " << p["hbm_bytes"] << " B hbm)\n";
    for (const auto& st : p["streams"]) {
      int k = 0;
      for (const auto& in : st["instructions"]) {
        o << "  core " << st["core"] << " " << st["engine"].get<std::string>() << "[" << k++ << "] "
          << in["text"].get<std::string>();
        if (in.contains("node"))
          o << "   # " << in["node"].get<std::string>() << " (" << in["op"].get<std::string>()
            << ") " << in["file"].get<std::string>() << ":" << in["line"];
        o << "\n";
      }
    }
  }
  return o.str();
}

}  // namespace

std::string inspect_artifact(const std::string& path, bool json, bool disasm) {
  auto f = art::MappedFile::open(path);
  if (!f) throw CommandExit{kExitError, f.status().message(), path};
  art::ReadOptions ro;
  ro.verify = false;
  auto a = art::read_artifact(f->bytes(), ro);
  if (!a) throw CommandExit{kExitError, path + ": " + a.status().message(), ""};
  const art::Status verified = art::verify_contents(a->contents);
  const ordered_json j = build_json(path, f->bytes().size(), *a, verified, disasm);
  return json ? j.dump(2) + "\n" : text_report(j);
}

void register_inspect_command(CLI::App& app) {
  struct Options {
    std::string artifact;
    bool json = false;
    bool disasm = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("inspect", "show what is inside a compiled artifact (.nca)");
  sub->footer(
      "Example:\n  neuronc inspect bert.nca\n  neuronc inspect bert.nca --disasm | less\n"
      "  neuronc inspect bert.nca --json > bert_inspect.json");
  sub->add_option("ARTIFACT", opts->artifact, "artifact file")->required();
  sub->add_flag("--json", opts->json, "machine-readable output (fields: docs/ARTIFACT_FORMAT.md)");
  sub->add_flag("--disasm", opts->disasm,
                "print every instruction stream with its IR node and Python source line");
  sub->callback(
      [opts] { std::cout << inspect_artifact(opts->artifact, opts->json, opts->disasm); });
}

}  // namespace neuronc::tools
