// The committed model fixtures through the real pipeline: load, passes, partition, then every
// device partition compiled for the target and run on the device model (functional, race
// checker on) with inputs chained from earlier partitions; host partitions run on the reference
// (the host kernels). Checks each device partition against the reference and the model outputs
// against PyTorch's (output_<i>.npy), and prints the simulated latency.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compiler/pipeline.h"
#include "compiler/placement.h"
#include "frontend/load.h"
#include "harness.h"
#include "passes/auto_cast.h"
#include "passes/host_eval.h"
#include "passes/partition.h"
#include "passes/pass_manager.h"

namespace neuronc::codegen::testing {
namespace {

// Minimal .npy reader (little-endian f4/f8/i8/i4/b1/u1, C order).
RefTensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const uint16_t hlen = static_cast<uint8_t>(all[8]) | (static_cast<uint8_t>(all[9]) << 8);
  const std::string header = all.substr(10, hlen);
  const size_t d = header.find("'descr': '") + 10;
  const std::string descr = header.substr(d, header.find('\'', d) - d);
  const size_t s = header.find("'shape': (") + 10;
  std::string shape = header.substr(s, header.find(')', s) - s);
  RefTensor t;
  std::stringstream ss(shape);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) t.shape.push_back(std::stoll(item));
  const char* p = all.data() + 10 + hlen;
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    if (descr == "<f4") {
      float x;
      std::memcpy(&x, p + 4 * i, 4);
      v = x;
    } else if (descr == "<f8") {
      std::memcpy(&v, p + 8 * i, 8);
    } else if (descr == "<i8") {
      int64_t x;
      std::memcpy(&x, p + 8 * i, 8);
      v = double(x);
    } else if (descr == "<i4") {
      int32_t x;
      std::memcpy(&x, p + 4 * i, 4);
      v = x;
    } else if (descr == "|b1" || descr == "|u1") {
      v = static_cast<uint8_t>(p[i]);
    } else
      throw std::runtime_error(path + ": dtype " + descr);
    t.data.push_back(v);
  }
  return t;
}

struct Case {
  std::string model;
  std::string file;
  device::TargetKind target;
  bool autocast = false;  // --auto-cast matmul: cosine similarity >= 0.9999 instead
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << "/" << c.file << " " << device::target_name(c.target)
      << (c.autocast ? " --auto-cast matmul" : "");
}

class Fixture : public ::testing::TestWithParam<Case> {};

TEST_P(Fixture, DevicePartitionsMatch) {
  const Case& c = GetParam();
  const std::string dir = std::string(NEURONC_SOURCE_DIR) + "/models/" + c.model + "/";
  auto prog = frontend::load_program(dir + c.file);
  ir::Graph& g = *prog.graph;
  // The compiler's own pipeline and placement (compiler/pipeline.h, compiler/placement.h).
  compiler::PipelineOptions popts;
  popts.dims = compiler::bind_symbolic_dims(g, prog.sample_inputs, {});
  popts.auto_cast = c.autocast ? passes::AutoCastMode::matmul : passes::AutoCastMode::none;
  passes::PassManager pm;
  compiler::build_compile_pipeline(pm, popts);
  pm.run(g);
  const device::Target& t = device::target(c.target);
  const passes::PartitionPlan plan = passes::partition_graph(g, compiler::placement_oracle(t));
  ASSERT_TRUE(plan.unsupported.empty()) << plan.unsupported.front().reason;
  if (std::getenv("NEURONC_CODEGEN_DUMP")) std::printf("%s\n", ir::print(g).c_str());

  Env ref, dev;
  int ui = 0;
  for (const ir::GraphInput& gi : g.inputs()) {
    if (gi.role == ir::InputRole::user_input) {
      RefTensor t = read_npy(dir + "input_" + std::to_string(ui++) + ".npy");
      ref[gi.value->name()] = dev[gi.value->name()] = t;
    } else if (auto h = passes::read_constant(*gi.value)) {
      ref[gi.value->name()] = dev[gi.value->name()] = RefTensor{h->shape, h->data};
    }
  }
  double total_ns = 0, worst_rel = 0;
  int device_parts = 0;
  uint64_t kernels = 0, instructions = 0, waits = 0;
  double tensor_busy = 0;
  for (const passes::Partition& p : plan.partitions) {
    if (p.kind == passes::PartitionKind::host) {
      evaluate_nodes(p.nodes, ref);
      evaluate_nodes(p.nodes, dev);
      continue;
    }
    ++device_parts;
    CompiledPartition part;
    ASSERT_NO_THROW(part = compile_partition(g, p.nodes, p.inputs, p.outputs, t, {}))
        << c.model << " partition " << device_parts;
    evaluate_nodes(p.nodes, ref);
    std::vector<std::byte> hbm(part.program.hbm_size);
    for (const TensorBinding& b : part.inputs) {
      const RefTensor& v = dev.at(b.name);
      const size_t es = device::dtype_size(b.dtype);
      for (int64_t i = 0; i < v.numel(); ++i) {
        std::byte* q = hbm.data() + b.offset + i * es;
        if (device::dtype_is_float(b.dtype))
          device::store_f32(q, b.dtype, static_cast<float>(v.data[i]));
        else
          device::store_int(q, b.dtype, static_cast<int64_t>(v.data[i]));
      }
    }
    for (const ConstantBinding& cb : part.constants)
      std::memcpy(hbm.data() + cb.offset, cb.data.data(), cb.data.size());
    device::SimulatorOptions so;
    so.check_races = true;
    so.poison = true;
    device::Simulator sim(t, so);
    auto rep = sim.run(part.program, hbm);
    ASSERT_TRUE(rep.is_ok()) << rep.status().message();
    total_ns += rep->total_time_ns;
    kernels += part.stats.kernels;
    instructions += rep->instructions;
    waits += part.stats.semaphore_waits;
    tensor_busy += rep->cores[0].engines[0].busy_ns;
    for (const TensorBinding& b : part.outputs) {
      RefTensor out;
      out.shape = b.shape;
      const size_t es = device::dtype_size(b.dtype);
      double err = 0, mx = 0;
      const RefTensor& r = ref.at(b.name);
      for (int64_t i = 0; i < out.numel(); ++i) {
        out.data.push_back(load_as_double(hbm.data() + b.offset + i * es, b.dtype));
        if (std::isfinite(r.data[i])) {
          err = std::max(err, std::fabs(out.data.back() - r.data[i]));
          mx = std::max(mx, std::fabs(r.data[i]));
        }
      }
      worst_rel = std::max(worst_rel, err / std::max(mx, 1e-30));
      if (!c.autocast) {
        EXPECT_LE(err, 1e-4 * std::max(mx, 1.0)) << c.model << ": " << b.name;
      }
      dev[b.name] = std::move(out);
    }
  }
  // Model outputs against PyTorch.
  double out_err = 0, out_max = 0, dot = 0, nw = 0, ng = 0;
  int64_t not_close = 0;  // elements outside atol 1e-4 + rtol 1e-3
  int oi = 0, compared = 0;
  for (const ir::GraphOutput& go : g.outputs()) {
    if (go.role != ir::OutputRole::user_output) continue;
    const std::string file = dir + "output_" + std::to_string(oi++) + ".npy";
    if (!std::ifstream(file)) {
      ADD_FAILURE() << c.model << ": no PyTorch reference " << file << " for output '"
                    << go.value->name() << "'";
      continue;
    }
    ++compared;
    RefTensor want = read_npy(file);
    const RefTensor& got = dev.at(go.value->name());
    ASSERT_EQ(want.numel(), got.numel()) << go.value->name();
    for (int64_t i = 0; i < want.numel(); ++i) {
      out_err = std::max(out_err, std::fabs(want.data[i] - got.data[i]));
      not_close +=
          !(std::fabs(want.data[i] - got.data[i]) <= 1e-4 + 1e-3 * std::fabs(want.data[i]));
      out_max = std::max(out_max, std::fabs(want.data[i]));
      dot += want.data[i] * got.data[i];
      nw += want.data[i] * want.data[i];
      ng += got.data[i] * got.data[i];
    }
  }
  // A check that compared nothing, or compared against an all-zero reference (a degenerate
  // export: any compiler would "match" it), proves nothing.
  ASSERT_GT(compared, 0) << c.model << ": no output was compared with PyTorch";
  ASSERT_GT(out_max, 0.0) << c.model << ": PyTorch's reference outputs are all zero";
  const double cosine = (nw == 0 && ng == 0) ? 1.0 : dot / std::sqrt(nw * ng);
  if (c.autocast) {
    EXPECT_GE(cosine, 0.9999) << c.model;
  } else {
    EXPECT_LE(out_err, 1e-4 * std::max(out_max, 1.0)) << c.model;
    EXPECT_EQ(not_close, 0) << c.model << ": elements outside atol 1e-4 / rtol 1e-3";
  }
  std::printf(
      "%-20s %-15s %s%s: %d device partition(s), %llu kernels, %llu instructions, "
      "%llu waits, simulated %.2f us (TensorE busy %.1f%%), max abs err vs PyTorch %.3g "
      "(max |out| %.3g), cosine %.6f\n",
      c.model.c_str(), c.file.c_str(), std::string(t.name).c_str(), c.autocast ? " bf16" : "",
      device_parts, (unsigned long long)kernels, (unsigned long long)instructions,
      (unsigned long long)waits, total_ns / 1000, 100.0 * tensor_busy / std::max(total_ns, 1.0),
      out_err, out_max, cosine);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char* m : {"mlp", "transformer_encoder", "bert", "gpt2", "llama", "vit", "cnn"})
    for (const char* f : {"model.pt2", "model_core.pt2"})
      v.push_back({m, f, device::TargetKind::trn1});
  for (auto k : {device::TargetKind::trn2, device::TargetKind::trn3})
    for (const char* m : {"transformer_encoder", "bert", "llama", "vit", "cnn"})
      v.push_back({m, "model.pt2", k});
  for (const char* m : {"mlp", "transformer_encoder", "bert", "gpt2", "llama", "vit", "cnn"})
    v.push_back({m, "model.pt2", device::TargetKind::trn1, true});
  for (auto k : {device::TargetKind::trn2, device::TargetKind::trn3})
    for (const char* m : {"vit", "cnn"}) v.push_back({m, "model.pt2", k, true});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Models, Fixture, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string s = i.param.model + "_" + i.param.file + "_" +
                                           std::string(device::target_name(i.param.target)) +
                                           (i.param.autocast ? "_bf16" : "");
                           for (char& ch : s)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace neuronc::codegen::testing
