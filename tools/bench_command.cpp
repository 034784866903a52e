// `neuronc bench ARTIFACT`: runs the artifact on varied random inputs through the loader (as a
// service would), and once more through the device model's timing half for the utilisation
// figures; prices the result from the instance price table.
#include "tools/bench_command.h"

#include <neuronc/model.h>
#include <neuronc/session.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "artifact_format/mapped_file.h"
#include "artifact_format/reader.h"
#include "device/numerics.h"
#include "device/parameters.h"
#include "device/target.h"
#include "tools/cli_output.h"
#include "tools/commands.h"
#include "tools/generation.h"
#include "tools/percentile.h"
#include "tools/runner.h"
#include "tools/trace_timeline.h"

namespace neuronc::tools {

extern const char* const kBuiltinPriceTableJson;  // generated from tools/data/instance_prices.json

namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void table_error(const std::string& origin, const std::string& what) {
  throw CommandExit{kExitError, "price table " + origin + ": " + what, ""};
}

const json& field(const json& obj, const char* name, json::value_t type, const std::string& origin,
                  const std::string& where) {
  auto it = obj.find(name);
  if (it == obj.end()) table_error(origin, where + " has no '" + name + "'");
  const bool ok = type == json::value_t::number_float
                      ? it->is_number()
                      : it->type() == type || (type == json::value_t::number_unsigned &&
                                               it->is_number_integer() && *it >= 0);
  if (!ok) {
    const char* want = type == json::value_t::string            ? "a string"
                       : type == json::value_t::boolean         ? "true or false"
                       : type == json::value_t::array           ? "an array"
                       : type == json::value_t::number_unsigned ? "a non-negative integer"
                                                                : "a number";
    table_error(origin, where + "." + name + " is " + it->dump() + ", expected " + want);
  }
  return *it;
}

// Deterministic on every platform (std distributions are not): 53 random bits -> [0, 1).
double unit_double(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Fills `bytes` with values of `dtype`: floats uniform in [-1, 1), integers in [0, int_high),
// booleans 0/1.
void fill_random(std::vector<std::byte>& bytes, neuronc::DType dtype, int64_t numel,
                 int64_t int_high, std::mt19937_64& rng) {
  using neuronc::DType;
  const size_t es = neuronc::dtype_size(dtype);
  bytes.assign(static_cast<size_t>(numel) * es, std::byte{0});
  std::byte* p = bytes.data();
  const auto put = [&](int64_t i, const auto v) { std::memcpy(p + i * sizeof(v), &v, sizeof(v)); };
  const int64_t values = dtype == DType::c64 ? numel * 2 : numel;
  for (int64_t i = 0; i < values; ++i) {
    const float f = static_cast<float>(unit_double(rng) * 2.0 - 1.0);
    const int64_t k = static_cast<int64_t>(unit_double(rng) * static_cast<double>(int_high));
    switch (dtype) {
      case DType::f32:
      case DType::c64:
        put(i, f);
        break;
      case DType::f64:
        put(i, static_cast<double>(f));
        break;
      case DType::f16:
        put(i, device::f32_to_f16(f));
        break;
      case DType::bf16:
        put(i, device::f32_to_bf16(f));
        break;
      case DType::f8e4m3:
        put(i, device::f32_to_f8e4m3(f));
        break;
      case DType::f8e5m2:
        put(i, device::f32_to_f8e5m2(f));
        break;
      case DType::i64:
        put(i, k);
        break;
      case DType::i32:
        put(i, static_cast<int32_t>(k));
        break;
      case DType::i16:
        put(i, static_cast<int16_t>(k));
        break;
      case DType::i8:
        put(i, static_cast<int8_t>(std::min<int64_t>(k, 127)));
        break;
      case DType::u8:
        put(i, static_cast<uint8_t>(std::min<int64_t>(k, 255)));
        break;
      case DType::boolean:
        put(i, static_cast<uint8_t>(k & 1));
        break;
      case DType::u32:
        put(i, static_cast<uint32_t>(k));
        break;
      case DType::u16:
        put(i, static_cast<uint16_t>(std::min<int64_t>(k, 65535)));
        break;
      case DType::tf32:
        put(i, device::f32_to_tf32_bits(f));
        break;
    }
  }
}

struct InputShape {
  std::string name;
  neuronc::DType dtype;
  neuronc::Shape shape;
  int64_t int_high = 0;  // integers drawn from [0, int_high): --int-high within the valid range
};

// Concrete input shapes: fixed dims as given; a symbolic dim at the value the artifact was
// specialised to (compile option dim.<symbol>), else the smallest value its range allows.
std::vector<InputShape> input_shapes(const neuronc::Model& model,
                                     const artifact::ArtifactContents& c, int64_t int_high,
                                     const std::map<std::string, int64_t>& dims) {
  for (const auto& [sym, v] : dims) {
    bool found = false;
    for (const neuronc::TensorSpec& s : model.inputs())
      for (const neuronc::DimSpec& d : s.dims)
        if (d.symbol == sym) {
          found = true;
          if (v < d.min || v > d.max)
            throw CommandExit{kExitUsage,
                              "--dim " + sym + "=" + std::to_string(v) + ": expected [" +
                                  std::to_string(d.min) + ", " + std::to_string(d.max) + "]",
                              ""};
        }
    if (!found)
      throw CommandExit{kExitUsage, "--dim " + sym + ": no input dim of the model uses it", ""};
  }
  std::vector<InputShape> out;
  for (const neuronc::TensorSpec& s : model.inputs()) {
    // An index input (an embedding's ids) stays inside its table however high --int-high is.
    const int64_t high = s.valid_range && s.valid_range->lo <= 0
                             ? std::clamp<int64_t>(s.valid_range->hi, 1, int_high)
                             : int_high;
    InputShape in{s.name, s.dtype, {}, high};
    for (const neuronc::DimSpec& d : s.dims) {
      if (!d.is_symbolic()) {
        in.shape.push_back(d.value);
        continue;
      }
      int64_t v = std::max<int64_t>(d.min, 1);
      for (const auto& [k, val] : c.options.extra) {
        if (k == "dim." + d.symbol) v = std::clamp<int64_t>(std::stoll(val), d.min, d.max);
      }
      if (auto it = dims.find(d.symbol); it != dims.end()) v = it->second;
      in.shape.push_back(d.coeff * v);
    }
    out.push_back(std::move(in));
  }
  return out;
}

json assumption_json(const std::string& name, double value, const std::string& unit,
                     const std::string& why) {
  return {{"name", name}, {"value", value}, {"unit", unit}, {"why", why}};
}

struct BenchCli {
  BenchOptions o;
  bool json = false;
  std::string price_text;
  std::vector<std::string> dims;
};

void run_bench_cli(const BenchCli& in) {
  BenchCli cli = in;
  cli.o.dims = parse_dim_bindings(cli.dims);
  progress("benchmarking " + cli.o.artifact);
  const json r = cli.o.generate ? run_bench_generate(cli.o) : run_bench(cli.o);
  progress_done();
  if (cli.json) {
    std::cout << r.dump(2) << "\n";
    return;
  }
  std::cout << format_bench_text(r);
}

}  // namespace

const char* builtin_price_table_json() {
  return kBuiltinPriceTableJson;
}

const InstanceInfo* PriceTable::find(const std::string& instance) const {
  for (const InstanceInfo& i : instances) {
    if (i.instance == instance) return &i;
  }
  return nullptr;
}

std::string PriceTable::default_instance(const std::string& target) const {
  for (const auto& [t, i] : defaults) {
    if (t == target) return i;
  }
  return "";
}

PriceTable parse_price_table(const std::string& text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    table_error(origin, std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) table_error(origin, "expected a JSON object with 'instances'");
  PriceTable t;
  if (auto d = doc.find("defaults"); d != doc.end()) {
    if (!d->is_object()) table_error(origin, "'defaults' is " + d->dump() + ", expected an object");
    for (const auto& [target, inst] : d->items()) {
      if (!inst.is_string()) table_error(origin, "defaults." + target + " is not a string");
      t.defaults.emplace_back(target, inst.get<std::string>());
    }
  }
  const json& instances = field(doc, "instances", json::value_t::array, origin, "the table");
  for (size_t i = 0; i < instances.size(); ++i) {
    const json& e = instances[i];
    const std::string where = "instances[" + std::to_string(i) + "]";
    if (!e.is_object()) table_error(origin, where + " is not an object");
    InstanceInfo info;
    info.instance = field(e, "instance", json::value_t::string, origin, where).get<std::string>();
    const std::string at = where + " (" + info.instance + ")";
    info.target = field(e, "target", json::value_t::string, origin, at).get<std::string>();
    info.chips = field(e, "chips", json::value_t::number_unsigned, origin, at).get<int>();
    info.neuron_cores =
        field(e, "neuron_cores", json::value_t::number_unsigned, origin, at).get<int>();
    if (info.neuron_cores <= 0) table_error(origin, at + ".neuron_cores is 0, expected at least 1");
    if (auto fs = e.find("facts_source"); fs != e.end() && fs->is_string())
      info.facts_source = fs->get<std::string>();
    const json& prices = field(e, "prices", json::value_t::array, origin, at);
    for (size_t k = 0; k < prices.size(); ++k) {
      const std::string pw = at + ".prices[" + std::to_string(k) + "]";
      const json& p = prices[k];
      if (!p.is_object()) table_error(origin, pw + " is not an object");
      InstancePrice ip;
      ip.pricing = field(p, "pricing", json::value_t::string, origin, pw).get<std::string>();
      ip.usd_per_hour =
          field(p, "usd_per_hour", json::value_t::number_float, origin, pw).get<double>();
      if (!(ip.usd_per_hour > 0))
        table_error(origin, pw + ".usd_per_hour is " + p["usd_per_hour"].dump() + ", expected > 0");
      ip.source = field(p, "source", json::value_t::string, origin, pw).get<std::string>();
      ip.date = field(p, "date", json::value_t::string, origin, pw).get<std::string>();
      ip.unverified = field(p, "unverified", json::value_t::boolean, origin, pw).get<bool>();
      if (ip.source.empty())
        table_error(origin, pw + ".source is empty: every price names its source");
      if (ip.date.empty()) table_error(origin, pw + ".date is empty: every price carries its date");
      info.prices.push_back(std::move(ip));
    }
    if (t.find(info.instance))
      table_error(origin, at + " repeats instance '" + info.instance + "'");
    t.instances.push_back(std::move(info));
  }
  return t;
}

PriceTable load_price_table(const std::string& user_file) {
  PriceTable t =
      parse_price_table(builtin_price_table_json(), "(built in: tools/data/instance_prices.json)");
  if (user_file.empty()) return t;
  std::ifstream f(user_file);
  if (!f) throw CommandExit{kExitError, "cannot read price table '" + user_file + "'", ""};
  std::stringstream ss;
  ss << f.rdbuf();
  PriceTable user = parse_price_table(ss.str(), "'" + user_file + "'");
  for (InstanceInfo& u : user.instances) {
    auto it = std::find_if(t.instances.begin(), t.instances.end(),
                           [&](const InstanceInfo& i) { return i.instance == u.instance; });
    if (it != t.instances.end()) {
      *it = std::move(u);
    } else {
      t.instances.push_back(std::move(u));
    }
  }
  for (auto& [target, inst] : user.defaults) {
    auto it = std::find_if(t.defaults.begin(), t.defaults.end(),
                           [&](const auto& d) { return d.first == target; });
    if (it != t.defaults.end()) {
      it->second = inst;
    } else {
      t.defaults.emplace_back(target, inst);
    }
  }
  return t;
}

// Usage errors in the options, before anything is loaded.
void check_bench_options(const BenchOptions& o) {
  if (o.iterations < 1)
    throw CommandExit{kExitUsage,
                      "--iterations is " + std::to_string(o.iterations) + ", expected at least 1",
                      ""};
  if (o.threads < 1)
    throw CommandExit{kExitUsage,
                      "--threads is " + std::to_string(o.threads) + ", expected at least 1", ""};
  if (o.warmup < 0)
    throw CommandExit{kExitUsage,
                      "--warmup is " + std::to_string(o.warmup) + ", expected 0 or more", ""};
  if (o.int_high < 1)
    throw CommandExit{kExitUsage,
                      "--int-high is " + std::to_string(o.int_high) + ", expected at least 1", ""};
  if (o.price_per_hour && !(*o.price_per_hour > 0)) {
    throw CommandExit{kExitUsage,
                      "--price-per-hour is " + std::to_string(*o.price_per_hour) + ", expected > 0",
                      ""};
  }
}

// The instance the bench prices: --instance, else the table's default for the target. A name
// not in the table, or an instance of another target, is a usage error.
const InstanceInfo* resolve_instance(const PriceTable& prices, const BenchOptions& o,
                                     const Timeline& tl) {
  const std::string instance_name =
      o.instance.empty() ? prices.default_instance(tl.target) : o.instance;
  const InstanceInfo* instance = instance_name.empty() ? nullptr : prices.find(instance_name);
  if (!o.instance.empty() && !instance) {
    std::string names;
    for (const InstanceInfo& i : prices.instances)
      names += (names.empty() ? "" : ", ") + i.instance;
    throw CommandExit{kExitUsage,
                      "--instance '" + o.instance + "' is not in the price table (" + names +
                          "); add it with --prices FILE",
                      ""};
  }
  // A tensor-parallel artifact needs an instance with its cores: the default is then the
  // smallest such instance of the default's family (trn1.32xlarge for TP 8 to 32), else of any
  // family with the target's NeuronCores.
  if (o.instance.empty() && instance && instance->neuron_cores < static_cast<int>(tl.num_cores)) {
    const std::string family = instance->instance.substr(0, instance->instance.find('.') + 1);
    const InstanceInfo* fit = nullptr;
    for (bool same_family : {true, false}) {
      for (const InstanceInfo& i : prices.instances)
        if (i.target == tl.target && i.neuron_cores >= static_cast<int>(tl.num_cores) &&
            (!same_family || i.instance.rfind(family, 0) == 0) &&
            (!fit || i.neuron_cores < fit->neuron_cores))
          fit = &i;
      if (fit) break;
    }
    instance = fit;
  }
  if (instance && instance->neuron_cores < static_cast<int>(tl.num_cores))
    throw CommandExit{kExitUsage,
                      "instance " + instance->instance + " has " +
                          std::to_string(instance->neuron_cores) +
                          " NeuronCores but the artifact runs on " + std::to_string(tl.num_cores) +
                          ": pick an --instance with enough cores",
                      ""};
  if (instance && instance->target != tl.target) {
    throw CommandExit{kExitUsage,
                      "instance " + instance->instance + " has " + instance->target +
                          " NeuronCores but the artifact is compiled for " + tl.target +
                          ": recompile with --target " + instance->target +
                          " or pick another --instance",
                      ""};
  }

  return instance;
}

// Runs the iterations on `o.threads` sessions: iteration i uses seed (seed, i) whatever thread
// runs it, so inputs are reproducible. Returns each iteration's stats and the wall time.
std::pair<std::vector<neuronc::RunStats>, double> run_iterations(
    const neuronc::Model& model, const std::vector<InputShape>& shapes, const BenchOptions& o) {
  std::vector<neuronc::RunStats> stats(static_cast<size_t>(o.iterations));
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto worker = [&](int w) {
    try {
      neuronc::Session session(model);
      if (!session.status().is_ok()) throw CommandExit{kExitError, session.status().message(), ""};
      std::vector<std::vector<std::byte>> buffers(shapes.size());
      // Warm-ups draw from iterations -1, -2, ...: never the timed iterations' inputs.
      for (int i = -o.warmup; i < o.iterations; i += i < 0 ? 1 : o.threads) {
        if (i == 0) i = w;
        if (i >= o.iterations) break;
        std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i));
        std::vector<neuronc::NamedInput> inputs;
        for (size_t k = 0; k < shapes.size(); ++k) {
          fill_random(buffers[k], shapes[k].dtype, neuronc::numel(shapes[k].shape),
                      shapes[k].int_high, rng);
          inputs.push_back({shapes[k].name, neuronc::TensorView(buffers[k].data(), shapes[k].dtype,
                                                                shapes[k].shape)});
        }
        auto out = session.run(inputs);
        if (!out.is_ok()) {
          throw CommandExit{kExitError,
                            "iteration " + std::to_string(i) + ": " + out.status().message(), ""};
        }
        if (i < 0) continue;
        stats[static_cast<size_t>(i)] = session.stats();
        if (w == 0)
          progress("benchmarking " + o.artifact + ": " + std::to_string(i + 1) + "/" +
                   std::to_string(o.iterations));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  const auto wall0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int w = 1; w < o.threads; ++w) pool.emplace_back(worker, w);
  worker(0);
  for (std::thread& th : pool) th.join();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (failure) std::rethrow_exception(failure);

  return {std::move(stats), wall_s};
}

// The price: --price-per-hour, else the table's price for the instance and pricing; with the
// hourly price when one is known.
std::pair<json, std::optional<double>> bench_price(const BenchOptions& o,
                                                   const InstanceInfo* instance,
                                                   const Timeline& tl) {
  json price;
  std::optional<double> usd_per_hour;
  if (o.price_per_hour) {
    usd_per_hour = *o.price_per_hour;
    price = {{"instance", instance ? json(instance->instance) : json(nullptr)},
             {"usd_per_hour", *o.price_per_hour},
             {"pricing", "user"},
             {"source", "--price-per-hour"},
             {"date", nullptr},
             {"unverified", false}};
  } else if (instance) {
    const InstancePrice* chosen = nullptr;
    for (const InstancePrice& p : instance->prices) {
      if (p.pricing == o.pricing) chosen = &p;
    }
    if (chosen) {
      usd_per_hour = chosen->usd_per_hour;
      price = {{"instance", instance->instance}, {"usd_per_hour", chosen->usd_per_hour},
               {"pricing", chosen->pricing},     {"source", chosen->source},
               {"date", chosen->date},           {"unverified", chosen->unverified}};
    } else {
      price = {{"instance", instance->instance},
               {"usd_per_hour", nullptr},
               {"pricing", o.pricing},
               {"source", "no " + o.pricing + " price for " + instance->instance +
                              " in the table: pass --price-per-hour USD or --prices FILE"},
               {"date", nullptr},
               {"unverified", true}};
    }
  } else {
    price = {{"instance", nullptr},
             {"usd_per_hour", nullptr},
             {"pricing", o.pricing},
             {"source", "no instance known for target " + tl.target +
                            ": pass --instance and --prices, or --price-per-hour"},
             {"date", nullptr},
             {"unverified", true}};
  }
  return {price, usd_per_hour};
}

// Every parameter of the target's device model with the kind of its source (published,
// derived, fitted or assumption: docs/DEVICE_MODEL.md, "Every parameter of device::Target").
json target_parameters_json(const std::string& target_name) {
  json ps = json::array();
  const auto kind = device::parse_target(target_name);
  if (!kind.is_ok()) return ps;
  for (const device::Parameter& p : device::target_parameters(device::target(*kind))) {
    json j = {{"name", p.name},
              {"unit", p.unit},
              {"kind", device::source_kind_name(p.kind)},
              {"row", "docs/DEVICE_MODEL.md, Every parameter of device::Target"}};
    if (std::isnan(p.number))
      j["value"] = p.value;
    else
      j["value"] = p.number;
    ps.push_back(std::move(j));
  }
  return ps;
}

// The device model's assumptions in effect, then the bench's own.
json bench_assumptions(const BenchOptions& o, const Timeline& tl) {
  json as = json::array();
  for (const device::Assumption& a : tl.assumptions)
    as.push_back(assumption_json(a.name, a.value, a.unit, a.why));
  as.push_back(assumption_json(
      "bench_model_copies_per_core", 1, "copies",
      "throughput = cores per instance / cores per inference / mean latency: one inference "
      "in flight per model copy, no batching across requests (data parallel, TRAINIUM.md §6.2)"));
  as.push_back(assumption_json(
      "bench_input_float_range", 1, "abs",
      "float inputs uniform in [-1, 1); simulated device time does not depend on the data"));
  as.push_back(assumption_json(
      "bench_input_int_high", static_cast<double>(o.int_high), "exclusive",
      "integer inputs uniform in [0, int_high), and index inputs within their table's rows"));
  as.push_back(assumption_json(
      "bench_peak_flops_per_core", tl.peak_flops_per_ns * 1e9 / 1e12, "TFLOPS",
      "MFU denominator: dense BF16 TensorE peak, clock x 128 x 128 x 2 (TRAINIUM.md §2.3)"));
  as.push_back(assumption_json(
      "bench_host_ops_time", 1, "measured",
      "host-fallback ops are timed on this machine's CPU and added to the simulated latency"));
  return as;
}

// In a timing-only bench the host ops are not run (they need data): the bench_host_ops_time
// assumption says so instead of "measured". `artifact_is_timing_only`: the artifact has no
// weights, else --timing-only asked for it.
void mark_host_ops_not_run(json& assumptions, uint32_t host_ops, bool artifact_is_timing_only) {
  const std::string why = artifact_is_timing_only
                              ? "timing-only artifact (compiled from a weights-free export): its "
                              : "--timing-only: the artifact's ";
  for (json& a : assumptions)
    if (a["name"] == "bench_host_ops_time")
      a = assumption_json("bench_host_ops_time", 0, "not run",
                          why + std::to_string(host_ops) +
                              " host-fallback steps need data and are left out of the latency; "
                              "device time does not depend on the data");
}

namespace {

// The artifact's contents (its root table; no segment bytes) and its timing-only timeline (the
// first entry's).
struct TimedArtifact {
  artifact::ArtifactContents contents;
  Timeline timeline;
};

// The artifact in `bytes` (`what` names it in errors), read, verified and timed.
TimedArtifact time_artifact(std::span<const std::byte> bytes, const std::string& what) {
  auto art = artifact::read_artifact(bytes);
  if (!art.is_ok()) throw CommandExit{kExitError, what + ": " + art.status().message(), ""};
  try {
    Timeline tl = simulate_timeline(art->contents, {.trace = false});
    return {std::move(art->contents), std::move(tl)};
  } catch (const std::exception& e) {
    throw CommandExit{kExitError, e.what(), ""};
  }
}

TimedArtifact read_and_time(const std::string& path) {
  auto file = artifact::MappedFile::open(path);
  if (!file.is_ok()) throw CommandExit{kExitError, file.status().message(), ""};
  return time_artifact(file->bytes(), path);
}

// Throughput per NeuronCore and per instance from one model copy's rate: one request in
// flight per copy of the model, a copy occupying the artifact's cores.
json throughput_json(double per_copy, const Timeline& tl, const InstanceInfo* instance) {
  json tp;
  tp["per_neuron_core"] = per_copy / tl.num_cores;
  if (instance) {
    const int copies = instance->neuron_cores / static_cast<int>(tl.num_cores);
    tp["per_instance"] = per_copy * copies;
    tp["instance"] = instance->instance;
    tp["neuron_cores_per_instance"] = instance->neuron_cores;
    tp["model_copies_per_instance"] = copies;
  } else {
    tp["per_instance"] = nullptr;
    tp["instance"] = nullptr;
  }
  return tp;
}

// The instance price over what the instance does per hour, per million; null without a price.
json cost_per_million(std::optional<double> usd_per_hour, const json& tp, double per_copy) {
  // --price-per-hour alone (no instance): the price of one model copy's cores.
  const double per_s = tp["instance"].is_null() ? per_copy : tp["per_instance"].get<double>();
  if (!usd_per_hour || !(per_s > 0)) return nullptr;
  return cost_per_million_usd(*usd_per_hour, per_s);
}

}  // namespace

double cost_per_million_usd(double usd_per_hour, double inferences_per_s) {
  return usd_per_hour / 3600.0 / inferences_per_s * 1e6;
}

namespace {

// The benchmark of a loaded artifact (`loaded`: its contents and timeline).
json bench_loaded(const BenchOptions& o, const neuronc::Model& model, TimedArtifact loaded) {
  const PriceTable prices = load_price_table(o.prices_file);
  // A model with shape buckets runs the bucket its inputs pick, which only a run knows.
  if (o.timing_only && !model.entries()[0].bucket_group.empty())
    throw CommandExit{kExitUsage,
                      "--timing-only times one program, but " + o.artifact + " holds " +
                          std::to_string(model.entries().size()) +
                          " shape buckets and the bucket that runs depends on the inputs; "
                          "bench it without --timing-only",
                      ""};
  auto& [contents, tl] = loaded;

  const InstanceInfo* instance = resolve_instance(prices, o, tl);

  const std::vector<InputShape> shapes = input_shapes(model, contents, o.int_high, o.dims);
  // Timing-only (a weights-free artifact, which cannot run, or --timing-only): host ops are
  // left out, and each iteration runs the timing simulation again, so the host time of an
  // inference is the timing simulation's, measured as a functional run's is: after --warmup
  // untimed runs, which make the programs' timing tables (a Session makes them in its first
  // run too).
  const bool timing_only = o.timing_only || model.info().timing_only;
  auto time_iterations = [&] {
    plan::ProgramTimings timings(contents);
    const TimelineOptions options{.trace = false, .timings = &timings, .nodes = false};
    for (int i = 0; i < o.warmup; ++i) simulate_timeline(contents, options);
    std::vector<neuronc::RunStats> runs;
    for (int i = 0; i < o.iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const Timeline again = simulate_timeline(contents, options);
      neuronc::RunStats timed;
      timed.latency_ns = timed.device_ns = again.device_ns;
      plan::set_end_to_end(timed, device::target(*device::parse_target(contents.target)),
                           again.traffic);
      timed.host_wall_ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      runs.push_back(timed);
    }
    return std::pair{std::move(runs), 0.0};
  };
  const auto [stats, wall_s] = timing_only ? time_iterations() : run_iterations(model, shapes, o);
  // A model with shape buckets ran the bucket its shapes picked: the timeline (MFU, HBM bytes,
  // utilisation) is that entry's.
  for (size_t e = 1; e < contents.signature.entries.size() && !stats.empty(); ++e)
    if (contents.signature.entries[e].name == stats[0].entry) {
      try {
        tl = simulate_timeline(contents, {.trace = false, .entry = e});
      } catch (const std::exception& ex) {
        throw CommandExit{kExitError, ex.what(), ""};
      }
    }

  std::vector<double> latency_us, e2e_us, e2e_async_us;
  double host_ns = 0, host_ops_ns = 0, device_ns = 0, call_ns = 0, transfer_ns = 0;
  for (const neuronc::RunStats& s : stats) {
    latency_us.push_back(s.latency_ns / 1e3);
    e2e_us.push_back(s.end_to_end_ns / 1e3);
    e2e_async_us.push_back(s.end_to_end_async_ns / 1e3);
    host_ns += s.host_wall_ns;
    host_ops_ns += s.host_ops_ns;
    device_ns += s.device_ns;
    call_ns += s.execution_call_ns;
    transfer_ns += s.host_transfer_ns;
  }
  const double n = static_cast<double>(stats.size());
  double mean_us = 0, e2e_mean_us = 0;
  for (double v : latency_us) mean_us += v / n;
  for (double v : e2e_us) e2e_mean_us += v / n;

  json r;
  r["artifact"] = o.artifact;
  r["target"] = tl.target;
  r["neuron_core"] = tl.core_version;
  r["neuron_cores_per_inference"] = tl.num_cores;
  r["iterations"] = o.iterations;
  r["warmup"] = o.warmup;
  r["threads"] = o.threads;
  r["seed"] = o.seed;
  if (!model.entries()[0].bucket_group.empty() && !stats.empty())
    r["entry"] = stats[0].entry;  // the shape bucket that ran
  r["inputs"] = json::array();
  for (const InputShape& s : shapes) {
    r["inputs"].push_back({{"name", s.name},
                           {"dtype", std::string(neuronc::dtype_name(s.dtype))},
                           {"shape", s.shape}});
  }
  r["simulated_latency_us"] = {{"p50", percentile(latency_us, 50)},
                               {"p99", percentile(latency_us, 99)},
                               {"mean", mean_us},
                               {"min", *std::min_element(latency_us.begin(), latency_us.end())},
                               {"max", *std::max_element(latency_us.begin(), latency_us.end())},
                               {"device", device_ns / n / 1e3},
                               {"host_ops", host_ops_ns / n / 1e3}};
  // End to end (docs/DEVICE_MODEL.md): device + host ops + what each execution pays outside
  // the device, issued synchronously; the figure set beside a published P50, and the one the
  // throughput and cost below come from.
  r["end_to_end_latency_us"] = {
      {"p50", percentile(e2e_us, 50)},
      {"p99", percentile(e2e_us, 99)},
      {"mean", e2e_mean_us},
      {"min", *std::min_element(e2e_us.begin(), e2e_us.end())},
      {"max", *std::max_element(e2e_us.begin(), e2e_us.end())},
      {"issue", device::issue_mode_name(device::IssueMode::synchronous)},
      {"asynchronous_p50", percentile(e2e_async_us, 50)},
      {"execution_calls", stats.empty() ? 0 : stats[0].device_calls},
      {"program_start_and_call", call_ns / n / 1e3},
      {"host_transfer", transfer_ns / n / 1e3},
      {"host_transfer_bytes", stats.empty() ? 0 : stats[0].host_transfer_bytes}};
  // One inference in flight per copy of the model; a copy occupies the artifact's cores, and
  // waits for each inference end to end.
  const double per_copy = e2e_mean_us > 0 ? 1e6 / e2e_mean_us : 0;
  const json tp = throughput_json(per_copy, tl, instance);
  r["throughput_per_s"] = tp;
  r["mfu"] = tl.mfu();
  r["hfu"] = tl.hfu();
  r["mbu"] = tl.mbu();
  // The device model's ceilings per core, the denominators of a roofline.
  r["peaks"] = {{"tensor_bf16_flops_per_s", tl.peak_flops_per_ns * 1e9},
                {"hbm_bytes_per_s", tl.hbm_bytes_per_ns * 1e9},
                {"dma_bytes_per_s", tl.dma_bytes_per_ns * 1e9}};
  r["model_flops"] = tl.model_flops;
  r["model_flops_source"] = tl.model_flops_source;
  json util;
  for (int e = 0; e < device::kNumEngines; ++e) {
    util[std::string(device::engine_name(static_cast<device::Engine>(e)))] =
        tl.engine_utilization(static_cast<device::Engine>(e));
  }
  util["dma"] = tl.dma_utilization();
  r["engine_utilization"] = util;
  r["hbm_bytes"] = {
      {"read", tl.hbm_read_bytes}, {"write", tl.hbm_write_bytes}, {"total", tl.hbm_bytes()}};
  r["instructions"] = tl.instructions;
  r["host_seconds_per_inference"] = host_ns / n / 1e9;
  {
    std::vector<double> host_s;
    for (const neuronc::RunStats& s : stats) host_s.push_back(s.host_wall_ns / 1e9);
    std::sort(host_s.begin(), host_s.end());
    const size_t m = host_s.size();
    r["host_seconds_per_inference_median"] =
        m == 0 ? 0.0 : (m % 2 ? host_s[m / 2] : (host_s[m / 2 - 1] + host_s[m / 2]) / 2);
  }
  r["host_wall_seconds"] = wall_s;

  const auto [price, usd_per_hour] = bench_price(o, instance, tl);
  r["price"] = price;
  // The instance price buys all its cores; cost per inference = price / 3600 / throughput.
  r["cost_per_million_usd"] = cost_per_million(usd_per_hour, tp, per_copy);

  r["timing_only"] = timing_only;
  json as = bench_assumptions(o, tl);
  if (timing_only) mark_host_ops_not_run(as, model.info().host_ops, model.info().timing_only);
  r["assumptions"] = as;
  r["parameters"] = target_parameters_json(tl.target);
  return r;
}

}  // namespace

json run_bench(const BenchOptions& o) {
  check_bench_options(o);
  neuronc::Model model = load_model_or_exit(o.artifact);
  return bench_loaded(o, model, read_and_time(o.artifact));
}

json run_bench_bytes(const BenchOptions& o, std::span<const std::byte> artifact) {
  check_bench_options(o);
  auto m = neuronc::Model::load_from_memory(artifact);
  if (!m.is_ok()) throw CommandExit{kExitError, o.artifact + ": " + m.status().message(), ""};
  return bench_loaded(o, *m, time_artifact(artifact, o.artifact));
}

json run_bench_generate(const BenchOptions& o) {
  check_bench_options(o);
  if (o.prompt_len < 1 || o.new_tokens < 1)
    throw CommandExit{kExitUsage,
                      "--prompt-len is " + std::to_string(o.prompt_len) + " and --new-tokens " +
                          std::to_string(o.new_tokens) + ": expected at least 1 each",
                      ""};
  const PriceTable prices = load_price_table(o.prices_file);
  const Generator gen(o.artifact, {});
  const Timeline tl = read_and_time(o.artifact).timeline;
  const InstanceInfo* instance = resolve_instance(prices, o, tl);

  // Iteration i: a prompt drawn from the vocab with seed (seed, i), then the greedy tokens.
  std::vector<double> ttft_us, tpot_us, ttft_e2e_us, tpot_e2e_us, ttft_async_us, tpot_async_us;
  std::array<double, 5> busy{};
  double decode_device_ns = 0, host_s = 0;
  std::string ttft_from;
  std::optional<Generation> timed;
  for (int i = 0; i < o.iterations; ++i) {
    std::seed_seq seq{o.seed, static_cast<uint64_t>(i)};
    std::mt19937_64 rng(seq);
    std::vector<std::vector<int64_t>> prompt(static_cast<size_t>(gen.batch()));
    for (auto& row : prompt)
      for (int t = 0; t < o.prompt_len; ++t)
        row.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(gen.vocab())));
    const auto h0 = std::chrono::steady_clock::now();
    // Timing-only: simulated once, the same for every prompt (no data; positions matter only
    // through the decode bucket each step runs in).
    if ((o.timing_only || gen.timing_only()) && !timed)
      timed = gen.time(o.prompt_len, o.new_tokens);
    const Generation g = timed ? *timed : gen.run(prompt, o.new_tokens);
    host_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
    ttft_us.push_back(g.ttft_ns / 1e3);
    ttft_e2e_us.push_back(g.ttft_end_to_end_ns / 1e3);
    ttft_async_us.push_back(g.ttft_end_to_end_async_ns / 1e3);
    ttft_from = g.ttft_from;
    for (const GenerationStep& s : g.steps)
      if (!s.before_first_token()) {
        tpot_us.push_back(s.stats.latency_ns / 1e3);
        tpot_e2e_us.push_back(s.stats.end_to_end_ns / 1e3);
        tpot_async_us.push_back(s.stats.end_to_end_async_ns / 1e3);
      }
    decode_device_ns += g.decode_device_ns;
    for (size_t e = 0; e < busy.size(); ++e) busy[e] += g.decode_busy_ns[e];
  }
  auto stats = [](std::vector<double> v) {
    if (v.empty()) return json(nullptr);
    double mean = 0;
    for (double x : v) mean += x / static_cast<double>(v.size());
    return json{{"p50", percentile(v, 50)}, {"p99", percentile(v, 99)}, {"mean", mean}};
  };
  json r;
  r["artifact"] = o.artifact;
  r["target"] = tl.target;
  r["neuron_core"] = tl.core_version;
  r["neuron_cores_per_inference"] = tl.num_cores;
  r["mode"] = "generate";
  r["iterations"] = o.iterations;
  r["seed"] = o.seed;
  r["batch"] = gen.batch();
  r["prompt_tokens"] = o.prompt_len;
  r["new_tokens"] = o.new_tokens;
  r["ttft_us"] = stats(ttft_us);
  r["ttft_from"] = ttft_from;
  r["tpot_us"] = stats(tpot_us);
  // End to end: every call's per-execution time added (docs/DEVICE_MODEL.md). The throughput
  // and cost below assume synchronous issue (each step waits for the one before, as
  // `neuronc generate` runs); the asynchronous figures are beside them.
  r["end_to_end"] = {{"issue", "synchronous"},
                     {"ttft_us", stats(ttft_e2e_us)},
                     {"tpot_us", stats(tpot_e2e_us)},
                     {"asynchronous_ttft_us", stats(ttft_async_us)},
                     {"asynchronous_tpot_us", stats(tpot_async_us)}};
  // Output tokens per second: batch rows per decode step; one generation in flight per copy
  // of the model, a copy occupying the artifact's cores.
  const double tpot_mean =
      tpot_e2e_us.empty() ? 0 : r["end_to_end"]["tpot_us"]["mean"].get<double>();
  const double per_copy = tpot_mean > 0 ? 1e6 * static_cast<double>(gen.batch()) / tpot_mean : 0;
  const json tp = throughput_json(per_copy, tl, instance);
  r["output_tokens_per_s"] = tp;
  json util;
  for (size_t e = 0; e < kEngineNames.size(); ++e)
    util[std::string(kEngineNames[e])] =  // busy time is summed over the cores
        decode_device_ns > 0 ? busy[e] / (decode_device_ns * tl.num_cores) : 0.0;
  r["decode_engine_utilization"] = util;
  r["peaks"] = {{"tensor_bf16_flops_per_s", tl.peak_flops_per_ns * 1e9},
                {"hbm_bytes_per_s", tl.hbm_bytes_per_ns * 1e9},
                {"dma_bytes_per_s", tl.dma_bytes_per_ns * 1e9}};
  r["host_seconds_per_generation"] = host_s / o.iterations;
  const auto [price, usd_per_hour] = bench_price(o, instance, tl);
  r["price"] = price;
  r["cost_per_million_output_tokens_usd"] = cost_per_million(usd_per_hour, tp, per_copy);
  json as = json::array();
  for (const device::Assumption& a : tl.assumptions)
    as.push_back(assumption_json(a.name, a.value, a.unit, a.why));
  as.push_back(assumption_json(
      "bench_generation_copies_per_core", 1, "copies",
      "output tokens/s = model copies per instance x batch / mean TPOT: one generation in flight "
      "per model copy, no continuous batching across requests"));
  as.push_back(assumption_json(
      "bench_prompt_tokens_uniform", static_cast<double>(gen.vocab()), "vocab",
      "prompt tokens uniform over the vocab; simulated device time does not depend on them"));
  as.push_back(assumption_json(
      "bench_host_ops_time", 1, "measured",
      "host-fallback ops (input conversions) are timed on this machine's CPU and added to each "
      "step's simulated latency"));
  const std::vector<int64_t> contexts = gen.decode_contexts();
  std::string buckets;
  for (int64_t c : contexts) buckets += (buckets.empty() ? "" : ", ") + std::to_string(c);
  as.push_back(assumption_json(
      "bench_decode_context_buckets", static_cast<double>(contexts.size()), "buckets",
      contexts.size() > 1
          ? "a decode step reads the KV cache up to its context-length bucket (" + buckets +
                " positions: the smallest beyond the step's position), and its device time "
                "depends on the position only through that bucket"
          : "a decode step reads the whole KV cache at every position (the artifact has no "
            "context-length buckets: export with --decode-buckets)"));
  r["timing_only"] = o.timing_only || gen.timing_only();
  if (o.timing_only || gen.timing_only())
    mark_host_ops_not_run(as, gen.model().info().host_ops, gen.timing_only());
  r["assumptions"] = as;
  r["parameters"] = target_parameters_json(tl.target);
  return r;
}

namespace {

std::string assumptions_text(const json& assumptions) {
  std::string s = "  assumptions in effect:\n";
  char buf[256];
  for (const json& a : assumptions) {
    std::snprintf(buf, sizeof buf, "    %-34s %g %s\n", a["name"].get<std::string>().c_str(),
                  a["value"].get<double>(), a["unit"].get<std::string>().c_str());
    s += buf;
  }
  return s;
}

std::string format_bench_generate_text(const json& r) {
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf,
                "%s on %s (%s), %d generations of %d tokens after %d-token prompts, batch %lld, "
                "seed %llu\n",
                r["artifact"].get<std::string>().c_str(), r["target"].get<std::string>().c_str(),
                r["neuron_core"].get<std::string>().c_str(), r["iterations"].get<int>(),
                r["new_tokens"].get<int>(), r["prompt_tokens"].get<int>(),
                static_cast<long long>(r["batch"].get<int64_t>()),
                static_cast<unsigned long long>(r["seed"].get<uint64_t>()));
  s += buf;
  if (r.value("timing_only", false))
    s += "  timing-only (a weights-free artifact, or --timing-only): simulated device time, no "
         "tokens computed, host ops left out\n";
  const json& ttft = r["ttft_us"];
  std::snprintf(buf, sizeof buf, "  TTFT  P50 %.2f us  P99 %.2f us  (%s)\n",
                ttft["p50"].get<double>(), ttft["p99"].get<double>(),
                r["ttft_from"].get<std::string>().c_str());
  s += buf;
  if (!r["tpot_us"].is_null()) {
    std::snprintf(buf, sizeof buf, "  TPOT  P50 %.2f us  P99 %.2f us\n",
                  r["tpot_us"]["p50"].get<double>(), r["tpot_us"]["p99"].get<double>());
    s += buf;
  }
  if (r.contains("end_to_end")) {
    const json& e = r["end_to_end"];
    std::snprintf(buf, sizeof buf, "  end to end, %s issue: TTFT P50 %.2f us",
                  e["issue"].get<std::string>().c_str(), e["ttft_us"]["p50"].get<double>());
    s += buf;
    if (!e["tpot_us"].is_null()) {
      std::snprintf(buf, sizeof buf, ", TPOT P50 %.2f us", e["tpot_us"]["p50"].get<double>());
      s += buf;
    }
    std::snprintf(buf, sizeof buf, " (asynchronous: TTFT %.2f us",
                  e["asynchronous_ttft_us"]["p50"].get<double>());
    s += buf;
    if (!e["asynchronous_tpot_us"].is_null()) {
      std::snprintf(buf, sizeof buf, ", TPOT %.2f us",
                    e["asynchronous_tpot_us"]["p50"].get<double>());
      s += buf;
    }
    s += "); tokens/s and cost below are end to end, synchronous\n";
  }
  const json& tp = r["output_tokens_per_s"];
  std::snprintf(buf, sizeof buf, "  output tokens/s  %.1f per NeuronCore",
                tp["per_neuron_core"].get<double>());
  s += buf;
  if (!tp["instance"].is_null()) {
    std::snprintf(buf, sizeof buf, ", %.1f per %s (%d cores)", tp["per_instance"].get<double>(),
                  tp["instance"].get<std::string>().c_str(),
                  tp["neuron_cores_per_instance"].get<int>());
    s += buf;
  }
  s += "\n  decode engine utilisation";
  for (const auto& [k, v] : r["decode_engine_utilization"].items()) {
    std::snprintf(buf, sizeof buf, " %s %.1f%%", k.c_str(), 100 * v.get<double>());
    s += buf;
  }
  s += "\n";
  const json& p = r["price"];
  if (r["cost_per_million_output_tokens_usd"].is_null()) {
    s += "  cost  unknown: " + p["source"].get<std::string>() + "\n";
  } else {
    std::snprintf(buf, sizeof buf, "  cost  $%.4f per million output tokens at $%.3f/h (%s%s)\n",
                  r["cost_per_million_output_tokens_usd"].get<double>(),
                  p["usd_per_hour"].get<double>(), p["pricing"].get<std::string>().c_str(),
                  p["unverified"].get<bool>() ? ", UNVERIFIED price" : "");
    s += buf;
    s += "        price source: " + p["source"].get<std::string>() + "\n";
  }
  s += assumptions_text(r["assumptions"]);
  return s;
}

}  // namespace

std::string format_bench_text(const json& r) {
  if (r.contains("mode") && r["mode"] == "generate") return format_bench_generate_text(r);
  char buf[512];
  std::string s;
  const json& lat = r["simulated_latency_us"];
  const json& tp = r["throughput_per_s"];
  std::snprintf(buf, sizeof buf, "%s on %s (%s), %d iterations on %d thread(s), seed %llu\n",
                r["artifact"].get<std::string>().c_str(), r["target"].get<std::string>().c_str(),
                r["neuron_core"].get<std::string>().c_str(), r["iterations"].get<int>(),
                r["threads"].get<int>(),
                static_cast<unsigned long long>(r["seed"].get<uint64_t>()));
  s += buf;
  if (r.value("timing_only", false))
    s += "  timing-only (a weights-free artifact, or --timing-only): simulated device time, no "
         "data computed, host ops left out\n";
  std::snprintf(
      buf, sizeof buf,
      "  simulated latency  P50 %.2f us  P99 %.2f us  (device %.2f us, host ops %.2f us)\n",
      lat["p50"].get<double>(), lat["p99"].get<double>(), lat["device"].get<double>(),
      lat["host_ops"].get<double>());
  s += buf;
  if (r.contains("end_to_end_latency_us")) {
    const json& e2e = r["end_to_end_latency_us"];
    std::snprintf(buf, sizeof buf,
                  "  end to end         P50 %.2f us  P99 %.2f us  (%s issue; asynchronous P50 "
                  "%.2f us): + program start and runtime call %.2f us (%d call%s), PCIe copies "
                  "%.2f us (%llu B)\n",
                  e2e["p50"].get<double>(), e2e["p99"].get<double>(),
                  e2e["issue"].get<std::string>().c_str(), e2e["asynchronous_p50"].get<double>(),
                  e2e["program_start_and_call"].get<double>(), e2e["execution_calls"].get<int>(),
                  e2e["execution_calls"].get<int>() == 1 ? "" : "s",
                  e2e["host_transfer"].get<double>(),
                  static_cast<unsigned long long>(e2e["host_transfer_bytes"].get<uint64_t>()));
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "  throughput         %.1f /s per NeuronCore",
                tp["per_neuron_core"].get<double>());
  s += buf;
  if (!tp["instance"].is_null()) {
    std::snprintf(buf, sizeof buf, ", %.1f /s per %s (%d cores)", tp["per_instance"].get<double>(),
                  tp["instance"].get<std::string>().c_str(),
                  tp["neuron_cores_per_instance"].get<int>());
    s += buf;
  }
  s += "\n";
  std::snprintf(
      buf, sizeof buf, "  MFU %.3g%%  HFU %.3g%%  MBU %.3g%%  HBM %llu B read, %llu B written\n",
      100 * r["mfu"].get<double>(), 100 * r["hfu"].get<double>(), 100 * r["mbu"].get<double>(),
      static_cast<unsigned long long>(r["hbm_bytes"]["read"].get<uint64_t>()),
      static_cast<unsigned long long>(r["hbm_bytes"]["write"].get<uint64_t>()));
  s += buf;
  s += "  engine utilisation";
  for (const auto& [k, v] : r["engine_utilization"].items()) {
    std::snprintf(buf, sizeof buf, " %s %.1f%%", k.c_str(), 100 * v.get<double>());
    s += buf;
  }
  s += "\n";
  std::snprintf(buf, sizeof buf, "  host time        %.3f ms per simulated inference\n",
                1e3 * r["host_seconds_per_inference"].get<double>());
  s += buf;
  const json& p = r["price"];
  if (r["cost_per_million_usd"].is_null()) {
    s += "  cost               unknown: " + p["source"].get<std::string>() + "\n";
  } else {
    std::snprintf(
        buf, sizeof buf, "  cost               $%.4f per million inferences at $%.3f/h (%s%s%s)\n",
        r["cost_per_million_usd"].get<double>(), p["usd_per_hour"].get<double>(),
        p["pricing"].get<std::string>().c_str(),
        p["unverified"].get<bool>() ? ", UNVERIFIED price" : "",
        p["date"].is_null() ? "" : (", recorded " + p["date"].get<std::string>()).c_str());
    s += buf;
    s += "                     price source: " + p["source"].get<std::string>() + "\n";
  }
  s += "  model FLOPs        " + r["model_flops_source"].get<std::string>() + "\n";
  s += assumptions_text(r["assumptions"]);
  return s;
}

void register_bench_command(CLI::App& app) {
  auto cli = std::make_shared<BenchCli>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Simulated latency, throughput, utilisation and cost per million inferences of an artifact");
  cmd->footer(
      "Example:\n  neuronc bench mlp.nca --iterations 50 --instance inf2.xlarge\n"
      "  neuronc bench bert.nca --price-per-hour 1.34 --json | jq .cost_per_million_usd\n"
      "Inputs are random (fixed seed) in the signature's dtypes and shapes. Prices come from a "
      "table with\n"
      "each entry's source and date (built in; see --prices); unverified prices are flagged.");
  cmd->add_option("artifact", cli->o.artifact, "Compiled artifact (.nca)")->required();
  cmd->add_option("-n,--iterations", cli->o.iterations,
                  "Inferences to run, each on new random inputs (default 20)");
  cmd->add_option("--warmup", cli->o.warmup,
                  "Untimed runs per session before the iterations (default 1: a session's first "
                  "run sizes its buffers)");
  cmd->add_option("--threads", cli->o.threads, "Host threads, one Session each (default 1)");
  cmd->add_option("--instance", cli->o.instance,
                  "Instance to price and size throughput for (default: trn1.2xlarge for trn1, "
                  "trn2.48xlarge for trn2)");
  cmd->add_option("--price-per-hour", cli->o.price_per_hour,
                  "USD per instance-hour; overrides the table");
  cmd->add_option("--pricing", cli->o.pricing,
                  "Which table price: on_demand (default) or reserved_effective");
  cmd->add_option("--prices", cli->o.prices_file,
                  "JSON price table whose instances replace the built-in ones (layout: "
                  "tools/data/instance_prices.json)");
  cmd->add_option("--seed", cli->o.seed, "Seed of the random inputs (default 0)");
  cmd->add_option("--dim", cli->dims,
                  "Value of a symbolic input dim: SYMBOL=VALUE (repeatable; a model with shape "
                  "buckets runs the bucket that fits)");
  cmd->add_option("--int-high", cli->o.int_high,
                  "Integer inputs are drawn from [0, N) (default 8)");
  cmd->add_flag("--generate", cli->o.generate,
                "LLM serving: each iteration generates --new-tokens greedy tokens after a random "
                "--prompt-len prompt with an export_causal_lm.py artifact; reports TTFT, TPOT, "
                "output tokens/s and cost per million output tokens");
  cmd->add_option("--prompt-len", cli->o.prompt_len, "With --generate: prompt tokens (default 16)");
  cmd->add_option("--new-tokens", cli->o.new_tokens,
                  "With --generate: new tokens per generation (default 32)");
  cmd->add_flag("--timing-only", cli->o.timing_only,
                "Run the device model's timing alone, computing no data: the same simulated "
                "device time, without the functional simulation's host cost (host-fallback ops "
                "are left out)");
  cmd->add_flag("--json", cli->json, "Print the report as JSON (fields in docs/CLI.md)");
  cmd->callback([cli] { run_bench_cli(*cli); });
}

}  // namespace neuronc::tools
