// codegen: aten.topk on the device (codegen/topk_kernel.cpp), in both layouts, against the host
// kernel (the reference): the same values and the same indices, ties broken by the lower index
// (bf16 rows have many), -inf ranked below every number, rows whose length is no multiple of
// the partitions. And the cases the device leaves to the host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "codegen/support.h"
#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

// Runs `body` (which defines %v and %i) and expects both results exactly as the host kernel
// gives them.
RunResult exact(const std::string& inputs, const std::string& body,
                device::TargetKind kind = device::TargetKind::trn1) {
  auto g = ir::parse("graph {\n" + inputs + body + "  output %v\n  output %i\n}");
  RunResult r = compile_and_run(*g, kind, {}, 3);
  for (const char* name : {"v", "i"}) {
    const RefTensor& want = r.reference.at(name);
    const RefTensor& got = r.device_outputs.at(name);
    EXPECT_EQ(got.shape, want.shape) << name;
    size_t wrong = 0, first = 0;
    for (size_t e = 0; e < want.data.size(); ++e)
      if (got.data[e] != want.data[e] && wrong++ == 0) first = e;
    EXPECT_EQ(wrong, 0u) << name << ": first at " << first << ": got " << got.data[first]
                         << ", want " << want.data[first];
  }
  return r;
}

int transposes(const device::Program& p) {
  int n = 0;
  for (const auto& in : p.cores[0].stream(device::Engine::tensor))
    n += std::holds_alternative<device::Transpose>(in.op);
  return n;
}

// Rows on the partitions: 15 rows of 40, k 7, over a view whose rows are not contiguous.
TEST(CodegenTopK, RowsOnPartitions) {
  const RunResult r = exact("  input %x : f32[3, 5, 80]\n",
                            "  %s : f32[3, 5, 40] = aten.slice.Tensor(%x) {dim = 2, start = 20, "
                            "end = 60, step = 1}\n"
                            "  %v : f32[3, 5, 7], %i : i64[3, 5, 7] = aten.topk.default(%s) "
                            "{k = 7}\n");
  EXPECT_EQ(transposes(r.part.program), 0);
}

// bf16 rows of 1000 hold many equal values: the lower index comes first, as on the host.
TEST(CodegenTopK, Bf16TiesTakeTheLowerIndexFirst) {
  exact("  input %x : bf16[130, 1000]\n",
        "  %v : bf16[130, 10], %i : i64[130, 10] = aten.topk.default(%x) {k = 10}\n");
}

// x where x > 0, else log(0) = -inf (exact, unlike log of anything else): k reaches into the
// -inf half, which comes out as -inf in index order.
TEST(CodegenTopK, MinusInfinityRanksBelowEveryNumber) {
  exact("  input %x : f32[4, 64]\n",
        "  %r : f32[4, 64] = aten.relu.default(%x)\n"
        "  %l : f32[4, 64] = aten.log.default(%r)\n"
        "  %m : bool[4, 64] = aten.gt.Scalar(%x) {other = 0.0}\n"
        "  %y : f32[4, 64] = aten.where.self(%m, %x, %l)\n"
        "  %v : f32[4, 64], %i : i64[4, 64] = aten.topk.default(%y) {k = 64}\n");
}

// A vocabulary row spread over the partitions: 32064 = 127 x 251 + 187 (a partial last
// partition), k 50, two rows; on trn1 (TensorE transpose through the identity) and trn2.
TEST(CodegenTopK, WideRowsOverThePartitions) {
  for (auto kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
    const RunResult r =
        exact("  input %x : f32[2, 32064]\n",
              "  %v : f32[2, 50], %i : i64[2, 50] = aten.topk.default(%x) {k = 50}\n", kind);
    EXPECT_GT(transposes(r.part.program), 0);
  }
}

// Wide bf16 rows with ties and -inf: some 10 to 20 of the 5000 elements (x > 0.999: in bf16 all
// 1.0, ties) stay numbers, so the top 64 reach into the -inf.
TEST(CodegenTopK, WideBf16WithTiesAndMinusInfinity) {
  const RunResult r =
      exact("  input %x : bf16[1, 5000]\n",
            "  %z : bf16[1, 5000] = aten.mul.Scalar(%x) {other = 0.0}\n"
            "  %l : bf16[1, 5000] = aten.log.default(%z)\n"
            "  %m : bool[1, 5000] = aten.gt.Scalar(%x) {other = 0.999}\n"
            "  %y : bf16[1, 5000] = aten.where.self(%m, %x, %l)\n"
            "  %v : bf16[1, 64], %i : i64[1, 64] = aten.topk.default(%y) {k = 64}\n");
  EXPECT_TRUE(std::isinf(r.device_outputs.at("v").data.back()))
      << ::testing::PrintToString(r.device_outputs.at("v").data);
  EXPECT_TRUE(std::isfinite(r.device_outputs.at("v").data.front()));
}

// k = 1, the greedy sampler (export_causal_lm.py --max-top-k 1): one round, no removal; in
// both layouts, with bf16 ties (the first largest, as torch.argmax).
TEST(CodegenTopK, KOneIsTheFirstLargest) {
  exact("  input %x : bf16[3, 100]\n",
        "  %v : bf16[3, 1], %i : i64[3, 1] = aten.topk.default(%x) {k = 1}\n");
  exact("  input %x : bf16[2, 10000]\n",
        "  %v : bf16[2, 1], %i : i64[2, 1] = aten.topk.default(%x) {k = 1}\n");
}

// What the device kernel does not take runs on the host, and support says why.
TEST(CodegenTopK, RefusalsNameTheReason) {
  const device::Target& t = device::target(device::TargetKind::trn1);
  auto reason = [&](const std::string& node) {
    auto g = ir::parse("graph {\n  input %x : f32[8, 100]\n  input %n : i32[8, 100]\n" + node +
                       "  output %v\n}");
    for (const auto& n : g->nodes())
      if (n->op() == "aten.topk.default") return codegen::unsupported_reason(*n, t);
    return std::optional<std::string>("no topk");
  };
  EXPECT_EQ(reason("  %v : f32[8, 64], %i : i64[8, 64] = aten.topk.default(%x) {k = 64}\n"),
            std::nullopt);
  EXPECT_THAT(
      reason("  %v : f32[8, 65], %i : i64[8, 65] = aten.topk.default(%x) {k = 65}\n").value_or(""),
      ::testing::HasSubstr("k = 65"));
  EXPECT_THAT(
      reason("  %v : f32[2, 100], %i : i64[2, 100] = aten.topk.default(%x) {k = 2, dim = 0}\n")
          .value_or(""),
      ::testing::HasSubstr("along dim 0"));
  EXPECT_THAT(reason("  %v : f32[8, 3], %i : i64[8, 3] = aten.topk.default(%x) {k = 3, largest "
                     "= false}\n")
                  .value_or(""),
              ::testing::HasSubstr("largest=False"));
  EXPECT_THAT(
      reason("  %v : i32[8, 3], %i : i64[8, 3] = aten.topk.default(%n) {k = 3}\n").value_or(""),
      ::testing::HasSubstr("runs on the host"));
}

}  // namespace
}  // namespace neuronc::codegen::testing
