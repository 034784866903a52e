// codegen: attention rows whose every key is masked come out 0, as PyTorch's safe softmax (and
// the host kernel) gives them, not NaN, with one key tile or several, in fp32 and bf16. On trn1 a
// NaN would not even stay in its row: the TensorE transpose of the next matmul multiplies it by
// the identity's zeros, spreading it over the tile's other rows (TRAINIUM.md §7).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

// Batch 0 keeps a random 3/4 of keys from `first_key` on; batch 1 keeps none. The attention's
// output feeds a linear, whose activation transpose would spread a NaN.
std::string masked(int64_t S, int64_t first_key, const char* dt) {
  const std::string s = std::to_string(S), t = dt;
  return R"(graph {
  input %q : )" +
         t + "[2, 2, 64, 32]\n  input %k : " + t + "[2, 2, " + s + ", 32]\n  input %v : " + t +
         "[2, 2, " + s + ", 32]\n  input %m : bool[2, 1, 1, " + s + R"(]
  param %wf : f32[32, 32] "w"
  %w : )" +
         t + R"([32, 32] = aten._to_copy.default(%wf) {dtype = #)" + t + R"(}
  %b : i64[2] = aten.arange.default() {end = 2}
  %b4 : i64[2, 1, 1, 1] = aten.view.default(%b) {size = [2, 1, 1, 1]}
  %batch0 : bool[2, 1, 1, 1] = aten.lt.Scalar(%b4) {other = 1}
  %j : i64[)" +
         s + "] = aten.arange.default() {end = " + s + R"(}
  %late : bool[)" +
         s + "] = aten.ge.Scalar(%j) {other = " + std::to_string(first_key) + R"(}
  %mb : bool[2, 1, 1, )" +
         s + R"(] = aten.logical_and.default(%m, %batch0)
  %mask : bool[2, 1, 1, )" +
         s + R"(] = aten.logical_and.default(%mb, %late)
  %o : )" +
         t + R"([2, 2, 64, 32] = aten.scaled_dot_product_attention.default(%q, %k, %v, %mask)
  %y : )" +
         t + R"([2, 2, 64, 32] = aten.linear.default(%o, %w)
  output %o
  output %y
})";
}

TEST(CodegenAttentionMask, FullyMaskedRowsAreZeroAndStayInTheirRows) {
  for (device::TargetKind kind : {device::TargetKind::trn1, device::TargetKind::trn2})
    for (const char* dt : {"f32", "bf16"})
      for (auto [S, first] : {std::pair<int64_t, int64_t>{96, 0}, {640, 0}, {640, 520}}) {
        SCOPED_TRACE(std::string(dt) + " S " + std::to_string(S) + " from key " +
                     std::to_string(first) + " on " + std::string(device::target(kind).name));
        auto g = ir::parse(masked(S, first, dt));
        attach_random_payloads(*g, 5);
        const RunResult r = compile_and_run(*g, kind);
        const double tol = std::string(dt) == "f32" ? 1e-5 : 3e-2;
        EXPECT_LE(r.max_abs_error, tol * r.max_abs_reference);
        // Batch 1 (every key masked) is exactly zero.
        const RefTensor& o = r.device_outputs.at("o");
        const size_t half = o.data.size() / 2;
        for (size_t i = half; i < o.data.size(); ++i) ASSERT_EQ(o.data[i], 0.0) << i;
        for (size_t i = 0; i < half; ++i) ASSERT_TRUE(std::isfinite(o.data[i])) << i;
      }
}

}  // namespace
}  // namespace neuronc::codegen::testing
