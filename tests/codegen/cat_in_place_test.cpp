// codegen: concatenation in place. Kernels whose result is only a cat input write straight into
// their slice of the cat's buffer; the results must not change, the cat's DMAs must disappear,
// and every case where aliasing is not safe must keep the copy.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

struct Comparison {
  RunResult copying, in_place;
  DmaTotals copying_dma, in_place_dma;
};

// With and without concatenation in place: both match the reference and each other.
Comparison compare(const std::string& text, device::TargetKind kind = device::TargetKind::trn1,
                   double tol = 1e-5) {
  OptionComparison o = compare_option(
      text, kind, tol, [](CodegenOptions& opts, bool on) { opts.cat_in_place = on; }, 5, 9);
  return {std::move(o.off), std::move(o.on), o.off_dma, o.on_dma};
}

// An Inception block: three conv + relu branches and a max pool, concatenated on channels.
std::string inception(int64_t batch) {
  const std::string B = std::to_string(batch);
  return R"(graph {
  input %x : f32[)" +
         B + R"(, 32, 16, 16]
  param %w1 : f32[16, 32, 1, 1] "b1.weight"
  param %b1 : f32[16] "b1.bias"
  param %w2 : f32[24, 32, 3, 3] "b2.weight"
  param %b2 : f32[24] "b2.bias"
  param %w3 : f32[8, 32, 5, 5] "b3.weight"
  param %b3 : f32[8] "b3.bias"
  %c1 : f32[)" +
         B + R"(, 16, 16, 16] = aten.conv2d.default(%x, %w1, %b1)
  %r1 : f32[)" +
         B + R"(, 16, 16, 16] = aten.relu.default(%c1)
  %c2 : f32[)" +
         B + R"(, 24, 16, 16] = aten.conv2d.default(%x, %w2, %b2) {padding = [1, 1]}
  %r2 : f32[)" +
         B + R"(, 24, 16, 16] = aten.relu.default(%c2)
  %c3 : f32[)" +
         B + R"(, 8, 16, 16] = aten.conv2d.default(%x, %w3, %b3) {padding = [2, 2]}
  %r3 : f32[)" +
         B + R"(, 8, 16, 16] = aten.relu.default(%c3)
  %mp : f32[)" +
         B +
         R"(, 32, 16, 16] = aten.max_pool2d.default(%x) {kernel_size = [3, 3], stride = [1, 1], padding = [1, 1]}
  %cat : f32[)" +
         B + R"(, 80, 16, 16] = aten.cat.default(%r1, %r2, %r3, %mp) {dim = 1}
  output %cat
})";
}

TEST(CodegenCatInPlace, InceptionBlockMovesNoCatBytes) {
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    Comparison c = compare(inception(1), kind);
    const uint64_t cat_bytes = 1 * 80 * 16 * 16 * 4;
    // The cat kernel is gone and with it exactly one write of every cat byte.
    EXPECT_EQ(c.in_place.part.stats.kernels + 1, c.copying.part.stats.kernels);
    EXPECT_EQ(c.copying_dma.bytes - c.in_place_dma.bytes, cat_bytes);
    EXPECT_LT(c.in_place_dma.transfers, c.copying_dma.transfers);
    EXPECT_LT(c.in_place.part.stats.hbm_bytes, c.copying.part.stats.hbm_bytes);
    std::printf("inception (%s): DMA %llu -> %llu transfers, %llu -> %llu bytes, %.2f -> %.2f us\n",
                std::string(device::target(kind).name).c_str(),
                (unsigned long long)c.copying_dma.transfers,
                (unsigned long long)c.in_place_dma.transfers,
                (unsigned long long)c.copying_dma.bytes, (unsigned long long)c.in_place_dma.bytes,
                c.copying.report.total_time_ns / 1000, c.in_place.report.total_time_ns / 1000);
  }
}

TEST(CodegenCatInPlace, BatchedSlicesAreStrided) {
  // Batch 2: each branch's slice is two runs (one per image); the convolutions store through
  // it. The pool's rows (n, c) would not be one uniform stride in the slice, which its kernel
  // needs, so the cat still copies the pool's 32 channels.
  Comparison c = compare(inception(2));
  EXPECT_EQ(c.copying_dma.bytes - c.in_place_dma.bytes, uint64_t{2 * (16 + 24 + 8) * 256 * 4});
  EXPECT_EQ(c.in_place.part.stats.kernels, c.copying.part.stats.kernels);
}

TEST(CodegenCatInPlace, DenseNetFeatureConcatenation) {
  // Dense block: each layer reads the concatenation of all earlier features and adds 12.
  // x0 and y1 are written into cat1 in place; cat2 copies them from there and gets y2 in place.
  Comparison c = compare(R"(graph {
  input %x : f32[1, 8, 12, 12]
  param %w0 : f32[16, 8, 3, 3] "stem.weight"
  param %w1 : f32[12, 16, 3, 3] "l1.weight"
  param %w2 : f32[12, 28, 3, 3] "l2.weight"
  param %w3 : f32[10, 40, 1, 1] "l3.weight"
  %x0 : f32[1, 16, 12, 12] = aten.conv2d.default(%x, %w0) {padding = [1, 1]}
  %y1c : f32[1, 12, 12, 12] = aten.conv2d.default(%x0, %w1) {padding = [1, 1]}
  %y1 : f32[1, 12, 12, 12] = aten.relu.default(%y1c)
  %cat1 : f32[1, 28, 12, 12] = aten.cat.default(%x0, %y1) {dim = 1}
  %y2c : f32[1, 12, 12, 12] = aten.conv2d.default(%cat1, %w2) {padding = [1, 1]}
  %y2 : f32[1, 12, 12, 12] = aten.relu.default(%y2c)
  %cat2 : f32[1, 40, 12, 12] = aten.cat.default(%x0, %y1, %y2) {dim = 1}
  %out : f32[1, 10, 12, 12] = aten.conv2d.default(%cat2, %w3)
  output %out
})");
  // cat1 vanishes (28 channels), cat2 keeps copying x0 and y1 (28 channels) but not y2 (12).
  EXPECT_EQ(c.in_place.part.stats.kernels + 1, c.copying.part.stats.kernels);
  EXPECT_EQ(c.copying_dma.bytes - c.in_place_dma.bytes, uint64_t{(28 + 12) * 144 * 4});
}

TEST(CodegenCatInPlace, UnsafeCasesKeepTheCopy) {
  // r1 concatenated twice, r2 also returned, x a graph input, w a constant: all copied. r3 is
  // read again after the cat (through its slice) and still written in place.
  Comparison c = compare(R"(graph {
  input %x : f32[2, 4, 6, 6]
  param %w : f32[2, 4, 6, 6] "w"
  %r1 : f32[2, 4, 6, 6] = aten.sigmoid.default(%x)
  %r2 : f32[2, 4, 6, 6] = aten.tanh.default(%x)
  %r3 : f32[2, 4, 6, 6] = aten.exp.default(%x)
  %cat : f32[2, 24, 6, 6] = aten.cat.default(%r1, %r2, %x, %r1, %w, %r3) {dim = 1}
  %after : f32[2, 4, 6, 6] = aten.mul.Tensor(%r3, %r3)
  output %cat
  output %r2
  output %after
})");
  // Only r3 (2 x 4 x 36 elements) stops being copied by the cat.
  EXPECT_EQ(c.copying_dma.bytes - c.in_place_dma.bytes, uint64_t{2 * 4 * 36 * 4});
  EXPECT_EQ(c.in_place.part.stats.kernels, c.copying.part.stats.kernels);
}

TEST(CodegenCatInPlace, AViewOfAnInPlaceInputIsStillCopied) {
  // %d is a view of %e, so it lives in the cat's buffer too — at %e's slot, not its own: the
  // cat must copy it into slot 1 (skipping it would leave slot 1 unwritten).
  Comparison c = compare(R"(graph {
  input %x : f32[3, 10]
  %e : f32[3, 10] = aten.exp.default(%x)
  %d : f32[3, 10] = aten.alias.default(%e)
  %cat : f32[6, 10] = aten.cat.default(%e, %d) {dim = 0}
  output %cat
})");
  EXPECT_EQ(c.copying_dma.bytes - c.in_place_dma.bytes, uint64_t{3 * 10 * 4});
  EXPECT_EQ(c.in_place.part.stats.kernels, c.copying.part.stats.kernels);
}

TEST(CodegenCatInPlace, GroupNormWritesIntoItsSlice) {
  // Batch 2: the group norm's rows no longer merge across images inside the slice.
  Comparison c = compare(R"(graph {
  input %x : f32[2, 32, 6, 6]
  param %w : f32[32] "gn.weight"
  param %b : f32[32] "gn.bias"
  %g : f32[2, 32, 6, 6] = aten.group_norm.default(%x, %w, %b) {num_groups = 4, eps = 1e-05}
  %r : f32[2, 32, 6, 6] = aten.relu.default(%x)
  %cat : f32[2, 64, 6, 6] = aten.cat.default(%g, %r) {dim = 1}
  output %cat
})");
  EXPECT_EQ(c.copying_dma.bytes - c.in_place_dma.bytes, uint64_t{2 * 64 * 36 * 4});
  EXPECT_EQ(c.in_place.part.stats.kernels + 1, c.copying.part.stats.kernels);
}

TEST(CodegenCatInPlace, ConcatenationAlongWidthAndBf16) {
  Comparison c = compare(R"(graph {
  input %x : bf16[2, 3, 5, 7]
  %a : bf16[2, 3, 5, 7] = aten.relu.default(%x)
  %b : bf16[2, 3, 5, 7] = aten.neg.default(%x)
  %cat : bf16[2, 3, 5, 14] = aten.cat.default(%a, %b) {dim = -1}
  output %cat
})",
                         device::TargetKind::trn2, 1e-2);
  EXPECT_EQ(c.copying_dma.bytes - c.in_place_dma.bytes, uint64_t{2 * 3 * 5 * 14 * 2});
}

}  // namespace
}  // namespace neuronc::codegen::testing
