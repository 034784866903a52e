// Timing of small hand-built programs whose expected times follow from the published cost
// formulas (TRAINIUM.md §4.1, §5) and the target's assumption parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/cost_model.h"
#include "device/simulator.h"
#include "tests/device/device_test_util.h"

namespace neuronc::device {
namespace {

using namespace neuronc::device::device_test;

// A timing-only simulator's options, recording a trace or not.
SimulatorOptions timing_only(bool trace = false) {
  SimulatorOptions o;
  o.functional = false;
  o.trace = trace;
  return o;
}

RunReport timed(TargetKind k, const Program& p) {
  Simulator sim(target(k), timing_only());
  auto r = sim.run(p, {});
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? r.value() : RunReport{};
}

MatMul mm(int k, int m, int n, DType dt = DType::bf16) {
  return MatMul{psum(0, m, 0, DType::f32, n), sbuf(0, k, 0, dt, m), sbuf(0, k, 1024, dt, n), false};
}

TEST(Timing, MatmulIsMaxOfStationaryAndMoving) {
  const Target& t = target(TargetKind::trn1);
  const double lat = t.tensor_completion_latency_cycles;
  Program p = program();
  p.cores[0].stream(Engine::tensor).push_back(inst(mm(128, 128, 512)));
  auto r = timed(TargetKind::trn1, p);
  EXPECT_NEAR(r.total_time_ns, (512 + lat) / 2.8, 1e-6);
  // Two back-to-back: the second issues after one II (512 cycles).
  p.cores[0].stream(Engine::tensor).push_back(inst(mm(128, 128, 512)));
  r = timed(TargetKind::trn1, p);
  EXPECT_NEAR(r.total_time_ns, (1024 + lat) / 2.8, 1e-6);
  EXPECT_NEAR(r.cores[0].engines[0].busy_ns, 1024 / 2.8, 1e-6);
  // A steady stream of full tiles runs at peak: HFU -> 100 % as the stream grows.
  Program q = program();
  for (int i = 0; i < 200; ++i)
    q.cores[0].stream(Engine::tensor).push_back(inst(mm(128, 128, 512)));
  EXPECT_GT(timed(TargetKind::trn1, q).hfu_percent, 99.0);
}

TEST(Timing, MatmulSmallMovingAndFp32) {
  const CostModel cm(target(TargetKind::trn1));
  EXPECT_EQ(cm.cost(Engine::tensor, mm(128, 128, 32)).ii_cycles, 64);  // §5.5: 50 % of peak
  EXPECT_EQ(cm.cost(Engine::tensor, mm(128, 1, 128)).ii_cycles, 128);  // vector stationary
  EXPECT_EQ(cm.cost(Engine::tensor, mm(128, 128, 1)).ii_cycles, 64);   // vector moving
  EXPECT_EQ(cm.cost(Engine::tensor, mm(128, 128, 512, DType::f32)).ii_cycles, 2048);
  EXPECT_EQ(cm.cost(Engine::tensor, mm(128, 32, 16)).ii_cycles, 32);
}

TEST(Timing, VectorAndScalarFormulas) {
  const CostModel v2(target(TargetKind::trn1));
  const CostModel v3(target(TargetKind::trn2));
  const MemRef a = sbuf(0, 128, 0, DType::bf16, 1024);
  const MemRef b = sbuf(0, 128, 4096, DType::bf16, 1024);
  const MemRef f = sbuf(0, 128, 8192, DType::f32, 1024);
  const MemRef pf = psum(0, 128, 0, DType::f32, 1024);
  // tensor_tensor: all-bf16 SBUF contiguous add -> N; fp32 -> 2N; one PSUM input -> N.
  EXPECT_EQ(v2.cost(Engine::vector, TensorTensor{a, a, b, AluOp::add}).ii_cycles, 1024);
  EXPECT_EQ(v2.cost(Engine::vector, TensorTensor{f, f, f, AluOp::add}).ii_cycles, 2048);
  EXPECT_EQ(v2.cost(Engine::vector, TensorTensor{f, pf, f, AluOp::max}).ii_cycles, 1024);
  // v3 perf mode halves the all-16-bit SBUF case.
  EXPECT_EQ(v3.cost(Engine::vector, TensorTensor{a, a, b, AluOp::add}).ii_cycles, 512);
  // tensor_copy bf16 SBUF contiguous: 4x on v3; MIN_II floor for tiny tiles.
  EXPECT_EQ(v3.cost(Engine::vector, TensorCopy{b, a}).ii_cycles, 256);
  EXPECT_EQ(v2.cost(Engine::vector, TensorCopy{b, a}).ii_cycles, 1024);
  EXPECT_EQ(v2.cost(Engine::vector,
                    TensorCopy{sbuf(0, 1, 0, DType::f32, 8), sbuf(0, 1, 64, DType::f32, 8)})
                .ii_cycles,
            64);
  // Strided innermost access (> 16 bytes) doubles the N-term.
  MemRef s = sbuf(0, 128, 0, DType::f32, 512);
  s.levels[0] = {8, 512};
  EXPECT_EQ(v2.cost(Engine::vector, TensorCopy{sbuf(0, 128, 8192, DType::f32, 512), s}).ii_cycles,
            1024);
  // Activation and activation with accumulate (+ MIN_II).
  Activation act;
  act.src = act.dst = f;
  EXPECT_EQ(v2.cost(Engine::scalar, act).ii_cycles, 1024);
  act.accumulate_dst = sbuf(0, 128, 0, DType::f32, 1);
  EXPECT_EQ(v2.cost(Engine::scalar, act).ii_cycles, 1024 + 64);
  // tensor_reduce bf16 add: N/2; iota: 150 + N.
  MemRef r = sbuf(0, 128, 0, DType::bf16, 1);
  EXPECT_EQ(v2.cost(Engine::vector, TensorReduce{r, a, ReduceOp::sum, 1, false}).ii_cycles, 512);
  Iota io;
  io.dst = sbuf(0, 128, 0, DType::i32, 100);
  EXPECT_EQ(v2.cost(Engine::gpsimd, io).ii_cycles, 250);
  EXPECT_EQ(v2.cost(Engine::vector, Memset{a, 0.0}).ii_cycles, 512);
  EXPECT_EQ(v2.cost(Engine::vector, Memset{a, 1.0}).ii_cycles, 1024);
}

TEST(Timing, DependentScalarChainMatchesPublishedII) {
  // PERF: 1-element dependent tensor_scalar(multiply, add) chain: 264 cycles = 189 ns on v2.
  const Target& t = target(TargetKind::trn1);
  Program p = program();
  const MemRef x = sbuf(0, 1, 0, DType::f32, 1);
  TensorScalar ts;
  ts.dst = ts.src = x;
  ts.op0 = AluOp::multiply;
  ts.operand0 = 1.0f;
  ts.op1 = AluOp::add;
  ts.operand1 = 1.0f;
  constexpr int kSteps = 10;
  for (int i = 0; i < kSteps; ++i) p.cores[0].stream(Engine::scalar).push_back(inst(ts));
  auto r = timed(TargetKind::trn1, p);
  const double expected = ((kSteps - 1) * t.scalar_dependency_cycles + t.min_ii_cycles +
                           t.engine_completion_latency_cycles) /
                          1.4;
  EXPECT_NEAR(r.total_time_ns, expected, 1e-6);
  // Independent instructions issue every MIN_II instead.
  Program q = program();
  for (int i = 0; i < kSteps; ++i) {
    TensorScalar u = ts;
    u.dst = u.src = sbuf(0, 1, 4 * i, DType::f32, 1);
    q.cores[0].stream(Engine::scalar).push_back(inst(u));
  }
  EXPECT_NEAR(timed(TargetKind::trn1, q).total_time_ns,
              (kSteps * t.min_ii_cycles + t.engine_completion_latency_cycles) / 1.4, 1e-6);
}

TEST(Timing, SemaphoreLatencyBetweenEngines) {
  const Target& t = target(TargetKind::trn1);
  const MemRef a = sbuf(0, 128, 0, DType::f32, 128);
  Program p = program();
  p.cores[0].stream(Engine::vector).push_back(inst(TensorCopy{a, a}, {}, {{0, 1}}));
  p.cores[0]
      .stream(Engine::scalar)
      .push_back(inst(TensorCopy{sbuf(0, 128, 1024, DType::f32, 128), a}, {{0, 1}}));
  auto r = timed(TargetKind::trn1, p);
  const double producer_done = (128 + t.engine_completion_latency_cycles) / 1.12;
  const double consumer_start = producer_done + t.semaphore_latency_cycles / 1.4;
  EXPECT_NEAR(r.total_time_ns, consumer_start + (128 + t.engine_completion_latency_cycles) / 1.4,
              1e-6);
}

TEST(Timing, DmaSplitsEightPartitionsPerEngine) {
  const Target& t = target(TargetKind::trn2);
  const CostModel cm(t);
  // DMA anchor shape: [4, 4096] bf16 = 32 KiB in 4 partitions -> one engine, 4 descriptors.
  const DmaCopy small{sbuf(0, 4, 0, DType::bf16, 4096), hbm(0, DType::bf16, 4, 4096, 4096), 0};
  DmaWork w = cm.dma_work(small);
  EXPECT_EQ(w.engines_used(), 1);
  EXPECT_EQ(w.descriptors[0], 4u);
  EXPECT_EQ(w.bytes[0], 32768u);
  // [128, 128] bf16: all 16 engines, each 8 rows x 256 B = 2 KiB.
  const DmaCopy full{sbuf(0, 128, 0, DType::bf16, 128), hbm(0, DType::bf16, 128, 128, 128), 0};
  w = cm.dma_work(full);
  EXPECT_EQ(w.engines_used(), 16);
  for (int e = 0; e < 16; ++e) EXPECT_EQ(w.bytes[e], 2048u);
  // End to end: trigger (issue + latency) then 4 descriptors on one engine.
  Program p = program(1, 1 << 20);
  p.cores[0].stream(Engine::sync).push_back(inst(small, {}, {{0, 16}}));
  auto r = timed(TargetKind::trn2, p);
  const double data = 4 * t.dma_descriptor_ns + 32768 / t.dma_engine_bytes_per_ns;
  EXPECT_NEAR(r.total_time_ns, t.dma_issue_cycles / 1.2 + t.dma_trigger_latency_ns + data, 1e-6);
  EXPECT_NEAR(r.cores[0].dma_active_ns, data, 1e-6);
  EXPECT_EQ(r.hbm_read_bytes, 32768u);
}

// §5.3: on trn1 an engine's rate follows the contiguous HBM bytes of its transfer: strided rows
// (the MM tutorial's tiles of a larger matrix) at the fitted small rate, a tile whose rows lie
// back to back at the DMABW rate once an engine's share reaches 32 KiB.
TEST(Timing, DmaRateFollowsContiguousTransferSize) {
  const Target& t = target(TargetKind::trn1);
  const CostModel cm(t);
  const double small = t.dma_small_transfer_bytes_per_ns / t.dma_engine_bytes_per_ns;
  EXPECT_LT(small, 1.0);
  EXPECT_DOUBLE_EQ(cm.dma_transfer_efficiency(256), small);
  EXPECT_DOUBLE_EQ(cm.dma_transfer_efficiency(t.dma_small_transfer_bytes), small);
  EXPECT_DOUBLE_EQ(cm.dma_transfer_efficiency(t.dma_full_rate_transfer_bytes), 1.0);
  EXPECT_DOUBLE_EQ(cm.dma_transfer_efficiency(1u << 20), 1.0);
  double prev = 0;
  for (uint64_t b = 1024; b <= 65536; b *= 2) {  // monotone between the two ends
    const double e = cm.dma_transfer_efficiency(b);
    EXPECT_GE(e, prev) << b;
    prev = e;
  }
  EXPECT_GT(cm.dma_transfer_efficiency(16384), small);
  EXPECT_LT(cm.dma_transfer_efficiency(16384), 1.0);

  // [128, 2048] bf16 rows of a [*, 8192] matrix: 4 KiB strided rows, the small rate.
  const DmaCopy strided{sbuf(0, 128, 0, DType::bf16, 2048), hbm(0, DType::bf16, 128, 2048, 8192),
                        0};
  DmaWork w = cm.dma_work(strided);
  for (int e = 0; e < 16; ++e) EXPECT_NEAR(w.rate_weighted_bytes[e], 8 * 4096 / small, 1e-6);
  // The same tile stored back to back: each engine streams 32 KiB at the full rate.
  const DmaCopy dense{sbuf(0, 128, 0, DType::bf16, 2048), hbm(0, DType::bf16, 128, 2048, 2048), 0};
  w = cm.dma_work(dense);
  for (int e = 0; e < 16; ++e) EXPECT_NEAR(w.rate_weighted_bytes[e], 8 * 4096, 1e-6);
  // Stores follow the same rule.
  w = cm.dma_work(
      DmaCopy{hbm(0, DType::bf16, 128, 2048, 2048), sbuf(0, 128, 0, DType::bf16, 2048), 0});
  for (int e = 0; e < 16; ++e) EXPECT_NEAR(w.rate_weighted_bytes[e], 8 * 4096, 1e-6);
  // End to end: the dense tile's data time is 8 descriptors + 32 KiB at 17 B/ns per engine.
  Program p = program(1, 1 << 24);
  p.cores[0].stream(Engine::sync).push_back(inst(dense, {}, {{0, 16}}));
  auto r = timed(TargetKind::trn1, p);
  EXPECT_NEAR(r.cores[0].dma_active_ns, 8 * t.dma_descriptor_ns + 32768 / t.dma_engine_bytes_per_ns,
              1e-6);
}

// DMA: each engine serves 8 SBUF partition lanes, so a transfer into partitions 64.. runs on
// engines 8.., and two transfers into disjoint partition halves run side by side.
TEST(Timing, DmaEngineFollowsTheAbsolutePartition) {
  const Target& t = target(TargetKind::trn1);
  const CostModel cm(t);
  DmaWork w =
      cm.dma_work(DmaCopy{sbuf(64, 4, 0, DType::bf16, 4096), hbm(0, DType::bf16, 4, 4096, 4096)});
  EXPECT_EQ(w.engines_used(), 1);
  EXPECT_EQ(w.descriptors[8], 4u);
  w = cm.dma_work(DmaCopy{hbm(0, DType::bf16, 4, 4096, 4096), sbuf(120, 4, 0, DType::bf16, 4096)});
  EXPECT_EQ(w.descriptors[15], 4u);
  // The engine follows the partition each descriptor lands in, also when the HBM side splits
  // the elements into rows differently: 16 HBM rows of [8, 1228] (a batch-major activation)
  // into 128 SBUF partitions of 1228 use all 16 engines, as the same bytes in 128 rows do.
  MemRef batched = hbm(0, DType::f32, 16, 8 * 1228, 98304);
  batched.num_levels = 2;
  batched.levels[0] = {12288, 8};
  batched.levels[1] = {1, 1228};
  w = cm.dma_work(DmaCopy{sbuf(0, 128, 0, DType::f32, 1228), batched});
  EXPECT_EQ(w.engines_used(), 16);
  for (int e = 0; e < 16; ++e) {
    EXPECT_EQ(w.descriptors[e], 8u);
    EXPECT_EQ(w.bytes[e], 8u * 1228 * 4);
  }
  w = cm.dma_work(DmaCopy{batched, sbuf(0, 128, 0, DType::f32, 1228)});
  EXPECT_EQ(w.engines_used(), 16);
  Program p = program(1, 1 << 24);
  const DmaCopy lo{sbuf(0, 64, 0, DType::f32, 2048), hbm(0, DType::f32, 64, 2048, 2048), 0};
  const DmaCopy hi{sbuf(64, 64, 0, DType::f32, 2048), hbm(1 << 20, DType::f32, 64, 2048, 2048), 1};
  p.cores[0].stream(Engine::sync).push_back(inst(lo, {}, {{0, 16}}));
  p.cores[0].stream(Engine::sync).push_back(inst(hi, {}, {{0, 16}}));
  const double one = timed(TargetKind::trn1, single(Engine::sync, lo, 1 << 24)).total_time_ns;
  const double both = timed(TargetKind::trn1, p).total_time_ns;
  EXPECT_LT(both, 1.1 * one);  // side by side, not one after the other
}

// §5.3 (DMA): an engine serves its queues round-robin and each queue in order. A small
// transfer on its own queue shares the engine with a large one issued just before it instead
// of waiting behind it; a transfer queued behind the large one on the same queue waits.
TEST(Timing, DmaQueuesShareAnEngineRoundRobin) {
  const Target& t = target(TargetKind::trn2);
  const CostModel cm(t);
  const DmaCopy big{sbuf(0, 4, 0, DType::bf16, 4096), hbm(0, DType::bf16, 4, 4096, 4096), 0};
  const DmaCopy small{sbuf(0, 4, 16384, DType::bf16, 512), hbm(1 << 16, DType::bf16, 4, 512, 512),
                      1};
  DmaCopy after = small;
  after.dst.offset = 32768;
  after.queue = 0;
  const auto work = [&](const DmaCopy& d) {
    const DmaWork w = cm.dma_work(d);
    EXPECT_EQ(w.engines_used(), 1);
    return cm.dma_engine_ns(w.rate_weighted_bytes[0], w.descriptors[0], t.dma_engine_bytes_per_ns);
  };
  Program p = program(1, 1 << 20);
  for (const DmaCopy& d : {big, small, after})
    p.cores[0].stream(Engine::sync).push_back(inst(d, {}, {{0, 16}}));
  Simulator sim(t, timing_only(/*trace=*/true));
  auto r = sim.run(p, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  std::vector<TraceEvent> xfers;
  for (const TraceEvent& e : r->trace)
    if (e.unit.starts_with("dma.q")) xfers.push_back(e);
  ASSERT_EQ(xfers.size(), 3u);
  std::sort(xfers.begin(), xfers.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.instruction_index < b.instruction_index;
  });
  const TraceEvent &b = xfers[0], &s = xfers[1], &a = xfers[2];
  // The small transfer runs at half the engine from its start: twice its solo time.
  EXPECT_NEAR(s.end_ns - s.start_ns, 2 * work(small), 1e-6);
  // The engine never idles: the large one ends after both transfers' work.
  EXPECT_NEAR(b.end_ns - b.start_ns, work(big) + work(small), 1e-6);
  // The one behind it on queue 0 starts when it ends and then has the engine to itself.
  EXPECT_NEAR(a.start_ns, b.end_ns, 1e-6);
  EXPECT_NEAR(a.end_ns - a.start_ns, work(after), 1e-6);
  EXPECT_NEAR(r->cores[0].dma_active_ns, work(big) + work(small) + work(after), 1e-6);
}

// A timing-only simulator holds no SBUF or PSUM (codegen times its candidates on 32 cores):
// asking for them is an error, not a read of nothing; once it turns functional, its next run
// makes them and computes.
TEST(Timing, ATimingOnlySimulatorHoldsNoMemoryUntilItRunsFunctionally) {
  Simulator sim(target(TargetKind::trn1), timing_only());
  const MemRef d = sbuf(0, 3, 0, DType::i32, 4);
  const Program p = single(Engine::vector, Memset{d, -7});
  sim.reset(1);
  ASSERT_TRUE(sim.run(p, {}).is_ok());
  using Memory = std::span<std::byte> (Simulator::*)(int, int);
  for (Memory memory : {Memory{&Simulator::sbuf}, Memory{&Simulator::psum}}) {
    try {
      (void)(sim.*memory)(0, 0);
      ADD_FAILURE() << "a timing-only simulator handed out memory";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("timing-only"), std::string::npos) << e.what();
    }
  }
  sim.options().functional = true;
  std::vector<std::byte> hbm(p.hbm_size);
  auto r = sim.run(p, hbm);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(read(sim, 0, d), std::vector<float>(12, -7.0f));
}

// A program's timing tables, made once and handed to many runs (a Session, `bench
// --timing-only`), give each run the report a run that makes its own gives, trace and all; tables
// made for another program or another target are refused, not used.
TEST(Timing, ProgramTimingMadeOnceGivesEveryRunTheSameReport) {
  const Target& t = target(TargetKind::trn1);
  Program p = program(1, 1 << 20);
  const MemRef a = sbuf(0, 128, 0, DType::bf16, 128);
  p.cores[0]
      .stream(Engine::sync)
      .push_back(inst(DmaCopy{a, hbm(0, DType::bf16, 128, 128, 128), 3}, {}, {{0, 16}}));
  p.cores[0]
      .stream(Engine::scalar)
      .push_back(inst(
          DmaCopy{sbuf(0, 64, 4096, DType::f32, 300), hbm(1 << 16, DType::f32, 64, 300, 512), 5},
          {}, {{1, 16}}));
  p.cores[0].stream(Engine::tensor).push_back(inst(mm(128, 128, 128), {{0, 16}}, {{2, 1}}));
  p.cores[0]
      .stream(Engine::vector)
      .push_back(
          inst(TensorCopy{sbuf(0, 128, 8192, DType::f32, 128), psum(0, 128, 0, DType::f32, 128)},
               {{2, 1}, {1, 16}}));
  Simulator sim(t, timing_only(/*trace=*/true));
  auto own = sim.run(p, {});
  ASSERT_TRUE(own.is_ok()) << own.status().message();
  const ProgramTiming timing(sim.cost_model(), p);
  for (int run = 0; run < 2; ++run) {
    auto r = sim.run(p, {}, Simulator::ProgramCheck::verify, &timing);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r->total_time_ns, own->total_time_ns);
    EXPECT_EQ(r->instructions, own->instructions);
    EXPECT_EQ(r->hbm_read_bytes, own->hbm_read_bytes);
    EXPECT_EQ(r->cores[0].dma_active_ns, own->cores[0].dma_active_ns);
    ASSERT_EQ(r->trace.size(), own->trace.size());
    for (size_t i = 0; i < r->trace.size(); ++i) {
      EXPECT_EQ(r->trace[i].unit, own->trace[i].unit);
      EXPECT_EQ(r->trace[i].start_ns, own->trace[i].start_ns);
      EXPECT_EQ(r->trace[i].end_ns, own->trace[i].end_ns);
    }
  }
  EXPECT_GT(own->total_time_ns, 0);

  const Program other = p;  // equal, but not the program the tables were made from
  auto wrong = sim.run(other, {}, Simulator::ProgramCheck::verify, &timing);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(wrong.status().message().find("another program"), std::string::npos)
      << wrong.status().message();
  Simulator trn2(target(TargetKind::trn2), timing_only(/*trace=*/true));
  auto elsewhere = trn2.run(p, {}, Simulator::ProgramCheck::verify, &timing);
  ASSERT_FALSE(elsewhere.is_ok());
  EXPECT_NE(elsewhere.status().message().find("another target (trn1)"), std::string::npos)
      << elsewhere.status().message();
}

TEST(Timing, DmaRateIsFlatWithoutASmallTransferAnchor) {
  for (TargetKind k : {TargetKind::trn2, TargetKind::trn3}) {
    const CostModel cm(target(k));
    EXPECT_DOUBLE_EQ(cm.dma_transfer_efficiency(256), 1.0);
    EXPECT_DOUBLE_EQ(cm.dma_transfer_efficiency(4096), 1.0);
  }
}

TEST(Timing, ReportsAssumptionsAndDeadlocks) {
  Program p = program();
  p.cores[0]
      .stream(Engine::vector)
      .push_back(inst(Memset{sbuf(0, 1, 0, DType::f32, 1), 0}, {{3, 1}}));
  Simulator sim(target(TargetKind::trn1), timing_only());
  auto r = sim.run(p, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "deadlock: core 0 vector[0] (memset) waits for semaphore 3 >= 1 but it stays at 0");
  auto ok =
      timed(TargetKind::trn1, single(Engine::vector, Memset{sbuf(0, 1, 0, DType::f32, 1), 0}));
  bool found = false;
  for (const auto& a : ok.assumptions) found = found || a.name == "semaphore_latency_cycles";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace neuronc::device

namespace neuronc::device {
namespace {

using namespace neuronc::device::device_test;

TEST(Trace, OneEventPerInstructionAndTransferInTimeOrder) {
  Program p = program(1, 1 << 20);
  const MemRef t = sbuf(0, 128, 0, DType::bf16, 128);
  p.cores[0]
      .stream(Engine::sync)
      .push_back(inst(DmaCopy{t, hbm(0, DType::bf16, 128, 128, 128), 3}, {}, {{0, 16}}));
  Instruction mmi = inst(MatMul{psum(0, 128, 0, DType::f32, 128), t, t, false}, {{0, 16}});
  mmi.debug_id = 42;
  p.cores[0].stream(Engine::tensor).push_back(mmi);
  Simulator sim(target(TargetKind::trn2), timing_only(/*trace=*/true));
  auto r = sim.run(p, {});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->trace.size(), 3u);  // trigger on sync, transfer on dma.q3, matmul
  EXPECT_EQ(r->trace[0].unit, "sync");
  EXPECT_EQ(r->trace[1].unit, "dma.q3");
  EXPECT_EQ(r->trace[1].bytes, 32768u);
  EXPECT_EQ(r->trace[2].unit, "tensor");
  EXPECT_EQ(r->trace[2].debug_id, 42u);
  EXPECT_GE(r->trace[2].start_ns, r->trace[1].end_ns);
  for (size_t i = 1; i < r->trace.size(); ++i)
    EXPECT_LE(r->trace[i - 1].start_ns, r->trace[i].start_ns);
}

TEST(Determinism, StochasticRoundingIsSeededAndTimingIgnoresData) {
  const MemRef src = sbuf(0, 128, 0, DType::f32, 256);
  const MemRef dst = sbuf(0, 128, 2048, DType::bf16, 256);
  std::vector<float> v(128 * 256, 1.0f + std::ldexp(1.0f, -9));
  auto once = [&](uint64_t seed, bool functional) {
    SimulatorOptions o;
    o.rounding = Rounding::stochastic;
    o.stochastic_seed = seed;
    o.functional = functional;
    Simulator sim(target(TargetKind::trn1), o);
    sim.reset(1);
    if (functional) write(sim, 0, src, v);
    std::vector<std::byte> hbm(1 << 20);
    auto r = sim.run(single(Engine::vector, TensorCopy{dst, src}), hbm);
    EXPECT_TRUE(r.is_ok());
    return std::make_pair(functional ? read(sim, 0, dst) : std::vector<float>{},
                          r.is_ok() ? r->total_time_ns : -1.0);
  };
  const auto a = once(7, true), b = once(7, true), c = once(8, true), t = once(7, false);
  EXPECT_EQ(a.first, b.first);
  EXPECT_NE(a.first, c.first);
  size_t up = 0;
  for (float x : a.first) up += x > 1.0f;
  EXPECT_NEAR(static_cast<double>(up) / a.first.size(), 0.25, 0.02);
  EXPECT_EQ(a.second, t.second);
}

TEST(MultiCore, SignalToAnotherCoreOrdersIt) {
  // Core 0 writes HBM and signals core 1, which then reads it.
  Program p = program(2, 4096);
  p.cores[0]
      .stream(Engine::sync)
      .push_back(inst(DmaCopy{hbm(1024, DType::f32, 1, 4, 4), hbm(0, DType::f32, 1, 4, 4), 0}, {},
                      {{0, 16, 1}}));
  p.cores[1]
      .stream(Engine::sync)
      .push_back(inst(DmaCopy{hbm(2048, DType::f32, 1, 4, 4), hbm(1024, DType::f32, 1, 4, 4), 0},
                      {{0, 16}}));
  SimulatorOptions o;
  o.check_races = true;
  Simulator sim(target(TargetKind::trn2), o);
  std::vector<std::byte> mem(4096);
  const float x[4] = {1, 2, 3, 4};
  std::memcpy(mem.data(), x, 16);
  auto r = sim.run(p, mem);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  float y[4];
  std::memcpy(y, mem.data() + 2048, 16);
  EXPECT_EQ(y[3], 4.0f);
  // Without the cross-core signal the two DMAs race on hbm bytes [1024, 1040).
  p.cores[1].stream(Engine::sync)[0].waits.clear();
  auto bad = sim.run(p, mem);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("hbm bytes [1024, 1040)"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace neuronc::device

namespace neuronc::device {
namespace {

using namespace neuronc::device::device_test;

TEST(Ports, V2SerialisesVectorAndGpsimdOnSbufButV3DoesNot) {
  Program p = program();
  p.cores[0]
      .stream(Engine::vector)
      .push_back(inst(
          TensorCopy{sbuf(0, 128, 0, DType::f32, 1024), sbuf(0, 128, 8192, DType::f32, 1024)}));
  p.cores[0]
      .stream(Engine::gpsimd)
      .push_back(inst(TensorCopy{sbuf(0, 128, 16384, DType::f32, 1024),
                                 sbuf(0, 128, 24576, DType::f32, 1024)}));
  Simulator v2(target(TargetKind::trn1), timing_only()),
      v3(target(TargetKind::trn2), timing_only());
  auto a = v2.run(p, {});
  auto b = v3.run(p, {});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const Target& t1 = target(TargetKind::trn1);
  // v2: GpSimd waits for VectorE's II (both issue at 0; vector wins the tie by engine order).
  const double vec_ii = 1024 / t1.vector_clock_ghz;
  const double gp = vec_ii + (1024 + t1.engine_completion_latency_cycles) / t1.gpsimd_clock_ghz;
  EXPECT_NEAR(a->total_time_ns, gp, 1e-6);
  const Target& t2 = target(TargetKind::trn2);
  EXPECT_NEAR(b->total_time_ns,
              std::max((1024 + t2.engine_completion_latency_cycles) / t2.vector_clock_ghz,
                       (1024 + t2.engine_completion_latency_cycles) / t2.gpsimd_clock_ghz),
              1e-6);
}

// A collective inside a program (docs/DEVICE_MODEL.md "Collectives"): the fit rows of nccom-test's
// tables come back, the algorithm follows the message size and the rank layout, and the bus
// bandwidth is the on-chip one only when every rank is on one chip.
Collective collective_of(CollectiveKind kind, uint64_t src_bytes) {
  Collective c;
  c.kind = kind;
  const uint32_t elems = static_cast<uint32_t>(std::max<uint64_t>(1, src_bytes / 4));
  c.src = hbm(0, DType::f32, 1, elems, elems);
  c.dst = c.src;
  return c;
}

TEST(Timing, CollectivesReproduceTheirFitRows) {
  const CostModel trn1(target(TargetKind::trn1));
  const CostModel trn2(target(TargetKind::trn2));
  const auto ag = CollectiveKind::all_gather;
  const auto ar = CollectiveKind::all_reduce;
  // trn1.32xlarge 32-rank all-gather (16 chips): 6.16 us at 1 KiB, 23.16 us at 512 KiB gathered.
  EXPECT_NEAR(trn1.collective_ns(collective_of(ag, 1024 / 32), 32, 16), 6160, 10);
  EXPECT_NEAR(trn1.collective_ns(collective_of(ag, 524288 / 32), 32, 16), 23160, 10);
  // 2 ranks on one trn1 chip: 18930 us at 1 GiB, and 2 ranks are one chip on trn1.
  EXPECT_NEAR(trn1.collective_ns(collective_of(ar, 1ull << 30), 2, 1), 18.93e6, 2e3);
  EXPECT_EQ(trn1.collective_ns(collective_of(ar, 1ull << 30), 2),
            trn1.collective_ns(collective_of(ar, 1ull << 30), 2, 1));
  // trn2: 8 ranks on 2 chips, 10.0 us at 1 KiB; 16 ranks on 4 chips, 9689.51 us at 512 MiB.
  EXPECT_NEAR(trn2.collective_ns(collective_of(ag, 1024 / 8), 8, 2), 10000, 10);
  EXPECT_NEAR(trn2.collective_ns(collective_of(ar, 512ull << 20), 16, 4), 9.68951e6, 2e3);

  // The algorithm by size (CC): mesh, RDH, then KangaRing on v3+ with every rank of a chip in
  // the group, ring otherwise.
  EXPECT_EQ(trn1.collective_algorithm(1 << 10, 32, 16), CollectiveAlgorithm::mesh);
  EXPECT_EQ(trn1.collective_algorithm(2 << 20, 32, 16), CollectiveAlgorithm::rdh);
  EXPECT_EQ(trn1.collective_algorithm(512ull << 20, 32, 16), CollectiveAlgorithm::ring);
  EXPECT_EQ(trn2.collective_algorithm(512ull << 20, 16, 4), CollectiveAlgorithm::kangaring);
  EXPECT_EQ(trn2.collective_algorithm(512ull << 20, 4, 4), CollectiveAlgorithm::ring);
  // Each step of the algorithm pays the hop latency: a ring all-reduce of N ranks has 2(N - 1).
  const Target& t1 = target(TargetKind::trn1);
  const Collective big = collective_of(ar, 512ull << 20);
  const double bus = 2.0 * 31 / 32 * (512ull << 20) / t1.collective_interchip_bus_gbps;
  EXPECT_NEAR(trn1.collective_ns(big, 32, 16),
              t1.collective_op_latency_ns + 2 * 31 * t1.collective_hop_latency_ns + bus, 1);
  // Spanning chips moves the bytes at the inter-chip rate, which on trn1 is the slower one.
  const Collective mid = collective_of(ar, 64 << 20);
  EXPECT_GT(trn1.collective_ns(mid, 2, 2), trn1.collective_ns(mid, 2, 1));
  // More data never costs less; a single rank pays only the operation's fixed latency.
  EXPECT_LT(trn1.collective_ns(collective_of(ar, 1 << 10), 32, 16),
            trn1.collective_ns(collective_of(ar, 1 << 16), 32, 16));
  EXPECT_EQ(trn1.collective_ns(collective_of(ar, 1 << 16), 1), t1.collective_op_latency_ns);
}

// An indirect DMA's descriptors are written by software DGE on GpSimd (docs/DEVICE_MODEL.md,
// Semantics): GpSimd is busy `swdge_descriptor_cycles` per descriptor, the transfer starts after
// them, and a second indirect DMA waits for GpSimd to finish the first's.
DmaCopy timed_gather(uint16_t rows) {
  DmaCopy d{sbuf(0, rows, 64, DType::f32, 6), hbm(0, DType::f32, 1, 6, 0)};
  d.src.partition_stride = 8;
  d.row_index = sbuf(0, rows, 0, DType::i32, 1);
  d.table_rows = 1000;
  return d;
}

TEST(Timing, IndirectDmaDescriptorsBusyGpSimd) {
  for (TargetKind k : {TargetKind::trn1, TargetKind::trn2, TargetKind::trn3}) {
    const Target& t = target(k);
    const double per = t.swdge_descriptor_cycles / t.gpsimd_clock_ghz;
    const int gpsimd = static_cast<int>(Engine::gpsimd);
    const RunReport r4 = timed(k, single(Engine::sync, timed_gather(4)));
    const RunReport r128 = timed(k, single(Engine::sync, timed_gather(128)));
    EXPECT_NEAR(r4.cores[0].engines[gpsimd].busy_ns, 4 * per, 1e-6) << t.name;
    EXPECT_NEAR(r128.cores[0].engines[gpsimd].busy_ns, 128 * per, 1e-6) << t.name;
    EXPECT_GE(r128.total_time_ns - r4.total_time_ns, 124 * per) << t.name;
    EXPECT_GE(r128.total_time_ns, 128 * per + t.dma_indirect_setup_ns) << t.name;
    // A direct DMA of the same rows keeps GpSimd idle.
    DmaCopy direct = timed_gather(128);
    direct.row_index.reset();
    direct.src = hbm(0, DType::f32, 128, 6, 8);
    EXPECT_EQ(timed(k, single(Engine::sync, direct)).cores[0].engines[gpsimd].busy_ns, 0) << t.name;
    // Two gathers on two queues: the second's descriptors follow the first's on GpSimd.
    Program two = single(Engine::sync, timed_gather(128));
    DmaCopy second = timed_gather(128);
    second.queue = 1;
    second.dst.offset = 1024;
    two.cores[0].stream(Engine::sync).push_back(inst(second));
    EXPECT_GE(timed(k, two).total_time_ns, 2 * 128 * per + t.dma_indirect_setup_ns) << t.name;
  }
}

}  // namespace
}  // namespace neuronc::device
