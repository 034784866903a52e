// A functional run split over processes (SimulatorOptions::processes; `mpirun -np K`): each
// process computes its cores, times all of them and swaps the HBM bytes its cores wrote at each
// collective, at each signal one core sends another, and at the end. Threads stand in for the
// processes. Every process must end with the HBM bytes and the report of one process, fail with
// one process's error, and refuse cores of two processes that write the same bytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device/simulator.h"
#include "device/target.h"
#include "tests/device/device_test_util.h"
#include "tests/testing/thread_rendezvous.h"

namespace neuronc::device {
namespace {

using ::testing::HasSubstr;
using namespace device_test;

using ThreadProcess =
    testing::ThreadProcess<ProcessGroup, Result<std::vector<std::vector<std::byte>>>>;

struct Outcome {
  std::vector<std::byte> hbm;
  Status status;
  double total_ns = 0;
  uint64_t instructions = 0;
  int exchanges = 0;
};

// Runs `p` on `processes` threads, each with its own Simulator and copy of `hbm`; `setup` fills
// each simulator's on-chip memory first.
template <typename Setup>
std::vector<Outcome> run_split(const Program& p, const std::vector<std::byte>& hbm, int processes,
                               Setup setup) {
  testing::ThreadRendezvous rendezvous(processes);
  std::vector<Outcome> out(processes);
  std::vector<std::thread> threads;
  for (int r = 0; r < processes; ++r)
    threads.emplace_back([&, r] {
      ThreadProcess group(rendezvous, r);
      SimulatorOptions o;
      o.processes = &group;
      Simulator sim(target(TargetKind::trn2), o);
      sim.reset(static_cast<int>(p.cores.size()));
      setup(sim);
      out[r].hbm = hbm;
      auto rep = sim.run(p, out[r].hbm);
      out[r].status = rep.status();
      if (rep) {
        out[r].total_ns = rep->total_time_ns;
        out[r].instructions = rep->instructions;
      }
      out[r].exchanges = group.calls;
    });
  for (auto& t : threads) t.join();
  return out;
}

template <typename Setup>
Outcome run_one(const Program& p, const std::vector<std::byte>& hbm, Setup setup) {
  Simulator sim(target(TargetKind::trn2));
  sim.reset(static_cast<int>(p.cores.size()));
  setup(sim);
  Outcome o;
  o.hbm = hbm;
  auto rep = sim.run(p, o.hbm);
  o.status = rep.status();
  if (rep) {
    o.total_ns = rep->total_time_ns;
    o.instructions = rep->instructions;
  }
  return o;
}

void no_setup(Simulator&) {}

// Four cores: each copies its 4 floats into its own region, all-reduces them, copies the sum
// on; core 0 also writes a block and signals core 3, which copies that block on.
Program four_core_program() {
  Program p = program(4, 8192);
  for (int c = 0; c < 4; ++c) {
    const uint64_t mine = 1024 + 256 * c;
    auto& s = p.cores[c].stream(Engine::sync);
    s.push_back(inst(DmaCopy{hbm(mine, DType::f32, 1, 4, 4), hbm(16 * c, DType::f32, 1, 4, 4)}, {},
                     {{0, 1}}));
    s.push_back(
        inst(Collective{CollectiveKind::all_reduce, ReduceOp::sum,
                        hbm(mine + 64, DType::f32, 1, 4, 4), hbm(mine, DType::f32, 1, 4, 4)},
             {{0, 1}}, {{1, 1}}));
    s.push_back(
        inst(DmaCopy{hbm(mine + 128, DType::f32, 1, 4, 4), hbm(mine + 64, DType::f32, 1, 4, 4)},
             {{1, 1}}, {{2, 1}}));
  }
  // Core 0 -> core 3 outside any collective.
  p.cores[0]
      .stream(Engine::sync)
      .push_back(inst(DmaCopy{hbm(4096, DType::f32, 1, 4, 4), hbm(1024 + 128, DType::f32, 1, 4, 4)},
                      {{2, 1}}, {{3, 1, 3}}));
  p.cores[3]
      .stream(Engine::sync)
      .push_back(
          inst(DmaCopy{hbm(4608, DType::f32, 1, 4, 4), hbm(4096, DType::f32, 1, 4, 4)}, {{3, 1}}));
  return p;
}

TEST(ProcessSplit, EveryProcessEndsWithOneProcesssBytesAndTime) {
  const Program p = four_core_program();
  std::vector<std::byte> hbm(8192);
  std::vector<float> in(16);
  for (int i = 0; i < 16; ++i) in[i] = 1.5f * i - 3.0f;
  std::memcpy(hbm.data(), in.data(), 64);
  const Outcome one = run_one(p, hbm, no_setup);
  ASSERT_TRUE(one.status.is_ok()) << one.status.message();
  float got[4];
  std::memcpy(got, one.hbm.data() + 4608, 16);  // core 3's copy of core 0's sum
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], in[i] + in[4 + i] + in[8 + i] + in[12 + i]);
  for (int processes : {2, 3, 4, 5}) {
    const std::vector<Outcome> split = run_split(p, hbm, processes, no_setup);
    for (int r = 0; r < processes; ++r) {
      SCOPED_TRACE("process " + std::to_string(r) + " of " + std::to_string(processes));
      ASSERT_TRUE(split[r].status.is_ok()) << split[r].status.message();
      EXPECT_TRUE(split[r].hbm == one.hbm);
      EXPECT_EQ(split[r].total_ns, one.total_ns);
      EXPECT_EQ(split[r].instructions, one.instructions);
      // The collective, core 0's signal to core 3 and the end.
      EXPECT_EQ(split[r].exchanges, 3);
    }
  }
}

// Logs long enough to be applied as dependency graphs (simulator.cpp's run_log): each core moves
// 24 blocks from its input region through SBUF to its output region, writing one output block
// twice. Every process ends with the bytes one process computes, which are the copies.
TEST(ProcessSplit, LongLogsSwapTheWritesOfTheirGraphs) {
  Program p = program(2, 16384);
  for (int c = 0; c < 2; ++c) {
    const uint64_t in = 1024 + 4096 * c, out = 2048 + 4096 * c;
    auto& s = p.cores[c].stream(Engine::sync);
    for (int k = 0; k < 24; ++k) {
      const MemRef block = sbuf(0, 1, 64 * k, DType::f32, 4);
      s.push_back(inst(DmaCopy{block, hbm(in + 16 * k, DType::f32, 1, 4, 4)}));
      s.push_back(inst(DmaCopy{hbm(out + 16 * (k % 20), DType::f32, 1, 4, 4), block}));
    }
  }
  std::vector<std::byte> hbm(16384);
  for (size_t i = 0; i < hbm.size(); i += 4) {
    const float v = 0.25f * static_cast<float>(i / 4);
    std::memcpy(hbm.data() + i, &v, 4);
  }
  const Outcome one = run_one(p, hbm, no_setup);
  ASSERT_TRUE(one.status.is_ok()) << one.status.message();
  for (int c = 0; c < 2; ++c)
    for (int k = 0; k < 20; ++k) {
      // Blocks 20..23 overwrite blocks 0..3, after them in the queue.
      const int from = k < 4 ? k + 20 : k;
      EXPECT_EQ(std::memcmp(one.hbm.data() + 2048 + 4096 * c + 16 * k,
                            hbm.data() + 1024 + 4096 * c + 16 * from, 16),
                0)
          << "core " << c << " block " << k;
    }
  const std::vector<Outcome> split = run_split(p, hbm, 2, no_setup);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("process " + std::to_string(r));
    ASSERT_TRUE(split[r].status.is_ok()) << split[r].status.message();
    EXPECT_TRUE(split[r].hbm == one.hbm);
    EXPECT_EQ(split[r].total_ns, one.total_ns);
  }
}

// Core 1's indirect DMA reads a bad row index: every process fails with one process's error,
// whichever process computes core 1.
TEST(ProcessSplit, EveryProcessFailsWithOneProcesssError) {
  Program p = program(2, 8192);
  const MemRef idx = sbuf(0, 2, 0, DType::i32, 1);
  for (int c = 0; c < 2; ++c) {
    DmaCopy d{sbuf(0, 2, 64, DType::f32, 4), hbm(0, DType::f32, 1, 4, 4)};
    d.row_index = idx;
    d.table_rows = 8;
    p.cores[c].stream(Engine::sync).push_back(inst(d));
  }
  auto setup = [&](Simulator& sim) {
    write(sim, 0, idx, {1, 2});
    write(sim, 1, idx, {3, 9});
  };
  const std::vector<std::byte> hbm(8192);
  const Outcome one = run_one(p, hbm, setup);
  ASSERT_FALSE(one.status.is_ok());
  EXPECT_THAT(one.status.message(), HasSubstr("row index 9 at partition 1 is outside"));
  EXPECT_THAT(one.status.message(), HasSubstr("core 1"));
  for (const Outcome& o : run_split(p, hbm, 2, setup)) {
    EXPECT_EQ(o.status.code(), one.status.code());
    EXPECT_EQ(o.status.message(), one.status.message());
  }
}

// Two cores writing the same bytes between collectives cannot be split: the run says so rather
// than keeping one process's bytes.
TEST(ProcessSplit, RefusesCoresOfTwoProcessesWritingTheSameBytes) {
  Program p = program(2, 8192);
  for (int c = 0; c < 2; ++c)
    p.cores[c]
        .stream(Engine::sync)
        .push_back(inst(DmaCopy{hbm(1024, DType::f32, 1, 4, 4), hbm(16 * c, DType::f32, 1, 4, 4)}));
  const std::vector<std::byte> hbm(8192);
  EXPECT_TRUE(run_one(p, hbm, no_setup).status.is_ok());
  for (const Outcome& o : run_split(p, hbm, 2, no_setup)) {
    ASSERT_FALSE(o.status.is_ok());
    EXPECT_THAT(o.status.message(),
                HasSubstr("the cores of processes 0 and 1 wrote overlapping hbm bytes [1024, "
                          "1040) before the same collective"));
  }
}

}  // namespace
}  // namespace neuronc::device
