// codegen: residual epilogues. A convolution whose only use is add(residual) (optionally followed
// by an activation) runs as one kernel that loads the residual next to the PSUM result. The
// results must be bit-identical to the unfused program (same operations, same roundings), the
// element-wise kernel must disappear with exactly one store and one load of the convolution's
// output, and every case the fusion must not take keeps the separate kernel.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

// With and without the residual epilogue (off = unfused, on = fused): both match the reference
// and each other.
OptionComparison compare(const std::string& text,
                         device::TargetKind kind = device::TargetKind::trn1, double tol = 1e-5) {
  return compare_option(
      text, kind, tol, [](CodegenOptions& opts, bool on) { opts.fuse_residual = on; }, 7, 11);
}

// Weights are f32 parameters; `dt` bf16 converts them at compile time (auto-cast weights).
std::string param(const std::string& name, const std::string& shape, const std::string& dt) {
  std::string s = "  param %" + name + "_f : f32[" + shape + "] \"" + name + "\"\n";
  s += "  %" + name + " : " + dt + "[" + shape + "] = aten._to_copy.default(%" + name + "_f)" +
       " {dtype = #" + dt + "}\n";
  return s;
}

// ResNet basic block (batch norm folded into the conv biases): conv3x3 -> relu -> conv3x3 ->
// add(x) -> relu.
std::string basic_block(const std::string& dt, int64_t C = 64, int64_t H = 16) {
  const std::string S =
      "1, " + std::to_string(C) + ", " + std::to_string(H) + ", " + std::to_string(H);
  const std::string Cs = std::to_string(C);
  std::string t = "graph {\n  input %x : " + dt + "[" + S + "]\n";
  t += param("w1", Cs + ", " + Cs + ", 3, 3", dt) + param("b1", Cs, dt);
  t += param("w2", Cs + ", " + Cs + ", 3, 3", dt) + param("b2", Cs, dt);
  t += "  %c1 : " + dt + "[" + S + "] = aten.conv2d.default(%x, %w1, %b1) {padding = [1, 1]}\n";
  t += "  %r1 : " + dt + "[" + S + "] = aten.relu.default(%c1)\n";
  t += "  %c2 : " + dt + "[" + S + "] = aten.conv2d.default(%r1, %w2, %b2) {padding = [1, 1]}\n";
  t += "  %s : " + dt + "[" + S + "] = aten.add.Tensor(%c2, %x)\n";
  t += "  %y : " + dt + "[" + S + "] = aten.relu.default(%s)\n";
  t += "  output %y\n}";
  return t;
}

// ResNet bottleneck with a strided downsample: 1x1 (64 -> 32) -> relu -> 3x3 stride 2 -> relu
// -> 1x1 (32 -> 128), identity = 1x1 stride 2 (64 -> 128); add -> relu. Both add operands are
// convolutions: the later one absorbs the add, the other is its residual.
std::string bottleneck(const std::string& dt) {
  const std::string X = "2, 64, 16, 16", M = "2, 32, 16, 16", M2 = "2, 32, 8, 8",
                    O = "2, 128, 8, 8";
  std::string t = "graph {\n  input %x : " + dt + "[" + X + "]\n";
  t += param("w1", "32, 64, 1, 1", dt) + param("b1", "32", dt);
  t += param("w2", "32, 32, 3, 3", dt) + param("b2", "32", dt);
  t += param("w3", "128, 32, 1, 1", dt) + param("b3", "128", dt);
  t += param("wd", "128, 64, 1, 1", dt) + param("bd", "128", dt);
  t += "  %c1 : " + dt + "[" + M + "] = aten.conv2d.default(%x, %w1, %b1)\n";
  t += "  %r1 : " + dt + "[" + M + "] = aten.relu.default(%c1)\n";
  t += "  %c2 : " + dt + "[" + M2 +
       "] = aten.conv2d.default(%r1, %w2, %b2) {stride = [2, 2], padding = [1, 1]}\n";
  t += "  %r2 : " + dt + "[" + M2 + "] = aten.relu.default(%c2)\n";
  t += "  %ds : " + dt + "[" + O + "] = aten.conv2d.default(%x, %wd, %bd) {stride = [2, 2]}\n";
  t += "  %c3 : " + dt + "[" + O + "] = aten.conv2d.default(%r2, %w3, %b3)\n";
  t += "  %s : " + dt + "[" + O + "] = aten.add.Tensor(%c3, %ds)\n";
  t += "  %y : " + dt + "[" + O + "] = aten.relu.default(%s)\n";
  t += "  output %y\n}";
  return t;
}

constexpr device::TargetKind kTargets[] = {device::TargetKind::trn1, device::TargetKind::trn2,
                                           device::TargetKind::trn3};

TEST(CodegenResidualFusion, BasicBlock) {
  for (const char* dt : {"f32", "bf16"}) {
    const bool bf16 = std::string(dt) == "bf16";
    const uint64_t out_bytes = 64 * 16 * 16 * (bf16 ? 2 : 4);
    for (device::TargetKind kind : kTargets) {
      OptionComparison c = compare(basic_block(dt), kind, bf16 ? 3e-2 : 1e-5);
      // The add + relu kernel is gone, and with it one store and one load of the conv output.
      EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
      EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, 2 * out_bytes);
      EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
      EXPECT_LT(c.on.part.stats.hbm_bytes, c.off.part.stats.hbm_bytes);
      print_comparison(bf16 ? "basic block bf16" : "basic block f32", kind, c);
    }
  }
}

TEST(CodegenResidualFusion, BottleneckWithDownsample) {
  for (const char* dt : {"f32", "bf16"}) {
    const bool bf16 = std::string(dt) == "bf16";
    const uint64_t out_bytes = 2 * 128 * 8 * 8 * (bf16 ? 2 : 4);
    for (device::TargetKind kind : kTargets) {
      OptionComparison c = compare(bottleneck(dt), kind, bf16 ? 3e-2 : 1e-5);
      EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
      EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, 2 * out_bytes);
      // In bf16 the saved round trip is 64 KiB, about 0.1 us at this size, while the fused
      // kernel's residual tiles are 128 B rows: the two are within 1 % (trn2, trn3).
      EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns * (bf16 ? 1.01 : 1.0));
      print_comparison(bf16 ? "bottleneck bf16" : "bottleneck f32", kind, c);
    }
  }
}

TEST(CodegenResidualFusion, AutoCastChainKeepsTheFp32Sum) {
  // What --auto-cast matmul makes of a block: the conv runs in bf16 and is cast back to f32
  // before the f32 add. The cast is part of the epilogue (as without the add: the evacuation
  // writes the f32 value), the sum and the relu stay f32.
  const std::string S = "1, 32, 12, 12";
  std::string t = "graph {\n  input %x : f32[" + S + "]\n";
  t += param("w", "32, 32, 3, 3", "bf16") + param("b", "32", "bf16");
  t += "  %xb : bf16[" + S + "] = aten._to_copy.default(%x) {dtype = #bf16}\n";
  t += "  %cb : bf16[" + S + "] = aten.conv2d.default(%xb, %w, %b) {padding = [1, 1]}\n";
  t += "  %c : f32[" + S + "] = aten._to_copy.default(%cb) {dtype = #f32}\n";
  t += "  %s : f32[" + S + "] = aten.add.Tensor(%x, %c)\n";
  t += "  %y : f32[" + S + "] = aten.relu.default(%s)\n";
  t += "  output %y\n}";
  for (device::TargetKind kind : kTargets) {
    OptionComparison c = compare(t, kind, 3e-2);
    EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
    EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, uint64_t{2 * 32 * 144 * 4});
    EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
  }
}

TEST(CodegenResidualFusion, OtherActivationsAndNoActivation) {
  // silu after the add needs the fp32 sum (bf16 here, so rounding it first would differ); a
  // plain add stores the sum; a 1-D convolution and a depthwise one take the same epilogue.
  for (const char* act : {"silu", "gelu", ""}) {
    const std::string S = "2, 16, 9, 11";
    std::string t = "graph {\n  input %x : bf16[" + S + "]\n  input %r : bf16[" + S + "]\n";
    t += param("w", "16, 16, 3, 3", "bf16") + param("b", "16", "bf16");
    t += "  %c : bf16[" + S + "] = aten.conv2d.default(%x, %w, %b) {padding = [1, 1]}\n";
    t += "  %s : bf16[" + S + "] = aten.add.Tensor(%r, %c)\n";
    if (*act) t += "  %y : bf16[" + S + "] = aten." + act + ".default(%s)\n";
    t += std::string("  output %") + (*act ? "y" : "s") + "\n}";
    OptionComparison c = compare(t, device::TargetKind::trn2, 3e-2);
    EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels) << act;
  }
  OptionComparison c1 = compare(R"(graph {
  input %x : f32[2, 24, 40]
  param %w : f32[24, 24, 5] "w"
  %c : f32[2, 24, 40] = aten.conv1d.default(%x, %w) {padding = [2]}
  %s : f32[2, 24, 40] = aten.add.Tensor(%c, %x)
  %y : f32[2, 24, 40] = aten.relu.default(%s)
  output %y
})");
  EXPECT_EQ(c1.on.part.stats.kernels + 1, c1.off.part.stats.kernels);
  OptionComparison dw = compare(R"(graph {
  input %x : f32[1, 160, 10, 10]
  param %w : f32[160, 1, 3, 3] "w"
  param %b : f32[160] "b"
  %c : f32[1, 160, 10, 10] = aten.conv2d.default(%x, %w, %b) {padding = [1, 1], groups = 160}
  %s : f32[1, 160, 10, 10] = aten.add.Tensor(%c, %x)
  output %s
})");
  EXPECT_EQ(dw.on.part.stats.kernels + 1, dw.off.part.stats.kernels);
}

TEST(CodegenResidualFusion, UnsafeCasesKeepTheAddKernel) {
  const std::string S = "1, 8, 6, 6";
  const std::string head = "graph {\n  input %x : f32[" + S +
                           "]\n  param %w : f32[8, 8, 3, 3] \"w\"\n  %c : f32[" + S +
                           "] = aten.conv2d.default(%x, %w) {padding = [1, 1]}\n";
  const char* bodies[] = {
      // alpha 2
      "  %s : f32[1, 8, 6, 6] = aten.add.Tensor(%c, %x) {alpha = 2}\n  output %s\n}",
      // the conv output is read again
      "  %s : f32[1, 8, 6, 6] = aten.add.Tensor(%c, %x)\n  %t : f32[1, 8, 6, 6] = "
      "aten.mul.Tensor(%s, %c)\n  output %t\n}",
      // the conv output is a partition output
      "  %s : f32[1, 8, 6, 6] = aten.add.Tensor(%c, %x)\n  output %s\n  output %c\n}",
      // a broadcast residual
      "  input %r : f32[1, 8, 1, 1]\n  %s : f32[1, 8, 6, 6] = aten.add.Tensor(%c, %r)\n  output "
      "%s\n}",
      // conv + conv output (the residual is the conv itself)
      "  %s : f32[1, 8, 6, 6] = aten.add.Tensor(%c, %c)\n  output %s\n}",
  };
  for (const char* body : bodies) {
    OptionComparison c = compare(head + body);
    EXPECT_EQ(c.on.part.stats.kernels, c.off.part.stats.kernels) << body;
    EXPECT_EQ(c.on_dma.bytes, c.off_dma.bytes) << body;
  }
}

TEST(CodegenResidualFusion, ResidualDefinedAfterTheConvolution) {
  // The residual branch comes after the main convolution in node order: the fused kernel runs
  // at the add, after the branch; the main convolution (first in order) absorbs the add.
  OptionComparison c = compare(R"(graph {
  input %x : f32[1, 32, 8, 8]
  param %w : f32[48, 32, 3, 3] "w"
  param %wd : f32[48, 32, 1, 1] "wd"
  %c : f32[1, 48, 8, 8] = aten.conv2d.default(%x, %w) {padding = [1, 1]}
  %d : f32[1, 48, 8, 8] = aten.conv2d.default(%x, %wd)
  %e : f32[1, 48, 8, 8] = aten.tanh.default(%d)
  %s : f32[1, 48, 8, 8] = aten.add.Tensor(%c, %e)
  %y : f32[1, 48, 8, 8] = aten.relu.default(%s)
  output %y
})",
                               device::TargetKind::trn3);
  EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
  EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, uint64_t{2 * 48 * 64 * 4});
}

TEST(CodegenResidualFusion, ChainedBlocksAndCatInPlace) {
  // Two basic blocks in a row (the first block's fused result is the second's residual), then
  // the result is concatenated: the fused kernel writes into its slice of the cat.
  OptionComparison c = compare(R"(graph {
  input %x : f32[1, 16, 8, 8]
  param %w1 : f32[16, 16, 3, 3] "w1"
  param %w2 : f32[16, 16, 3, 3] "w2"
  param %w3 : f32[8, 16, 1, 1] "w3"
  %c1 : f32[1, 16, 8, 8] = aten.conv2d.default(%x, %w1) {padding = [1, 1]}
  %s1 : f32[1, 16, 8, 8] = aten.add.Tensor(%c1, %x)
  %y1 : f32[1, 16, 8, 8] = aten.relu.default(%s1)
  %c2 : f32[1, 16, 8, 8] = aten.conv2d.default(%y1, %w2) {padding = [1, 1]}
  %s2 : f32[1, 16, 8, 8] = aten.add.Tensor(%y1, %c2)
  %y2 : f32[1, 16, 8, 8] = aten.relu.default(%s2)
  %p : f32[1, 8, 8, 8] = aten.conv2d.default(%y2, %w3)
  %cat : f32[1, 24, 8, 8] = aten.cat.default(%y2, %p) {dim = 1}
  output %cat
})");
  EXPECT_EQ(c.on.part.stats.kernels + 2, c.off.part.stats.kernels);
  EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, uint64_t{2 * 2 * 16 * 64 * 4});
}

}  // namespace
}  // namespace neuronc::codegen::testing
