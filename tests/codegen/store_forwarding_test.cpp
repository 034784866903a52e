// codegen: store-to-load forwarding. A load of bytes that one store wrote from an SBUF tile that
// is still intact becomes an SBUF copy; a scratch store nothing loads any more disappears. The
// rewrite must never change a result: every case where the SBUF tile or the HBM bytes may
// differ keeps the DMA.
#include "codegen/store_forwarding.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

using device::DType;
using device::Engine;

constexpr uint64_t kScratch = 1 << 20;  // HBM at and after this offset is scratch

PendingInstruction store(uint16_t p0, uint16_t rows, uint64_t sbuf_off, uint64_t hbm_off,
                         uint32_t cols, int64_t row_stride, DType dt = DType::f32) {
  PendingInstruction in;
  in.engine = Engine::gpsimd;
  in.role = DmaRole::store;
  in.op = device::DmaCopy(device::hbm(hbm_off, dt, rows, cols, row_stride),
                          device::sbuf(p0, rows, sbuf_off, dt, cols));
  return in;
}

PendingInstruction load(uint16_t p0, uint16_t rows, uint64_t sbuf_off, uint64_t hbm_off,
                        uint32_t cols, int64_t row_stride, DType src_dt = DType::f32,
                        DType dst_dt = DType::f32) {
  PendingInstruction in;
  in.engine = Engine::sync;
  in.role = DmaRole::load;
  in.op = device::DmaCopy(device::sbuf(p0, rows, sbuf_off, dst_dt, cols),
                          device::hbm(hbm_off, src_dt, rows, cols, row_stride));
  return in;
}

PendingInstruction compute_write(uint16_t p0, uint16_t rows, uint64_t sbuf_off, uint32_t cols) {
  PendingInstruction in;
  in.engine = Engine::vector;
  device::Memset m;
  m.dst = device::sbuf(p0, rows, sbuf_off, DType::f32, cols);
  in.op = m;
  return in;
}

bool is_copy(const PendingInstruction& in) {
  return std::holds_alternative<device::TensorCopy>(in.op) && in.engine == Engine::gpsimd;
}

TEST(StoreForwarding, LoadOfAStoredTileBecomesACopyAndTheStoreGoes) {
  std::vector<PendingInstruction> p{store(0, 128, 0, kScratch, 768, 768),
                                    load(0, 128, 8192, kScratch, 768, 768)};
  const ForwardingStats s = forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_TRUE(is_copy(p[0]));
  const auto& c = std::get<device::TensorCopy>(p[0].op);
  EXPECT_EQ(c.src, device::sbuf(0, 128, 0, DType::f32, 768));
  EXPECT_EQ(c.dst, device::sbuf(0, 128, 8192, DType::f32, 768));
  EXPECT_EQ(s.loads_forwarded, 1u);
  EXPECT_EQ(s.stores_elided, 1u);
  EXPECT_EQ(s.dma_bytes_saved, 2u * 128 * 768 * 4);
}

TEST(StoreForwarding, ColumnsOfTheStoredRowsReadTheirPartOfTheTile) {
  // Rows of 2304 stored; a load of columns 768..1535 of rows 64..127 (a head group's K).
  std::vector<PendingInstruction> p{
      store(0, 128, 1024, kScratch, 2304, 2304, DType::bf16),
      load(64, 64, 0, kScratch + (64 * 2304 + 768) * 2, 768, 2304, DType::bf16, DType::bf16)};
  forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_TRUE(is_copy(p[0]));
  EXPECT_EQ(std::get<device::TensorCopy>(p[0].op).src,
            device::sbuf(64, 64, 1024 + 768 * 2, DType::bf16, 768));
}

// An engine addresses 33-64 partitions only from 0 or 64 (and 1-32 from a multiple of 32), so
// a load into partitions 32..95 stays a DMA instead of becoming a copy the verifier refuses
// (found by the differential tester, docs/DIFFTEST.md).
TEST(StoreForwarding, LoadsEnginesCannotAddressStayDmas) {
  for (const auto& [p0, pn] : {std::pair{32, 64}, std::pair{1, 1}, std::pair{64, 65}}) {
    std::vector<PendingInstruction> p{
        store(0, 128, 1024, kScratch, 2304, 2304, DType::bf16),
        load(p0, pn, 0, kScratch + (p0 * 2304 + 768) * 2, 768, 2304, DType::bf16, DType::bf16)};
    const ForwardingStats s = forward_stores(p, kScratch);
    ASSERT_EQ(p.size(), 2u) << p0 << "+" << pn;
    EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[1].op));
    EXPECT_EQ(s.loads_forwarded, 0u);
  }
}

TEST(StoreForwarding, ALoadOfSeveralColumnBlocksReadsEachTile) {
  // A matmul's n-blocks: columns 0..511 and 512..767 of 128 rows of 768, stored from two tiles;
  // one load of the whole rows becomes one copy per block.
  PendingInstruction a = store(0, 128, 0, kScratch, 512, 768);
  PendingInstruction b = store(0, 128, 4096, kScratch + 512 * 4, 256, 768);
  std::vector<PendingInstruction> p{a, b, load(0, 128, 8192, kScratch, 768, 768)};
  const ForwardingStats s = forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 2u);
  ASSERT_TRUE(is_copy(p[0]) && is_copy(p[1]));
  EXPECT_EQ(std::get<device::TensorCopy>(p[0].op).src, device::sbuf(0, 128, 0, DType::f32, 512));
  EXPECT_EQ(std::get<device::TensorCopy>(p[0].op).dst, device::sbuf(0, 128, 8192, DType::f32, 512));
  EXPECT_EQ(std::get<device::TensorCopy>(p[1].op).src, device::sbuf(0, 128, 4096, DType::f32, 256));
  EXPECT_EQ(std::get<device::TensorCopy>(p[1].op).dst,
            device::sbuf(0, 128, 8192 + 512 * 4, DType::f32, 256));
  EXPECT_EQ(s.loads_forwarded, 1u);
  EXPECT_EQ(s.stores_elided, 2u);
  // Only the second block loaded: the first store's bounding range overlaps it but not its
  // bytes, so one copy from the second tile.
  std::vector<PendingInstruction> q{a, b, load(0, 128, 8192, kScratch + 512 * 4, 256, 768)};
  forward_stores(q, kScratch);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(std::get<device::TensorCopy>(q[0].op).src, device::sbuf(0, 128, 4096, DType::f32, 256));
}

TEST(StoreForwarding, AStoreIntoAnOutputStays) {
  std::vector<PendingInstruction> p{store(0, 16, 0, 4096, 64, 64), load(0, 16, 512, 4096, 64, 64)};
  const ForwardingStats s = forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[0].op));
  EXPECT_TRUE(is_copy(p[1]));
  EXPECT_EQ(s.stores_elided, 0u);
}

TEST(StoreForwarding, AnOverwrittenTileKeepsTheLoad) {
  // The producer's next tile reuses the slot before the consumer loads.
  std::vector<PendingInstruction> p{store(0, 128, 0, kScratch, 256, 256),
                                    compute_write(64, 8, 512, 16),
                                    load(0, 128, 4096, kScratch, 256, 256)};
  const ForwardingStats s = forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[0].op));
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[2].op));
  EXPECT_EQ(s.loads_forwarded + s.stores_elided, 0u);
}

TEST(StoreForwarding, AWriteOfOtherBytesOrPsumDoesNotMatter) {
  PendingInstruction psum = compute_write(0, 128, 0, 256);
  std::get<device::Memset>(psum.op).dst.memory = device::MemoryKind::psum;
  std::vector<PendingInstruction> p{store(0, 128, 0, kScratch, 256, 256), psum,
                                    compute_write(0, 128, 1024, 16),
                                    load(0, 128, 4096, kScratch, 256, 256)};
  forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(is_copy(p[2]));
}

TEST(StoreForwarding, ALoadSpanningTwoStoresOrShiftedPartitionsKeepsTheDma) {
  // Two stores of 64 rows each, one load of all 128: the newest writer does not hold it all.
  std::vector<PendingInstruction> p{store(0, 64, 0, kScratch, 128, 128),
                                    store(0, 64, 512, kScratch + 64 * 128 * 4, 128, 128),
                                    load(0, 128, 4096, kScratch, 128, 128)};
  forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[2].op));
  // Rows stored from partitions 0..63 loaded into partitions 64..127: engines do not move data
  // across partitions.
  std::vector<PendingInstruction> q{store(0, 64, 0, kScratch, 128, 128),
                                    load(64, 64, 4096, kScratch, 128, 128)};
  forward_stores(q, kScratch);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(q[1].op));
}

TEST(StoreForwarding, ALoadOntoItsOwnSourceTileKeepsTheDma) {
  // The consumer's buffer lies over half of the producer's tile: a copy would read and write
  // the same bytes.
  std::vector<PendingInstruction> p{store(0, 128, 0, kScratch, 256, 256),
                                    load(0, 128, 512, kScratch, 256, 256)};
  forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[1].op));
}

TEST(StoreForwarding, AConvertingLoadConvertsOnTheEngine) {
  // f32 stored, loaded as bf16 (a cast fused into the consumer's load): the copy converts.
  std::vector<PendingInstruction> p{
      store(0, 128, 0, kScratch, 256, 256, DType::f32),
      load(0, 128, 4096, kScratch, 256, 256, DType::f32, DType::bf16)};
  forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_TRUE(is_copy(p[0]));
  const auto& c = std::get<device::TensorCopy>(p[0].op);
  EXPECT_EQ(c.src, device::sbuf(0, 128, 0, DType::f32, 256));
  EXPECT_EQ(c.dst, device::sbuf(0, 128, 4096, DType::bf16, 256));
  // Float to integer is not a plain copy: the DMA stays.
  std::vector<PendingInstruction> q{store(0, 128, 0, kScratch, 256, 256, DType::f32),
                                    load(0, 128, 4096, kScratch, 256, 256, DType::f32, DType::i32)};
  forward_stores(q, kScratch);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(q[1].op));
}

TEST(StoreForwarding, APaddedBandReadsItsRowsFromEachStore) {
  // A convolution's input band: 4 rows of 6 stored as tiles of 10 elements (not row-aligned)
  // and loaded into rows of pitch 8 (zero padding around): each store's part of the band is
  // at most a partial row, whole rows and a partial row.
  std::vector<PendingInstruction> p;
  for (int t = 0; t < 3; ++t)
    p.push_back(store(0, 64, 1024 + 64 * t, kScratch + t * 10 * 4, t < 2 ? 10 : 4, 24));
  PendingInstruction band = load(0, 64, 8192, kScratch, 24, 24);
  auto& d = std::get<device::DmaCopy>(band.op);
  d.dst.num_levels = 2;
  d.dst.levels[0] = {8, 4};
  d.dst.levels[1] = {1, 6};
  d.src.num_levels = 2;
  d.src.levels[0] = {6, 4};
  d.src.levels[1] = {1, 6};
  p.push_back(band);
  const ForwardingStats s = forward_stores(p, kScratch);
  EXPECT_EQ(s.loads_forwarded, 1u);
  EXPECT_EQ(s.stores_elided, 3u);
  // Elements 0-9: row 0, row 1 cols 0-3; 10-19: row 1 cols 4-5, row 2, row 3 cols 0-1; 20-23.
  std::vector<std::pair<uint64_t, uint64_t>> want{{8192, 6},      {8192 + 32, 4}, {8192 + 48, 2},
                                                  {8192 + 64, 6}, {8192 + 96, 2}, {8192 + 104, 4}};
  ASSERT_EQ(p.size(), want.size());
  uint64_t total = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    ASSERT_TRUE(is_copy(p[i]));
    const auto& c = std::get<device::TensorCopy>(p[i].op);
    EXPECT_EQ(c.dst.offset, want[i].first) << i;
    EXPECT_EQ(c.dst.free_size(), want[i].second) << i;
    EXPECT_EQ(c.src.free_size(), want[i].second) << i;
    total += c.dst.free_size();
  }
  EXPECT_EQ(total, 24u);
}

TEST(StoreForwarding, AnyOtherReaderKeepsTheStore) {
  // One forwarded load, then an HBM -> HBM copy of the same bytes (an output copy).
  PendingInstruction copy;
  copy.role = DmaRole::load;
  copy.op = device::DmaCopy(device::hbm(0, DType::f32, 128, 256, 256),
                            device::hbm(kScratch, DType::f32, 128, 256, 256));
  std::vector<PendingInstruction> p{store(0, 128, 0, kScratch, 256, 256),
                                    load(0, 128, 4096, kScratch, 256, 256), copy};
  const ForwardingStats s = forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[0].op));
  EXPECT_TRUE(is_copy(p[1]));
  EXPECT_EQ(s.stores_elided, 0u);
}

TEST(StoreForwarding, ALaterStoreOfTheSameBytesIsWhatALoadSees) {
  // Scratch reuse: a second value stored over the first; the load reads the second.
  std::vector<PendingInstruction> p{store(0, 128, 0, kScratch, 256, 256),
                                    store(0, 128, 2048, kScratch, 256, 256),
                                    load(0, 128, 8192, kScratch, 256, 256)};
  forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 1u);  // both stores dropped: the first is dead, the second forwarded
  EXPECT_EQ(std::get<device::TensorCopy>(p[0].op).src, device::sbuf(0, 128, 2048, DType::f32, 256));
}

TEST(StoreForwarding, APartlyOverwrittenStoreStaysForItsOtherReaders) {
  // The second store overwrites the first value's rows 0..63; a load converting to integers
  // (not forwarded) of rows 64..127 reads what the first store wrote, which must stay. Nothing
  // reads the second store.
  std::vector<PendingInstruction> p{
      store(0, 128, 0, kScratch, 256, 256), store(0, 64, 2048, kScratch, 256, 256),
      load(64, 64, 8192, kScratch + 64 * 256 * 4, 256, 256, DType::f32, DType::i32)};
  const ForwardingStats s = forward_stores(p, kScratch);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(std::get<device::DmaCopy>(p[0].op).src, device::sbuf(0, 128, 0, DType::f32, 256));
  EXPECT_TRUE(std::holds_alternative<device::DmaCopy>(p[1].op));
  EXPECT_EQ(s.stores_elided, 1u);
}

// An encoder FFN sub-block at batch 1 (rows on the partitions, as BERT's): every activation
// handed from kernel to kernel stays in SBUF. Same bits, fewer DMA bytes, faster.
std::string ffn_block(const std::string& dt) {
  const std::string X = "1, 128, 192", F = "1, 128, 768";
  auto param = [&](const std::string& name, const std::string& shape) {
    std::string s = "  param %" + name + "_f : f32[" + shape + "] \"" + name + "\"\n";
    s += "  %" + name + " : " + dt + "[" + shape + "] = aten._to_copy.default(%" + name +
         "_f) {dtype = #" + dt + "}\n";
    return s;
  };
  std::string t = "graph {\n  input %x : " + dt + "[" + X + "]\n";
  t += param("w0", "192, 192") + param("w1", "768, 192") + param("b1", "768") +
       param("w2", "192, 768") + param("b2", "192") + param("g", "192") + param("beta", "192");
  t += "  %h : " + dt + "[" + X + "] = aten.linear.default(%x, %w0)\n";
  t += "  %u : " + dt + "[" + F + "] = aten.linear.default(%h, %w1, %b1)\n";
  t += "  %a : " + dt + "[" + F + "] = aten.gelu.default(%u)\n";
  t += "  %d : " + dt + "[" + X + "] = aten.linear.default(%a, %w2, %b2)\n";
  t += "  %s : " + dt + "[" + X + "] = aten.add.Tensor(%d, %h)\n";
  t += "  %y : " + dt + "[" + X +
       "] = aten.layer_norm.default(%s, %g, %beta) "
       "{normalized_shape = [192], eps = 1e-05}\n";
  t += "  output %y\n}";
  return t;
}

TEST(StoreForwarding, ActivationsStayInSbufBetweenKernels) {
  for (const char* dt : {"f32", "bf16"})
    for (device::TargetKind kind :
         {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
      const bool bf16 = std::string(dt) == "bf16";
      OptionComparison c = compare_option(
          ffn_block(dt), kind, bf16 ? 5e-2 : 1e-4,
          [](CodegenOptions& o, bool on) { o.forward_stores = on; }, 7, 11);
      const std::string what = std::string("FFN block ") + dt;
      // h (read by the up projection and by the residual) and a stay in SBUF: two loads
      // of h and one of a forwarded, their stores gone; only y is stored.
      EXPECT_EQ(c.off.part.stats.loads_forwarded, 0u) << what;
      EXPECT_EQ(c.on.part.stats.loads_forwarded, 3u) << what;
      EXPECT_GE(c.on.part.stats.stores_elided, 2u) << what;
      int stores = 0;
      for (const auto& stream : c.on.part.program.cores[0].streams)
        for (const auto& in : stream)
          if (const auto* d = std::get_if<device::DmaCopy>(&in.op))
            stores += d->src.memory == device::MemoryKind::sbuf &&
                      d->dst.memory == device::MemoryKind::hbm;
      EXPECT_EQ(stores, 1) << what;
      EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, c.on.part.stats.dma_bytes_forwarded) << what;
      EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns) << what;
      print_comparison(what, kind, c);
    }
}

// Two 3x3 convolutions (+ relu) at 56x56, as in a ResNet stage, with the f32 result cast to bf16
// for the second (what --auto-cast matmul makes of it): the first convolution's output tiles
// stay in SBUF (one slot each) and the second's padded input band is filled from them, the cast
// done by the copies. Same bits, no round trip of the intermediate.
TEST(StoreForwarding, ConvolutionOutputsFeedTheNextConvolutionInSbuf) {
  const std::string t = R"(graph {
  input %x : bf16[1, 64, 56, 56]
  param %w1f : f32[64, 64, 3, 3] "w1"
  param %w2f : f32[64, 64, 3, 3] "w2"
  %w1 : bf16[64, 64, 3, 3] = aten._to_copy.default(%w1f) {dtype = #bf16}
  %w2 : bf16[64, 64, 3, 3] = aten._to_copy.default(%w2f) {dtype = #bf16}
  %c1 : bf16[1, 64, 56, 56] = aten.conv2d.default(%x, %w1) {padding = [1, 1]}
  %f1 : f32[1, 64, 56, 56] = aten._to_copy.default(%c1) {dtype = #f32}
  %r1 : f32[1, 64, 56, 56] = aten.relu.default(%f1)
  %b1 : bf16[1, 64, 56, 56] = aten._to_copy.default(%r1) {dtype = #bf16}
  %c2 : bf16[1, 64, 56, 56] = aten.conv2d.default(%b1, %w2) {padding = [1, 1]}
  output %c2
})";
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    OptionComparison c = compare_option(
        t, kind, 5e-2, [](CodegenOptions& o, bool on) { o.forward_stores = on; }, 3, 5);
    EXPECT_GE(c.on.part.stats.loads_forwarded, 1u);
    EXPECT_GE(c.on.part.stats.stores_elided, 1u);
    // The f32 intermediate neither leaves nor comes back.
    EXPECT_GE(c.off_dma.bytes - c.on_dma.bytes, uint64_t{2} * 64 * 56 * 56 * 4 - 64 * 56 * 56 * 2);
    EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
    print_comparison("conv -> relu -> conv", kind, c);
  }
}

}  // namespace
}  // namespace neuronc::codegen::testing
