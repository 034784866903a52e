// Test harness: compiles a whole graph as one device partition, fills inputs and weights with
// seeded random data, runs the program on the device model (functional, race checker on) and
// returns the outputs beside the reference interpreter's.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "codegen/codegen.h"
#include "codegen/lowering.h"
#include "device/numerics.h"
#include "device/simulator.h"
#include "ir/printer.h"
#include "reference.h"

namespace neuronc::codegen::testing {

struct RunResult {
  CompiledPartition part;
  device::RunReport report;
  std::map<std::string, RefTensor> device_outputs;
  std::map<std::string, RefTensor> reference;  // every value
  double max_abs_error = 0;                    // over all outputs
  double max_abs_reference = 0;
};

// Gives every parameter/buffer/constant input without a payload a random payload.
inline void attach_random_payloads(ir::Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5eed);
  for (const ir::GraphInput& gi : g.inputs()) {
    if (gi.role == ir::InputRole::user_input || gi.value->payload()) continue;
    int64_t n = 1;
    for (const auto& d : gi.value->shape()) n *= d.value();
    auto buf = std::make_shared<std::vector<float>>(static_cast<size_t>(n));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : *buf) x = u(rng);
    ir::ConstantPayload p;
    p.data = reinterpret_cast<const std::byte*>(buf->data());
    p.nbytes = buf->size() * 4;
    p.owner = buf;
    if (gi.value->dtype() != ir::DType::f32) throw std::runtime_error("random payloads are f32");
    gi.value->set_payload(p);
  }
}

inline double load_as_double(const std::byte* p, device::DType t) {
  return device::dtype_is_float(t) ? device::load_f32(p, t)
                                   : static_cast<double>(device::load_int(p, t));
}

// The whole graph compiled as one device partition.
inline CompiledPartition compile_whole(const ir::Graph& g, const device::Target& t,
                                       const CodegenOptions& opts = {}) {
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::vector<const ir::Value*> inputs, outputs;
  for (const ir::GraphInput& gi : g.inputs()) inputs.push_back(gi.value);
  for (const ir::GraphOutput& go : g.outputs()) outputs.push_back(go.value);
  return compile_partition(g, nodes, inputs, outputs, t, opts);
}

// `int_range`: user inputs of integer type draw from [0, int_range).
inline RunResult compile_and_run(const ir::Graph& g,
                                 device::TargetKind kind = device::TargetKind::trn1,
                                 CodegenOptions opts = {}, uint64_t seed = 1,
                                 int64_t int_range = 10) {
  RunResult r;
  const device::Target& t = device::target(kind);
  r.part = compile_whole(g, t, opts);

  std::vector<std::byte> hbm(r.part.program.hbm_size);
  std::mt19937_64 rng(seed);
  for (const TensorBinding& b : r.part.inputs) {
    const ir::Value* v = g.find_value(b.name);
    RefTensor ref;
    ref.shape = b.shape;
    const size_t es = device::dtype_size(b.dtype);
    for (int64_t i = 0; i < ref.numel(); ++i) {
      std::byte* p = hbm.data() + b.offset + i * es;
      if (v->dtype() == ir::DType::boolean) {
        device::store_int(p, b.dtype, static_cast<int64_t>(rng() % 4 != 0));
      } else if (!ir::is_floating(v->dtype())) {
        device::store_int(p, b.dtype, static_cast<int64_t>(rng() % int_range));
      } else {
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        device::store_f32(p, b.dtype, u(rng));
      }
      ref.data.push_back(load_as_double(p, b.dtype));
    }
    r.reference[b.name] = ref;
  }
  for (const ConstantBinding& c : r.part.constants) {
    std::memcpy(hbm.data() + c.offset, c.data.data(), c.data.size());
    const ir::Value* v = g.find_value(c.name);
    if (!v || v->producer()) continue;  // compile-time constants come from nodes
    RefTensor ref;
    ref.shape = c.shape;
    const size_t es = device::dtype_size(c.dtype);
    if (c.column_block > 0) {  // stored element j is logical element column_blocked_to_logical(j)
      ref.data.resize(static_cast<size_t>(ref.numel()));
      for (int64_t j = 0; j < ref.numel(); ++j)
        ref.data[column_blocked_to_logical(j, c.shape[0], c.shape[1], c.column_block)] =
            load_as_double(c.data.data() + j * es, c.dtype);
      r.reference[c.name] = ref;
      continue;
    }
    for (int64_t i = 0; i < ref.numel(); ++i) {
      int64_t j = i;
      if (c.transposed) j = (i % c.shape[1]) * c.shape[0] + i / c.shape[1];
      if (!c.permutation.empty()) {  // logical i -> stored j
        std::vector<int64_t> idx(c.shape.size());
        int64_t rem = i;
        for (size_t d = c.shape.size(); d-- > 0;) idx[d] = rem % c.shape[d], rem /= c.shape[d];
        if (c.row_interleave > 0) {  // channel row r of the first stored dim is stored at
          const int64_t d0 = c.permutation[0], chunks = c.shape[d0] / c.row_interleave;
          idx[d0] = (idx[d0] % c.row_interleave) * chunks + idx[d0] / c.row_interleave;
        }
        j = 0;
        for (int64_t p : c.permutation) j = j * c.shape[p] + idx[p];
      }
      ref.data.push_back(load_as_double(c.data.data() + j * es, c.dtype));
    }
    r.reference[c.name] = ref;
  }
  evaluate(g, r.reference);

  device::SimulatorOptions so;
  so.check_races = true;
  so.poison = true;
  device::Simulator sim(t, so);
  auto rep = sim.run(r.part.program, hbm);
  if (!rep.is_ok()) throw std::runtime_error("simulator: " + rep.status().message());
  r.report = *rep;
  for (const TensorBinding& b : r.part.outputs) {
    RefTensor out;
    out.shape = b.shape;
    const size_t es = device::dtype_size(b.dtype);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data.push_back(load_as_double(hbm.data() + b.offset + i * es, b.dtype));
    const RefTensor& ref = r.reference.at(b.name);
    for (size_t i = 0; i < out.data.size(); ++i) {
      const double e = std::fabs(out.data[i] - ref.data[i]);
      if (std::isnan(out.data[i]) != std::isnan(ref.data[i]) ||
          (!std::isnan(e) && e > r.max_abs_error) ||
          (std::isinf(ref.data[i]) && out.data[i] != ref.data[i]))
        r.max_abs_error = std::isnan(e) || std::isinf(e) ? INFINITY : e;
      if (std::isfinite(ref.data[i]))
        r.max_abs_reference = std::max(r.max_abs_reference, std::fabs(ref.data[i]));
    }
    r.device_outputs[b.name] = std::move(out);
  }
  return r;
}

struct DmaTotals {
  uint64_t transfers = 0;
  uint64_t bytes = 0;  // bytes written by DMAs
};

inline DmaTotals dma_totals(const device::Program& p) {
  DmaTotals t;
  for (const auto& core : p.cores)
    for (const auto& stream : core.streams)
      for (const auto& in : stream)
        if (const auto* d = std::get_if<device::DmaCopy>(&in.op)) {
          ++t.transfers;
          t.bytes += uint64_t{d->dst.partition_count} * d->dst.free_size() *
                     device::dtype_size(d->dst.dtype);
        }
  return t;
}

// One codegen option compared off and on.
struct OptionComparison {
  RunResult off, on;
  DmaTotals off_dma, on_dma;
};

// Compiles and runs `text` with `enable(opts, false)` and `enable(opts, true)` on the same
// weights (`payload_seed`) and inputs (`input_seed`): both must match the reference within
// `tol` relative to max |ref|, and each other bit for bit (an optimisation that moves work
// must not change a single result).
inline OptionComparison compare_option(const std::string& text, device::TargetKind kind, double tol,
                                       const std::function<void(CodegenOptions&, bool)>& enable,
                                       uint64_t payload_seed, uint64_t input_seed) {
  OptionComparison c;
  for (bool on : {false, true}) {
    auto g = ir::parse(text);
    attach_random_payloads(*g, payload_seed);
    CodegenOptions opts;
    // Each option's own effect on the DMA bytes: store forwarding, which removes loads and
    // stores of whatever stays in SBUF, is off unless `enable` is about it.
    opts.forward_stores = false;
    enable(opts, on);
    RunResult r = compile_and_run(*g, kind, opts, input_seed);
    EXPECT_LE(r.max_abs_error, tol * std::max(1.0, r.max_abs_reference))
        << "option " << (on ? "on" : "off") << ": max |ref| " << r.max_abs_reference;
    (on ? c.on : c.off) = std::move(r);
  }
  c.off_dma = dma_totals(c.off.part.program);
  c.on_dma = dma_totals(c.on.part.program);
  for (const auto& [name, t] : c.off.device_outputs)
    EXPECT_EQ(t.data, c.on.device_outputs.at(name).data) << name;
  return c;
}

// One line per comparison: kernels, DMA transfers and bytes, simulated latency, off -> on.
inline void print_comparison(const std::string& what, device::TargetKind kind,
                             const OptionComparison& c) {
  std::printf(
      "%s (%s): kernels %llu -> %llu, DMA %llu -> %llu transfers, %llu -> %llu bytes, "
      "%.2f -> %.2f us\n",
      what.c_str(), std::string(device::target(kind).name).c_str(),
      (unsigned long long)c.off.part.stats.kernels, (unsigned long long)c.on.part.stats.kernels,
      (unsigned long long)c.off_dma.transfers, (unsigned long long)c.on_dma.transfers,
      (unsigned long long)c.off_dma.bytes, (unsigned long long)c.on_dma.bytes,
      c.off.report.total_time_ns / 1000, c.on.report.total_time_ns / 1000);
}

}  // namespace neuronc::codegen::testing
