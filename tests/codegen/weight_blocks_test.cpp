// codegen: column-blocked weights. A linear weight too wide for whole rows in SBUF is stored in
// the column blocks the matmul streams it in, so each block loads as one contiguous run instead
// of one short row per partition. Results match the reference (the K chunks may accumulate in
// another order: the kernel interleaves K rows once a block's rows are back to back), and the
// weight's DMAs move longer runs in less simulated time.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

RunResult run(const std::string& text, bool blocked, device::TargetKind kind) {
  auto g = ir::parse(text);
  attach_random_payloads(*g, 3);
  CodegenOptions opts;
  opts.block_weights = blocked;
  RunResult r = compile_and_run(*g, kind, opts, 4);
  EXPECT_LE(r.max_abs_error, 1e-4 * std::max(1.0, r.max_abs_reference))
      << (blocked ? "blocked" : "strided");
  return r;
}

int64_t weight_block(const RunResult& r) {
  for (const ConstantBinding& c : r.part.constants)
    if (c.name == "w") return c.column_block;
  return -1;
}

// Decode (one token) and prefill (40 tokens) through [4096, 1024] and [3000, 1024] weights: the
// first streams in blocks of 1024 columns, the second (3000 = 2 x 1024 + 952) ends in a narrower
// block. On trn1, whose DMA model rates short rows at 7.5 B/ns against 17 for long runs, the
// blocked layout halves the time; trn2's model is flat, so its weights stay plain.
TEST(CodegenWeightBlocks, WideWeightsStreamInContiguousBlocks) {
  for (const char* m : {"1", "40"}) {
    for (const char* n : {"4096", "3000"}) {
      const std::string text = std::string(R"(graph {
  input %x : f32[)") + m + R"(, 1024]
  param %w : f32[)" + n + R"(, 1024] "fc.weight"
  param %b : f32[)" + n + R"(] "fc.bias"
  %y : f32[)" + m + ", " + n +
                               R"(] = aten.linear.default(%x, %w, %b)
  output %y
})";
      for (device::TargetKind kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
        const RunResult strided = run(text, false, kind);
        const RunResult blocked = run(text, true, kind);
        EXPECT_EQ(weight_block(strided), 0);
        // Only where the DMA model rates short rows below long runs (trn1; trn2 is flat).
        if (kind == device::TargetKind::trn2) {
          EXPECT_EQ(weight_block(blocked), 0);
          continue;
        }
        EXPECT_GT(weight_block(blocked), 0) << m << " x " << n;
        std::printf("M %s N %s %s: strided %.1f us (%llu DMAs), blocked %.1f us (%llu DMAs)\n", m,
                    n, std::string(device::target(kind).name).c_str(),
                    strided.report.total_time_ns / 1e3,
                    (unsigned long long)dma_totals(strided.part.program).transfers,
                    blocked.report.total_time_ns / 1e3,
                    (unsigned long long)dma_totals(blocked.part.program).transfers);
        EXPECT_LT(blocked.report.total_time_ns, strided.report.total_time_ns) << m << " x " << n;
        EXPECT_LE(dma_totals(blocked.part.program).transfers,
                  dma_totals(strided.part.program).transfers);
      }
    }
  }
}

// A weight that fits SBUF whole keeps its plain transposed layout; so does one with another
// use than a linear's weight.
TEST(CodegenWeightBlocks, WeightsThatLoadWholeOrHaveOtherUsesStayPlain) {
  const RunResult small = run(R"(graph {
  input %x : f32[8, 256]
  param %w : f32[512, 256] "fc.weight"
  %y : f32[8, 512] = aten.linear.default(%x, %w)
  output %y
})",
                              true, device::TargetKind::trn1);
  EXPECT_EQ(weight_block(small), 0);
  const RunResult shared = run(R"(graph {
  input %x : f32[8, 1024]
  param %w : f32[4096, 1024] "fc.weight"
  %y : f32[8, 4096] = aten.linear.default(%x, %w)
  %wt : f32[1024, 4096] = aten.t.default(%w)
  %z : f32[8, 4096] = aten.mm.default(%x, %wt)
  %s : f32[8, 4096] = aten.add.Tensor(%y, %z)
  output %s
})",
                               true, device::TargetKind::trn1);
  EXPECT_EQ(weight_block(shared), 0);
}

}  // namespace
}  // namespace neuronc::codegen::testing
