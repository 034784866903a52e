// codegen: float casts feeding an attention's query, key and value (what `--auto-cast matmul`
// puts between a transformer's projections and its attention) are read through by the
// attention's load DMAs, which convert while loading. The cast kernels and their HBM round trip
// disappear; the results must stay bit-identical to the unfused program.
#include <gtest/gtest.h>

#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

// [1, S, H, D] f32 projections, seen as [1, H, S, D] (a transposed view, as BERT and GPT
// attention reshape them), cast to bf16, attention, result [1, H, S, D] bf16.
std::string block(bool mask, bool causal) {
  std::string t = R"(graph {
  input %qp : f32[1, 96, 4, 32]
  input %kp : f32[1, 96, 4, 32]
  input %vp : f32[1, 96, 4, 32]
)";
  if (mask) t += "  input %m : f32[1, 1, 96, 96]\n";
  t += R"(  %qt : f32[1, 4, 96, 32] = aten.transpose.int(%qp) {dim0 = 1, dim1 = 2}
  %kt : f32[1, 4, 96, 32] = aten.transpose.int(%kp) {dim0 = 1, dim1 = 2}
  %vt : f32[1, 4, 96, 32] = aten.transpose.int(%vp) {dim0 = 1, dim1 = 2}
  %q : bf16[1, 4, 96, 32] = aten._to_copy.default(%qt) {dtype = #bf16}
  %k : bf16[1, 4, 96, 32] = aten._to_copy.default(%kt) {dtype = #bf16}
  %v : bf16[1, 4, 96, 32] = aten._to_copy.default(%vt) {dtype = #bf16}
)";
  t += std::string(
           "  %o : bf16[1, 4, 96, 32] = aten.scaled_dot_product_attention.default(%q, %k, "
           "%v") +
       (mask ? ", %m" : "") + ")" + (causal ? " {is_causal = true}" : "") + "\n";
  t += "  output %o\n}";
  return t;
}

TEST(CodegenAttentionCast, CastsAreReadThroughBitIdentically) {
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3})
    for (bool mask : {false, true})
      for (bool causal : {false, true}) {
        if (mask && causal) continue;
        const OptionComparison c = compare_option(
            block(mask, causal), kind, 2e-2, [](CodegenOptions& o, bool on) { o.fuse = on; }, 3, 7);
        const std::string what = std::string(mask ? "mask" : causal ? "causal" : "plain");
        print_comparison("attention with cast Q/K/V, " + what, kind, c);
        // The three cast kernels are gone, and with them one bf16 store and one load of each.
        EXPECT_EQ(c.on.part.stats.kernels + 3, c.off.part.stats.kernels) << what;
        EXPECT_LT(c.on_dma.bytes, c.off_dma.bytes) << what;
        EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns) << what;
      }
}

// The attention's own output cast back to f32 is done by its store DMA (the output tile keeps
// the attention's bf16 rounding), so the whole block is one kernel.
TEST(CodegenAttentionCast, OutputCastIsDoneByTheStore) {
  std::string text = block(false, false);
  text.replace(text.find("  output %o"), std::string("  output %o").size(),
               "  %of : f32[1, 4, 96, 32] = aten._to_copy.default(%o) {dtype = #f32}\n"
               "  output %of");
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    const OptionComparison c = compare_option(
        text, kind, 2e-2, [](CodegenOptions& o, bool on) { o.fuse = on; }, 3, 7);
    EXPECT_EQ(c.on.part.stats.kernels + 4, c.off.part.stats.kernels);
    EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
  }
}

// One cast read by several matmuls (a layer norm's bf16 copy feeding Q, K and V): every matmul's
// load converts, the cast kernel disappears, results stay bit-identical.
TEST(CodegenAttentionCast, CastReadByThreeMatmulsIsReadThrough) {
  const std::string text = R"(graph {
  input %x : f32[96, 128]
  param %w1f : f32[128, 128] "w1"
  param %w2f : f32[128, 128] "w2"
  param %w3f : f32[128, 128] "w3"
  %w1 : bf16[128, 128] = aten._to_copy.default(%w1f) {dtype = #bf16}
  %w2 : bf16[128, 128] = aten._to_copy.default(%w2f) {dtype = #bf16}
  %w3 : bf16[128, 128] = aten._to_copy.default(%w3f) {dtype = #bf16}
  %xb : bf16[96, 128] = aten._to_copy.default(%x) {dtype = #bf16}
  %q : bf16[96, 128] = aten.linear.default(%xb, %w1)
  %k : bf16[96, 128] = aten.linear.default(%xb, %w2)
  %v : bf16[96, 128] = aten.linear.default(%xb, %w3)
  output %q
  output %k
  output %v
})";
  const OptionComparison c = compare_option(
      text, device::TargetKind::trn1, 2e-2, [](CodegenOptions& o, bool on) { o.fuse = on; }, 3, 7);
  EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
}

// The attention result read through transpose(1, 2) and merged into the hidden dim is laid out
// so the transposed view is contiguous: the reshape is a view, its copy kernel disappears.
TEST(CodegenAttentionCast, HeadMergeIsAView) {
  const std::string text = R"(graph {
  input %q : bf16[1, 4, 96, 32]
  input %k : bf16[1, 4, 96, 32]
  input %v : bf16[1, 4, 96, 32]
  param %wf : f32[64, 128] "w"
  %w : bf16[64, 128] = aten._to_copy.default(%wf) {dtype = #bf16}
  %o : bf16[1, 4, 96, 32] = aten.scaled_dot_product_attention.default(%q, %k, %v)
  %t : bf16[1, 96, 4, 32] = aten.transpose.int(%o) {dim0 = 1, dim1 = 2}
  %r : bf16[1, 96, 128] = aten.reshape.default(%t) {shape = [1, 96, 128]}
  %y : bf16[1, 96, 64] = aten.linear.default(%r, %w)
  output %y
})";
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    const OptionComparison c = compare_option(
        text, kind, 2e-2, [](CodegenOptions& o, bool on) { o.fuse = on; }, 3, 7);
    EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
    EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
  }
}

// A cast whose result is also read elsewhere keeps its kernel (the value must exist in HBM).
TEST(CodegenAttentionCast, CastReadTwiceKeepsItsKernel) {
  const std::string text = R"(graph {
  input %qp : f32[1, 2, 64, 32]
  input %kp : f32[1, 2, 64, 32]
  input %vp : f32[1, 2, 64, 32]
  %q : bf16[1, 2, 64, 32] = aten._to_copy.default(%qp) {dtype = #bf16}
  %k : bf16[1, 2, 64, 32] = aten._to_copy.default(%kp) {dtype = #bf16}
  %v : bf16[1, 2, 64, 32] = aten._to_copy.default(%vp) {dtype = #bf16}
  %o : bf16[1, 2, 64, 32] = aten.scaled_dot_product_attention.default(%q, %k, %v)
  %s : bf16[1, 2, 64, 32] = aten.add.Tensor(%o, %q)
  output %s
})";
  const OptionComparison c = compare_option(
      text, device::TargetKind::trn1, 2e-2, [](CodegenOptions& o, bool on) { o.fuse = on; }, 3, 7);
  // k and v are read through; q keeps its kernel for the add.
  EXPECT_EQ(c.on.part.stats.kernels + 2, c.off.part.stats.kernels);
}

}  // namespace
}  // namespace neuronc::codegen::testing
