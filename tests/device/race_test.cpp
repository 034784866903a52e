// The race checker: two instructions on different queues touching overlapping bytes, one of
// them writing, must be ordered by semaphores.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device/simulator.h"
#include "tests/device/device_test_util.h"

namespace neuronc::device {
namespace {

using ::testing::HasSubstr;
using namespace neuronc::device::device_test;

// DMA loads a tile, TensorE multiplies it, VectorE evacuates PSUM, DMA stores the result.
Program pipeline(bool with_load_semaphore) {
  Program p = program(1, 1 << 20);
  const MemRef st = sbuf(0, 128, 0, DType::bf16, 128);
  const MemRef mv = sbuf(0, 128, 256, DType::bf16, 512);
  const MemRef acc = psum(0, 128, 0, DType::f32, 512);
  const MemRef out = sbuf(0, 128, 2048, DType::f32, 512);
  auto& sync = p.cores[0].stream(Engine::sync);
  sync.push_back(inst(DmaCopy{st, hbm(0, DType::bf16, 128, 128, 128), 0}, {}, {{0, 16}}));
  sync.push_back(inst(DmaCopy{mv, hbm(32768, DType::bf16, 128, 512, 512), 1}, {}, {{0, 16}}));
  std::vector<SemaphoreWait> waits;
  if (with_load_semaphore) waits.push_back({0, 32});
  p.cores[0].stream(Engine::tensor).push_back(inst(MatMul{acc, st, mv, false}, waits, {{1, 1}}));
  p.cores[0].stream(Engine::vector).push_back(inst(TensorCopy{out, acc}, {{1, 1}}, {{2, 1}}));
  sync.push_back(inst(DmaCopy{hbm(262144, DType::f32, 128, 512, 512), out, 2}, {{2, 1}}));
  return p;
}

// An indirect DMA may read any row of its table: an unordered write to another row races.
TEST(RaceChecker, IndirectDmaReadsItsWholeTable) {
  SimulatorOptions o;
  o.check_races = true;
  Simulator sim(target(TargetKind::trn1), o);
  std::vector<std::byte> mem(1 << 20);
  Program p = program(1, 1 << 20);
  DmaCopy g{sbuf(0, 4, 0, DType::f32, 8), hbm(0, DType::f32, 1, 8, 0), 0};
  g.src.partition_stride = 8;
  g.row_index = sbuf(0, 4, 64, DType::i32, 1);
  g.table_rows = 100;
  p.cores[0].stream(Engine::sync).push_back(inst(g));
  // Row 50 of the table (byte 1600) is written by another queue with no semaphore.
  p.cores[0]
      .stream(Engine::sync)
      .push_back(inst(DmaCopy{hbm(1600, DType::f32, 1, 8, 8), sbuf(0, 1, 128, DType::f32, 8), 1}));
  auto r = sim.run(p, mem);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("race: "));
}

TEST(RaceChecker, OrderedPipelineIsClean) {
  SimulatorOptions o;
  o.check_races = true;
  Simulator sim(target(TargetKind::trn1), o);
  std::vector<std::byte> hbm(1 << 20);
  auto r = sim.run(pipeline(true), hbm);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
}

TEST(RaceChecker, CatchesAMissingSemaphore) {
  SimulatorOptions o;
  o.check_races = true;
  Simulator sim(target(TargetKind::trn1), o);
  std::vector<std::byte> hbm(1 << 20);
  auto r = sim.run(pipeline(false), hbm);
  ASSERT_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  EXPECT_THAT(m, HasSubstr("race: "));
  EXPECT_THAT(m,
              HasSubstr("core 0 tensor[0] (matmul) reads sbuf partitions [0, 128) bytes [0, 256)"));
  EXPECT_THAT(
      m, HasSubstr("core 0 sync[0] (dma_copy) writes sbuf partitions [0, 128) bytes [0, 256)"));
  EXPECT_THAT(m, HasSubstr("no semaphore orders them"));
}

TEST(RaceChecker, CatchesWriteAfterReadAcrossEngines) {
  // VectorE overwrites a tile while a DMA still reads it, with no semaphore between them.
  Program p = program(1, 1 << 20);
  const MemRef t = sbuf(0, 128, 0, DType::f32, 64);
  p.cores[0].stream(Engine::sync).push_back(inst(DmaCopy{hbm(0, DType::f32, 128, 64, 64), t, 0}));
  p.cores[0].stream(Engine::vector).push_back(inst(Memset{t, 1.0}));
  SimulatorOptions o;
  o.check_races = true;
  o.functional = false;
  Simulator sim(target(TargetKind::trn2), o);
  auto r = sim.run(p, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("vector[0] (memset)"));
  EXPECT_THAT(r.status().message(), HasSubstr("sync[0] (dma_copy)"));
}

TEST(RaceChecker, SameEngineOrderNeedsNoSemaphore) {
  Program p = program();
  const MemRef t = sbuf(0, 128, 0, DType::f32, 64);
  p.cores[0].stream(Engine::vector).push_back(inst(Memset{t, 1.0}));
  p.cores[0]
      .stream(Engine::vector)
      .push_back(inst(TensorCopy{sbuf(0, 128, 512, DType::f32, 64), t}));
  SimulatorOptions o;
  o.check_races = true;
  Simulator sim(target(TargetKind::trn1), o);
  std::vector<std::byte> hbm(1 << 20);
  EXPECT_TRUE(sim.run(p, hbm).is_ok());
}

}  // namespace
}  // namespace neuronc::device
