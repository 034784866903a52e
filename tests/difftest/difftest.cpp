// Differential testing (see difftest.h).
#include "tests/difftest/difftest.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "compiler/compiler.h"
#include "frontend/load.h"
#include "ir/printer.h"
#include "neuronc/neuronc.h"
#include "tools/npy.h"
#include "tools/runner.h"

namespace neuronc::difftest {
namespace {

// fp32 outputs: within 1e-4 of the largest reference magnitude (at least 1), the issue's
// criterion; sums over a different order stay orders of magnitude below it. A graph that
// computes in bf16 rounds at different points on the device (fused epilogues keep fp32) and on
// the host (every op rounds): cosine >= 0.999 and within 3 % of the largest magnitude.
constexpr double kF32Tolerance = 1e-4;
constexpr double kBf16Tolerance = 3e-2;
constexpr double kBf16MinCosine = 0.999;

struct Artifact {
  std::vector<std::byte> bytes;
  int device_nodes = 0;
};

Artifact compile(std::unique_ptr<ir::Graph> g, const std::string& name, const Config& c,
                 bool host_only) {
  frontend::LoadedProgram prog;
  prog.graph = std::move(g);
  prog.container = "difftest";
  prog.torch_version = "none";
  prog.sha256 = frontend::digest_ready(std::string(64, '0'));
  compiler::CompileRequest req;
  req.model = name;
  req.target = c.target;
  req.opt_level = c.opt_level;
  req.host_only = host_only;
  compiler::CompileResult r = compiler::compile_program(std::move(prog), req);
  Artifact a{std::move(r.artifact), 0};
  for (const compiler::PartitionReport& p : r.partitions)
    if (p.device) a.device_nodes += static_cast<int>(p.nodes);
  return a;
}

// A parsed graph's weights without payloads get seeded uniform values in [-1, 1).
void attach_payloads(ir::Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const ir::GraphInput& gi : g.inputs()) {
    if (gi.role == ir::InputRole::user_input || gi.value->payload()) continue;
    if (gi.value->dtype() != ir::DType::f32 || !ir::is_static(gi.value->shape()))
      throw std::runtime_error("weight '" + gi.value->name() +
                               "' needs a payload: only static "
                               "f32 weights get random ones");
    int64_t n = 1;
    for (const ir::Dim& d : gi.value->shape()) n *= d.value();
    std::vector<float> values(static_cast<size_t>(n));
    for (float& x : values)
      x = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1);
    gi.value->set_payload(f32_payload(std::move(values)));
  }
}

double element(const Tensor& t, int64_t i) {
  const std::byte* p = static_cast<const std::byte*>(t.data());
  switch (t.dtype()) {
    case DType::f32: {
      float f;
      std::memcpy(&f, p + i * 4, 4);
      return f;
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p + i * 2, 2);
      return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
    }
    default:
      return std::nan("");
  }
}

}  // namespace

std::string compare_outputs(const Tensor& got, const Tensor& want, bool bf16_graph,
                            double* error_ratio) {
  std::ostringstream why;
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    why << "dtype/shape " << static_cast<int>(got.dtype()) << "/" << got.numel() << " vs "
        << static_cast<int>(want.dtype()) << "/" << want.numel();
    return why.str();
  }
  if (want.dtype() != DType::f32 && want.dtype() != DType::bf16) {
    if (std::memcmp(got.data(), want.data(), want.nbytes()) != 0) return "bytes differ";
    return "";
  }
  double scale = 1, dot = 0, gg = 0, ww = 0, worst = 0;
  int64_t worst_i = -1;
  for (int64_t i = 0; i < want.numel(); ++i)
    if (std::isfinite(element(want, i))) scale = std::max(scale, std::fabs(element(want, i)));
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = element(got, i), w = element(want, i);
    if (std::isnan(g) != std::isnan(w) || (std::isinf(w) && g != w)) {
      why << "element " << i << ": " << g << ", reference " << w;
      return why.str();
    }
    if (!std::isfinite(w)) continue;
    const double e = std::fabs(g - w);
    if (e > worst) worst = e, worst_i = i;
    dot += g * w, gg += g * g, ww += w * w;
  }
  const double tol = (bf16_graph ? kBf16Tolerance : kF32Tolerance) * scale;
  const double cosine = gg > 0 && ww > 0 ? dot / std::sqrt(gg * ww) : 1.0;
  if (error_ratio) *error_ratio = worst / tol;
  if (worst > tol || (bf16_graph && ww > 1e-12 && cosine < kBf16MinCosine)) {
    why << "max |error| " << worst << " > " << tol << " at element " << worst_i << " ("
        << element(got, worst_i) << ", reference " << element(want, worst_i) << "), cosine "
        << cosine;
  }
  return why.str();
}

std::vector<std::byte> compile_graph(std::unique_ptr<ir::Graph> g, const Config& config,
                                     bool host_only) {
  return compile(std::move(g), "graph", config, host_only).bytes;
}

std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (const char* t : {"trn1", "trn2", "trn3"})
    for (int o = 0; o <= 3; ++o) out.push_back({t, o});
  return out;
}

CaseResult run_case(uint64_t seed, const GeneratorOptions& gen,
                    const std::vector<Config>& configs) {
  return run_graph(
      seed, [&] { return generate_graph(seed, gen); }, configs);
}

CaseResult run_graph_text(const std::string& text, const std::vector<Config>& configs) {
  return run_graph(
      0,
      [&] {
        auto g = ir::parse(text);
        attach_payloads(*g, 0x7e57);
        return g;
      },
      configs);
}

CaseResult run_graph(uint64_t seed, const std::function<std::unique_ptr<ir::Graph>()>& make,
                     const std::vector<Config>& configs) {
  CaseResult res;
  res.seed = seed;
  auto fail = [&](const std::string& where, const std::string& what) {
    res.failures.push_back(where + ": " + what);
  };
  try {
    res.graph = ir::print(*make(), {.locations = false});
  } catch (const std::exception& e) {
    fail("generator", e.what());
    return res;
  }
  const bool bf16_graph = res.graph.find("bf16") != std::string::npos;

  Artifact ref_art;
  try {
    ref_art = compile(make(), "difftest-" + std::to_string(seed), {"trn1", 0}, /*host_only=*/true);
  } catch (const std::exception& e) {
    fail("reference", std::string("compile failed: ") + e.what());
    return res;
  }
  auto ref_model = Model::load_from_memory(ref_art.bytes);
  if (!ref_model.is_ok()) {
    fail("reference", "load failed: " + ref_model.status().message());
    return res;
  }
  // Inputs: uniform in [-1, 1), the same for every config.
  // Integer inputs: anywhere in the range the signature records for them (an embedding's rows).
  std::mt19937_64 rng(seed ^ 0xd1ff);
  std::vector<std::vector<float>> data;
  std::vector<std::vector<int64_t>> ints;
  std::vector<NamedInput> inputs;
  for (const TensorSpec& s : ref_model->inputs()) {
    std::vector<int64_t> shape;
    for (const DimSpec& d : s.dims) shape.push_back(d.value);
    if (s.dtype == DType::i64) {
      const int64_t lo = s.valid_range ? s.valid_range->lo : 0;
      const int64_t hi = s.valid_range ? s.valid_range->hi : 16;
      auto& buf = ints.emplace_back(static_cast<size_t>(numel(shape)));
      for (int64_t& x : buf) x = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
      inputs.push_back({s.name, TensorView(buf.data(), DType::i64, shape)});
      continue;
    }
    auto& buf = data.emplace_back(static_cast<size_t>(numel(shape)));
    for (float& x : buf) x = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1);
    inputs.push_back({s.name, TensorView(buf.data(), DType::f32, shape)});
  }
  Session ref_session(*ref_model, {.check_races = true});
  auto want = ref_session.run(inputs);
  if (!want.is_ok()) {
    fail("reference", "run failed: " + want.status().message());
    return res;
  }

  for (const Config& c : configs) {
    const std::string where = c.target + " -O" + std::to_string(c.opt_level);
    ++res.configs_run;
    Artifact art;
    try {
      art = compile(make(), "difftest-" + std::to_string(seed), c, /*host_only=*/false);
    } catch (const std::exception& e) {
      fail(where, std::string("compile failed: ") + e.what());
      continue;
    }
    res.device_nodes += art.device_nodes;
    auto model = Model::load_from_memory(art.bytes);
    if (!model.is_ok()) {
      fail(where, "load failed: " + model.status().message());
      continue;
    }
    Session session(*model, {.check_races = true});
    auto got = session.run(inputs);
    if (!got.is_ok()) {
      fail(where, "run failed: " + got.status().message());
      continue;
    }
    for (const std::string& name : want->names()) {
      const Tensor* g = got->find(name);
      if (!g) {
        fail(where, "output '" + name + "' is missing");
        continue;
      }
      double ratio = 0;
      const std::string why = compare_outputs(*g, want->at(name), bf16_graph, &ratio);
      ++res.outputs_compared;
      res.worst_error_ratio = std::max(res.worst_error_ratio, ratio);
      if (!why.empty()) fail(where, "output '" + name + "': " + why);
    }
  }
  return res;
}

namespace {

Tensor tensor_of(const tools::NpyArray& a) {
  Tensor t(tools::dtype_of(a.type), a.shape);
  if (!a.data.empty()) std::memcpy(t.mutable_data(), a.data.data(), a.data.size());
  return t;
}

// <dir>/<stem>_<i>.npy for i = 0, 1, ... while they exist.
std::vector<tools::NpyArray> read_numbered(const std::filesystem::path& dir,
                                           const std::string& stem) {
  std::vector<tools::NpyArray> out;
  for (int i = 0;; ++i) {
    const std::filesystem::path p = dir / (stem + "_" + std::to_string(i) + ".npy");
    if (!std::filesystem::exists(p)) return out;
    out.push_back(tools::read_npy(p.string()));
  }
}

}  // namespace

CaseResult run_corpus_case(const std::string& pt2_path, const std::vector<Config>& configs) {
  CaseResult res;
  auto fail = [&](const std::string& where, const std::string& what) {
    res.failures.push_back(where + ": " + what);
  };
  const std::filesystem::path dir = std::filesystem::path(pt2_path).parent_path();
  std::vector<tools::NpyArray> in_arrays, want;
  try {
    in_arrays = read_numbered(dir, "input");
    want = read_numbered(dir, "output");
    res.graph = ir::print(*frontend::load_program(pt2_path).graph, {.locations = false});
  } catch (const std::exception& e) {
    fail("corpus", e.what());
    return res;
  }
  const bool bf16_graph = res.graph.find("bf16") != std::string::npos;
  for (const Config& c : configs) {
    const std::string where = c.target + " -O" + std::to_string(c.opt_level);
    ++res.configs_run;
    std::vector<std::byte> bytes;
    try {
      compiler::CompileRequest req;
      req.model = pt2_path;
      req.target = c.target;
      req.opt_level = c.opt_level;
      compiler::CompileResult r = compiler::compile_program(frontend::load_program(pt2_path), req);
      for (const compiler::PartitionReport& p : r.partitions)
        if (p.device) res.device_nodes += static_cast<int>(p.nodes);
      bytes = std::move(r.artifact);
    } catch (const std::exception& e) {
      fail(where, std::string("compile failed: ") + e.what());
      continue;
    }
    auto model = Model::load_from_memory(bytes);
    if (!model.is_ok()) {
      fail(where, "load failed: " + model.status().message());
      continue;
    }
    if (model->inputs().size() != in_arrays.size()) {
      fail(where, std::to_string(model->inputs().size()) + " inputs, the corpus has " +
                      std::to_string(in_arrays.size()));
      continue;
    }
    std::vector<Tensor> in_tensors;
    std::vector<NamedInput> inputs;
    for (size_t i = 0; i < in_arrays.size(); ++i) in_tensors.push_back(tensor_of(in_arrays[i]));
    for (size_t i = 0; i < in_tensors.size(); ++i)
      inputs.push_back({model->inputs()[i].name, in_tensors[i].view()});
    Session session(*model, {.check_races = true});
    auto got = session.run(inputs);
    if (!got.is_ok()) {
      fail(where, "run failed: " + got.status().message());
      continue;
    }
    // The user outputs come first, in the program's order; buffer mutations (named after the
    // buffer) follow them and have no file.
    const std::vector<std::string> names = got->names();
    if (names.size() < want.size()) {
      fail(where,
           std::to_string(names.size()) + " outputs, PyTorch wrote " + std::to_string(want.size()));
      continue;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      double ratio = 0;
      const std::string why =
          compare_outputs(got->at(names[i]), tensor_of(want[i]), bf16_graph, &ratio);
      ++res.outputs_compared;
      res.worst_error_ratio = std::max(res.worst_error_ratio, ratio);
      if (!why.empty()) fail(where, "output " + std::to_string(i) + " '" + names[i] + "': " + why);
    }
  }
  return res;
}

}  // namespace neuronc::difftest
