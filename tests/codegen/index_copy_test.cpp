// codegen: index_copy (a KV-cache update) as an indirect scatter on the device. With the update
// in place, the result shares self's buffer and only the written rows move; without it, self is
// copied first. Both must match the host kernel (the reference) and each other bit for bit, and
// every case where sharing is not safe must keep the copy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

using ::testing::HasSubstr;

OptionComparison compare(const std::string& text, double tol = 0.0,
                         device::TargetKind kind = device::TargetKind::trn1) {
  return compare_option(
      text, kind, tol, [](CodegenOptions& o, bool on) { o.update_in_place = on; }, 5, 9);
}

int scatters(const device::Program& p) {
  int n = 0;
  for (const auto& core : p.cores)
    for (const auto& stream : core.streams)
      for (const auto& in : stream)
        if (const auto* d = std::get_if<device::DmaCopy>(&in.op); d && d->scatter) ++n;
  return n;
}

// Decode: one new K row per head written at the position; every head in one scatter.
TEST(CodegenIndexCopy, DecodeRowPerHeadInPlace) {
  const OptionComparison c = compare(R"(graph {
  input %cache : f32[1, 4, 20, 8]
  input %pos : i64[1]
  input %k : f32[1, 4, 1, 8]
  %c : f32[1, 4, 20, 8] = aten.index_copy.default(%cache, %pos, %k) {dim = 2}
  %s : f32[1, 4, 20, 8] = aten.mul.Tensor(%c, %c)
  output %c
  output %s
})");
  EXPECT_EQ(scatters(c.on.part.program), 1);
  EXPECT_EQ(scatters(c.off.part.program), 1);
  // In place: the result is bound where the cache came in, and its 2,560 bytes are not copied.
  ASSERT_EQ(c.on.part.outputs[0].name, "c");
  EXPECT_EQ(c.on.part.outputs[0].offset, c.on.part.inputs[0].offset);
  EXPECT_NE(c.off.part.outputs[0].offset, c.off.part.inputs[0].offset);
  EXPECT_LE(c.on_dma.bytes + 2560, c.off_dma.bytes);
  EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
}

// Prefill: several positions (repeats keep the later row, as the host kernel does), a source
// that is a transposed view (values [B, T, H, D] seen as [B, H, T, D]), a negative dim, bf16.
TEST(CodegenIndexCopy, PrefillRowsFromATransposedViewInBf16) {
  compare(R"(graph {
  input %cache : bf16[2, 3, 12, 16]
  input %pos : i64[5]
  input %v : bf16[2, 5, 3, 16]
  %vt : bf16[2, 3, 5, 16] = aten.transpose.int(%v) {dim0 = 1, dim1 = 2}
  %c : bf16[2, 3, 12, 16] = aten.index_copy.default(%cache, %pos, %vt) {dim = -2}
  output %c
})");
}

// Rows longer than a quarter of an SBUF partition move in chunks; dim 0; an intermediate self
// (a scratch buffer) updated in place.
TEST(CodegenIndexCopy, LongRowsAlongDimZeroOfAnIntermediate) {
  const OptionComparison c = compare(R"(graph {
  input %x : f32[10, 13000]
  input %pos : i64[3]
  input %src : f32[3, 13000]
  %y : f32[10, 13000] = aten.add.Tensor(%x, %x)
  %c : f32[10, 13000] = aten.index_copy.default(%y, %pos, %src) {dim = 0}
  output %c
})");
  EXPECT_EQ(scatters(c.on.part.program), 2);  // 13,000 f32 = 2 chunks of <= 12,288
}

// Self read again after the update, or itself an output: the copy stays.
TEST(CodegenIndexCopy, SelfReadElsewhereKeepsTheCopy) {
  const OptionComparison c = compare(R"(graph {
  input %cache : f32[1, 2, 10, 4]
  input %pos : i64[2]
  input %k : f32[1, 2, 2, 4]
  %c : f32[1, 2, 10, 4] = aten.index_copy.default(%cache, %pos, %k) {dim = 2}
  %z : f32[1, 2, 10, 4] = aten.sub.Tensor(%c, %cache)
  output %z
})");
  EXPECT_EQ(c.on_dma.bytes, c.off_dma.bytes);
  const OptionComparison o = compare(R"(graph {
  input %x : f32[12, 4]
  input %pos : i64[1]
  input %r : f32[1, 4]
  %y : f32[12, 4] = aten.add.Tensor(%x, %x)
  %c : f32[12, 4] = aten.index_copy.default(%y, %pos, %r) {dim = 0}
  output %y
  output %c
})");
  EXPECT_EQ(o.on_dma.bytes, o.off_dma.bytes);
}

// An index outside the rows stops the run naming it, instead of writing elsewhere.
TEST(CodegenIndexCopy, IndexOutsideTheRowsStopsTheRun) {
  auto g = ir::parse(R"(graph {
  input %cache : f32[1, 2, 3, 4]
  input %pos : i64[2]
  input %k : f32[1, 2, 2, 4]
  %c : f32[1, 2, 3, 4] = aten.index_copy.default(%cache, %pos, %k) {dim = 2}
  output %c
})");
  const device::Target& t = device::target(device::TargetKind::trn1);
  const CompiledPartition part = compile_whole(*g, t);
  std::vector<std::byte> hbm(part.program.hbm_size);
  ASSERT_EQ(part.inputs[1].name, "pos");
  for (int bad : {3, -1}) {
    device::store_int(hbm.data() + part.inputs[1].offset, device::DType::i32, 1);
    device::store_int(hbm.data() + part.inputs[1].offset + 4, device::DType::i32, bad);
    device::Simulator sim(t);
    auto r = sim.run(part.program, hbm);
    ASSERT_FALSE(r.is_ok());
    EXPECT_THAT(r.status().message(), HasSubstr("dma_copy row index " + std::to_string(bad) +
                                                " at partition 1 is outside the table's 3 rows"));
  }
}

}  // namespace
}  // namespace neuronc::codegen::testing
