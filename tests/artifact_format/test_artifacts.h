// Hand-built device programs and artifacts for the artifact_format and loader tests (codegen
// does not exist yet). Every program follows the device rules: DMA HBM -> SBUF, compute on an
// engine, DMA back, ordered by semaphores.
#pragma once

#include <cstring>
#include <vector>

#include "artifact_format/writer.h"
#include "device/isa.h"

namespace neuronc::testing {

namespace d = ::neuronc::device;
namespace art = ::neuronc::artifact;

inline d::Instruction inst(d::Operation op, std::vector<d::SemaphoreWait> waits = {},
                           std::vector<d::SemaphoreSignal> signals = {},
                           uint32_t debug_id = d::kNoDebugId) {
  d::Instruction i;
  i.op = std::move(op);
  i.waits = std::move(waits);
  i.signals = std::move(signals);
  i.debug_id = debug_id;
  return i;
}

// y[4, 32] = relu(2 * x + 1): x at hbm 0, y at hbm 512.
inline art::DeviceProgram relu_affine_program(uint32_t debug_node = d::kNoDebugId) {
  d::Program p;
  p.cores.resize(1);
  p.num_semaphores = 2;
  p.hbm_size = 1024;
  auto& core = p.cores[0];
  d::Instruction load{
      d::DmaCopy{d::sbuf(0, 4, 0, d::DType::f32, 32), d::hbm(0, d::DType::f32, 4, 32, 32), 0},
      {},
      {{0, 1}},
      debug_node};
  d::Activation act;
  act.dst = d::sbuf(0, 4, 1024, d::DType::f32, 32);
  act.src = d::sbuf(0, 4, 0, d::DType::f32, 32);
  act.function = d::ActivationFunction::relu;
  act.scale = 2.0f;
  act.bias = 1.0f;
  d::Instruction compute{act, {{0, 1}}, {{1, 1}}, debug_node};
  d::Instruction store{
      d::DmaCopy{d::hbm(512, d::DType::f32, 4, 32, 32), d::sbuf(0, 4, 1024, d::DType::f32, 32), 1},
      {{1, 1}},
      {},
      debug_node};
  core.stream(d::Engine::sync).push_back(load);
  core.stream(d::Engine::scalar).push_back(compute);
  core.stream(d::Engine::sync).push_back(store);
  return {"relu_affine", p, 2048, 0};
}

// y[4, 32] = x + w: x at hbm 0, w (a constant) at hbm 1024, y at hbm 512.
inline art::DeviceProgram add_weight_program() {
  d::Program p;
  p.cores.resize(1);
  p.num_semaphores = 1;
  p.hbm_size = 2048;
  auto& core = p.cores[0];
  core.stream(d::Engine::sync)
      .push_back(inst(
          d::DmaCopy{d::sbuf(0, 4, 0, d::DType::f32, 32), d::hbm(0, d::DType::f32, 4, 32, 32), 0},
          {}, {{0, 1}}));
  core.stream(d::Engine::sync)
      .push_back(inst(d::DmaCopy{d::sbuf(0, 4, 128, d::DType::f32, 32),
                                 d::hbm(1024, d::DType::f32, 4, 32, 32), 1},
                      {}, {{0, 1}}));
  core.stream(d::Engine::vector)
      .push_back(inst(d::TensorTensor{d::sbuf(0, 4, 256, d::DType::f32, 32),
                                      d::sbuf(0, 4, 0, d::DType::f32, 32),
                                      d::sbuf(0, 4, 128, d::DType::f32, 32), d::AluOp::add},
                      {{0, 2}}, {{0, 1}}));
  core.stream(d::Engine::sync)
      .push_back(inst(d::DmaCopy{d::hbm(512, d::DType::f32, 4, 32, 32),
                                 d::sbuf(0, 4, 256, d::DType::f32, 32), 2},
                      {{0, 3}}));
  return {"add_weight", p, 384, 0};
}

inline std::vector<float> weight_values() {
  std::vector<float> w(128);
  for (int i = 0; i < 128; ++i) w[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  return w;
}

inline std::vector<std::byte> bytes_of(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// x[4,32] -> device relu(2x+1) -> host cumsum(dim=1) -> device (+ w) -> "y".
// Also outputs "spectrum" = |rfft(h, dim=1)| computed on the host, like models/fallback.
inline art::ArtifactWriter two_partition_writer() {
  using art::Dim;
  art::ArtifactWriter w;
  w.contents().producer = {"neuronc", "0.1.0-test"};
  w.contents().source = {"pt2-archive", "8.20", "2.14.1", std::vector<uint8_t>(32, 0xab),
                         "model.pt2"};
  w.contents().target = "trn1";
  w.contents().options.extra = {{"note", "hand-built"}};
  const uint32_t node_act = w.add_debug_node({"relu", "aten.relu.default", "model.py", 12, ""});
  w.add_debug_node({"cumsum", "aten.cumsum.default", "model.py", 13, ""});
  const std::vector<Dim> shape = {Dim::constant(4), Dim::constant(32)};
  const uint32_t x = w.add_input("x", art::TensorDType::f32, shape);
  const uint32_t weight =
      w.add_constant("fc.weight", art::TensorDType::f32, shape, bytes_of(weight_values()), 1024);
  const uint32_t h1 = w.add_value("h1", art::TensorDType::f32, shape);
  const uint32_t h2 = w.add_value("h2", art::TensorDType::f32, shape);
  const uint32_t y = w.add_value("y", art::TensorDType::f32, shape);
  const uint32_t spec_c =
      w.add_value("spec_c", art::TensorDType::c64, {Dim::constant(4), Dim::constant(17)});
  const uint32_t spec =
      w.add_value("spectrum", art::TensorDType::f32, {Dim::constant(4), Dim::constant(17)});
  const uint32_t p0 = w.add_program(relu_affine_program(node_act));
  const uint32_t p1 = w.add_program(add_weight_program());
  w.add_device_call({p0, {{x, 0}}, {{h1, 512}}});
  art::HostOp cumsum{"aten.cumsum.default",
                     {art::Arg::tensor("self", static_cast<int32_t>(h1)),
                      art::Arg::integer("dim", 1), art::Arg::none("dtype")},
                     {h2},
                     1};
  w.add_host_op(cumsum);
  w.add_device_call({p1, {{h2, 0}}, {{y, 512}}});
  w.add_host_op({"aten.fft_rfft.default",
                 {art::Arg::tensor("self", static_cast<int32_t>(h1)), art::Arg::none("n"),
                  art::Arg::integer("dim", 1), art::Arg::none("norm")},
                 {spec_c}});
  w.add_host_op(
      {"aten.abs.default", {art::Arg::tensor("self", static_cast<int32_t>(spec_c))}, {spec}});
  (void)weight;
  w.add_output("y", y);
  w.add_output("spectrum", spec);
  return w;
}

inline std::vector<std::byte> two_partition_artifact(const art::WriteOptions& o = {}) {
  auto w = two_partition_writer();
  auto bytes = w.write_memory(o);
  return bytes.is_ok() ? std::move(bytes).value() : std::vector<std::byte>();
}

}  // namespace neuronc::testing
