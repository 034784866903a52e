// codegen: squeeze-and-excitation rescale fused into the next convolution's input load. x * s
// (s one value per (batch, channel)) read only by a convolution is applied to each input band
// in SBUF; the results must be bit-identical to the unfused program, the mul kernel and its
// HBM round trip must disappear, and the cases that would change roundings keep the kernel.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

struct Comparison {
  RunResult off, on;
  uint64_t off_bytes = 0, on_bytes = 0;  // bytes written by DMAs
};

// With `enable` false and true: both match the reference and each other.
Comparison compare(const std::string& text, device::TargetKind kind, double tol,
                   const std::function<void(CodegenOptions&, bool)>& enable) {
  OptionComparison o = compare_option(text, kind, tol, enable, 3, 13);
  return {std::move(o.off), std::move(o.on), o.off_dma.bytes, o.on_dma.bytes};
}

void scale_only(CodegenOptions& o, bool on) {
  o.fuse_channel_scale = on;
}
void both(CodegenOptions& o, bool on) {
  o.fuse_channel_scale = on;
  o.fuse_residual = on;
}

std::string param(const std::string& name, const std::string& shape, const std::string& dt) {
  std::string s = "  param %" + name + "_f : f32[" + shape + "] \"" + name + "\"\n";
  s += "  %" + name + " : " + dt + "[" + shape + "] = aten._to_copy.default(%" + name + "_f)" +
       " {dtype = #" + dt + "}\n";
  return s;
}

// An MBConv tail: depthwise 3x3 + relu, squeeze-and-excitation (avg pool, 1x1 reduce + relu,
// 1x1 expand + `gate`), x * s, 1x1 projection, add(input).
std::string se_block(const std::string& dt, const std::string& gate) {
  const std::string X = "2, 64, 14, 14", P = "2, 64, 1, 1", Z = "2, 16, 1, 1";
  std::string t = "graph {\n  input %in : " + dt + "[" + X + "]\n";
  t += param("wd", "64, 1, 3, 3", dt) + param("bd", "64", dt);
  t += param("w1", "16, 64, 1, 1", dt) + param("b1", "16", dt);
  t += param("w2", "64, 16, 1, 1", dt) + param("b2", "64", dt);
  t += param("wp", "64, 64, 1, 1", dt) + param("bp", "64", dt);
  t += "  %d : " + dt + "[" + X +
       "] = aten.conv2d.default(%in, %wd, %bd) {padding = [1, 1], groups = 64}\n";
  t += "  %x : " + dt + "[" + X + "] = aten.relu.default(%d)\n";
  t += "  %p : " + dt + "[" + P +
       "] = aten.adaptive_avg_pool2d.default(%x) {output_size = [1, 1]}\n";
  t += "  %z : " + dt + "[" + Z + "] = aten.conv2d.default(%p, %w1, %b1)\n";
  t += "  %zr : " + dt + "[" + Z + "] = aten.relu.default(%z)\n";
  t += "  %e : " + dt + "[" + P + "] = aten.conv2d.default(%zr, %w2, %b2)\n";
  t += "  %s : " + dt + "[" + P + "] = aten." + gate + ".default(%e)\n";
  t += "  %m : " + dt + "[" + X + "] = aten.mul.Tensor(%x, %s)\n";
  t += "  %y : " + dt + "[" + X + "] = aten.conv2d.default(%m, %wp, %bp)\n";
  t += "  %o : " + dt + "[" + X + "] = aten.add.Tensor(%y, %in)\n";
  t += "  output %o\n}";
  return t;
}

constexpr device::TargetKind kTargets[] = {device::TargetKind::trn1, device::TargetKind::trn2,
                                           device::TargetKind::trn3};

TEST(CodegenChannelScaleFusion, SqueezeExcitationBlock) {
  for (const char* gate : {"sigmoid", "hardsigmoid"})
    for (const char* dt : {"f32", "bf16"}) {
      const bool bf16 = std::string(dt) == "bf16";
      const uint64_t x_bytes = 2 * 64 * 14 * 14 * (bf16 ? 2 : 4);
      for (device::TargetKind kind : kTargets) {
        const std::string text = se_block(dt, gate);
        Comparison c = compare(text, kind, bf16 ? 3e-2 : 1e-5, scale_only);
        // The mul kernel is gone, and with it one load of x and one store of x * s (its load of
        // s moves into the convolution).
        EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
        EXPECT_EQ(c.off_bytes - c.on_bytes, 2 * x_bytes);
        EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
        // Both fusions against neither (the residual add also folds into the projection).
        Comparison b = compare(text, kind, bf16 ? 3e-2 : 1e-5, both);
        EXPECT_EQ(b.on.part.stats.kernels + 2, b.off.part.stats.kernels);
        EXPECT_EQ(b.off_bytes - b.on_bytes, 4 * x_bytes);
        std::printf(
            "SE block %s %s (%s): scale: kernels %llu -> %llu, DMA bytes %llu -> %llu, "
            "%.2f -> %.2f us; scale + residual: kernels %llu -> %llu, DMA bytes %llu -> "
            "%llu, %.2f -> %.2f us\n",
            gate, dt, std::string(device::target(kind).name).c_str(),
            (unsigned long long)c.off.part.stats.kernels,
            (unsigned long long)c.on.part.stats.kernels, (unsigned long long)c.off_bytes,
            (unsigned long long)c.on_bytes, c.off.report.total_time_ns / 1000,
            c.on.report.total_time_ns / 1000, (unsigned long long)b.off.part.stats.kernels,
            (unsigned long long)b.on.part.stats.kernels, (unsigned long long)b.off_bytes,
            (unsigned long long)b.on_bytes, b.off.report.total_time_ns / 1000,
            b.on.report.total_time_ns / 1000);
      }
    }
}

TEST(CodegenChannelScaleFusion, PaddedStridedAndChunkedConvolutions) {
  // 3x3 stride 2 with padding over 160 channels (two partition chunks), the scale batch 1 for
  // both images: only the loaded region is scaled, the zero padding stays zero.
  Comparison c = compare(R"(graph {
  input %x : f32[2, 160, 9, 9]
  input %s : f32[1, 160, 1, 1]
  param %w : f32[24, 160, 3, 3] "w"
  %m : f32[2, 160, 9, 9] = aten.mul.Tensor(%s, %x)
  %y : f32[2, 24, 5, 5] = aten.conv2d.default(%m, %w) {stride = [2, 2], padding = [1, 1]}
  output %y
})",
                         device::TargetKind::trn2, 1e-5, scale_only);
  EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels);
  // Depthwise consumer.
  Comparison d = compare(R"(graph {
  input %x : bf16[1, 96, 8, 8]
  input %s : bf16[1, 96, 1, 1]
  param %w : f32[96, 1, 3, 3] "w"
  %wb : bf16[96, 1, 3, 3] = aten._to_copy.default(%w) {dtype = #bf16}
  %m : bf16[1, 96, 8, 8] = aten.mul.Tensor(%x, %s)
  %y : bf16[1, 96, 8, 8] = aten.conv2d.default(%m, %wb) {padding = [1, 1], groups = 96}
  output %y
})",
                         device::TargetKind::trn3, 3e-2, scale_only);
  EXPECT_EQ(d.on.part.stats.kernels + 1, d.off.part.stats.kernels);
}

TEST(CodegenChannelScaleFusion, UnsafeCasesKeepTheMulKernel) {
  const char* cases[] = {
      // not per channel
      R"(graph {
  input %x : f32[1, 8, 6, 6]
  input %s : f32[1, 1, 6, 6]
  param %w : f32[8, 8, 1, 1] "w"
  %m : f32[1, 8, 6, 6] = aten.mul.Tensor(%x, %s)
  %y : f32[1, 8, 6, 6] = aten.conv2d.default(%m, %w)
  output %y
})",
      // the product is read again
      R"(graph {
  input %x : f32[1, 8, 6, 6]
  input %s : f32[1, 8, 1, 1]
  param %w : f32[8, 8, 1, 1] "w"
  %m : f32[1, 8, 6, 6] = aten.mul.Tensor(%x, %s)
  %y : f32[1, 8, 6, 6] = aten.conv2d.default(%m, %w)
  %o : f32[1, 8, 6, 6] = aten.add.Tensor(%y, %m)
  output %o
})",
      // a row-packed first layer (3 channels x 3 rows on the partitions)
      R"(graph {
  input %x : f32[1, 3, 10, 10]
  input %s : f32[1, 3, 1, 1]
  param %w : f32[8, 3, 3, 3] "w"
  %m : f32[1, 3, 10, 10] = aten.mul.Tensor(%x, %s)
  %y : f32[1, 8, 8, 8] = aten.conv2d.default(%m, %w)
  output %y
})",
      // bf16 product into a convolution whose weight (an input, not a constant) is read through
      // its cast from f32: the SBUF operand is f32, the product bf16
      R"(graph {
  input %x : bf16[1, 8, 6, 6]
  input %s : bf16[1, 8, 1, 1]
  input %w : f32[8, 8, 1, 1]
  %wb : bf16[8, 8, 1, 1] = aten._to_copy.default(%w) {dtype = #bf16}
  %m : bf16[1, 8, 6, 6] = aten.mul.Tensor(%x, %s)
  %y : bf16[1, 8, 6, 6] = aten.conv2d.default(%m, %wb)
  output %y
})",
  };
  for (const char* text : cases) {
    Comparison c = compare(text, device::TargetKind::trn1, 1e-2, scale_only);
    EXPECT_EQ(c.on.part.stats.kernels, c.off.part.stats.kernels) << text;
    EXPECT_EQ(c.on_bytes, c.off_bytes) << text;
  }
}

}  // namespace
}  // namespace neuronc::codegen::testing
