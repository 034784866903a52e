// codegen: each op family compiled, run on the device model (functional, race checker on) and
// compared with the reference interpreter.
#include <gtest/gtest.h>

#include <cstdio>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

// Runs `text` and expects every output within `tol` x max|reference| (absolute when the
// reference is all zeros).
RunResult check(const std::string& text, double tol = 1e-5,
                device::TargetKind kind = device::TargetKind::trn1, CodegenOptions opts = {}) {
  auto g = ir::parse(text);
  attach_random_payloads(*g, 7);
  RunResult r = compile_and_run(*g, kind, opts);
  EXPECT_LE(r.max_abs_error, tol * std::max(1.0, r.max_abs_reference))
      << "max |ref| " << r.max_abs_reference;
  return r;
}

TEST(CodegenMatmul, MlpLinearReluGelu) {
  RunResult r = check(R"(graph {
  input %x : f32[4, 16]
  param %w1 : f32[32, 16] "fc1.weight"
  param %b1 : f32[32] "fc1.bias"
  param %w2 : f32[32, 32] "fc2.weight"
  param %b2 : f32[32] "fc2.bias"
  param %w3 : f32[8, 32] "fc3.weight"
  param %b3 : f32[8] "fc3.bias"
  %l1 : f32[4, 32] = aten.linear.default(%x, %w1, %b1)
  %r : f32[4, 32] = aten.relu.default(%l1)
  %l2 : f32[4, 32] = aten.linear.default(%r, %w2, %b2)
  %ge : f32[4, 32] = aten.gelu.default(%l2)
  %l3 : f32[4, 8] = aten.linear.default(%ge, %w3, %b3)
  output %l3
})");
  EXPECT_GT(r.part.stats.flops, 0);
  std::printf("mlp: max abs err %g (max |ref| %g), %.3f us, %llu instructions, %llu waits\n",
              r.max_abs_error, r.max_abs_reference, r.report.total_time_ns / 1000,
              (unsigned long long)r.report.instructions,
              (unsigned long long)r.part.stats.semaphore_waits);
  EXPECT_TRUE(r.part.constants[0].transposed);
}

}  // namespace
}  // namespace neuronc::codegen::testing
