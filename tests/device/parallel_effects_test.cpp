// A functional run applies its instructions' effects as a dependency graph (Simulator::run with
// SimulatorOptions::parallel): effects that share no byte run side by side on oneTBB. Random
// single-core programs whose instructions keep landing on the same few SBUF, PSUM and HBM
// bytes (with no semaphores, so the completion order alone orders them) must end with the
// bytes, the status and the simulated time of a serial run, whatever the schedule: every
// overlap kind (read after write, write after read, write after write, two writes into one
// 4-byte PSUM word), matmul accumulation groups, and the first failing effect in completion
// order.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "device/simulator.h"
#include "device/target.h"
#include "tests/device/device_test_util.h"

namespace neuronc::device {
namespace {

using namespace device_test;

constexpr int kPartitions = 64;  // of SBUF and PSUM the programs touch

// An SBUF operand in a 1 KiB window of partitions [0, 64) (starting at 0 or 32, as compute
// operands must): offsets and sizes chosen so that operands overlap often.
MemRef random_sbuf(std::mt19937_64& g, DType t) {
  const uint16_t p0 = static_cast<uint16_t>(32 * (g() % 2));
  const uint16_t parts = static_cast<uint16_t>(1 + g() % 32);
  const uint64_t offset = (g() % 64) * 8;
  const uint32_t n = static_cast<uint32_t>(4 + g() % 60);
  return sbuf(p0, parts, offset, t, n);
}

// A PSUM operand of `t` at an offset a multiple of its size (bf16 ones two bytes into a word
// as often as not).
MemRef random_psum(std::mt19937_64& g, DType t, uint32_t n) {
  const uint16_t p0 = static_cast<uint16_t>(32 * (g() % 2));
  const uint64_t offset = (g() % 32) * dtype_size(t);
  return psum(p0, 4, offset, t, n);
}

MemRef random_hbm(std::mt19937_64& g, DType t, uint16_t rows, uint32_t cols) {
  const uint64_t offset = (g() % 64) * 16;
  return hbm(offset, t, rows, cols, cols);
}

Program random_program(uint64_t seed, int instructions) {
  std::mt19937_64 g(seed);
  Program p = program(1, 1 << 16);
  CoreProgram& core = p.cores[0];
  for (int i = 0; i < instructions; ++i) {
    const DType t = g() % 2 ? DType::f32 : DType::bf16;
    switch (g() % 6) {
      case 0: {  // memset
        const Engine e = g() % 2 ? Engine::vector : Engine::gpsimd;
        core.stream(e).push_back(inst(Memset{random_sbuf(g, t), double(g() % 7) - 3.0}));
        break;
      }
      case 1: {  // copy within SBUF (with a cast half the time)
        const Engine e = g() % 2 ? Engine::vector : Engine::scalar;
        const MemRef src = random_sbuf(g, t);
        const MemRef dst = sbuf(src.partition_start, src.partition_count, (g() % 64) * 8,
                                g() % 2 ? DType::f32 : DType::bf16, uint32_t(src.free_size()));
        core.stream(e).push_back(inst(TensorCopy{dst, src}));
        break;
      }
      case 2: {  // copy into PSUM: bf16 pieces of 4-byte words
        const uint32_t n = static_cast<uint32_t>(4 + g() % 8);
        const MemRef dst = random_psum(g, DType::bf16, n);
        const MemRef src = sbuf(dst.partition_start, 4, (g() % 64) * 8, DType::bf16, n);
        core.stream(Engine::vector).push_back(inst(TensorCopy{dst, src}));
        break;
      }
      case 3: {  // matmul, starting or continuing an accumulation group
        const MemRef st = sbuf(0, 16, (g() % 64) * 8, DType::bf16, 4);
        const MemRef mv = sbuf(0, 16, (g() % 64) * 8, DType::bf16, 8);
        const MemRef dst = psum(0, 4, (g() % 8) * 32, DType::f32, 8);
        core.stream(Engine::tensor).push_back(inst(MatMul{dst, st, mv, g() % 16 == 0}));
        break;
      }
      case 4: {  // HBM -> SBUF
        const MemRef dst = random_sbuf(g, t);
        core.stream(Engine::sync)
            .push_back(
                inst(DmaCopy{dst, random_hbm(g, t, dst.partition_count, uint32_t(dst.free_size())),
                             static_cast<uint16_t>(g() % 4)}));
        break;
      }
      default: {  // SBUF -> HBM
        const MemRef src = random_sbuf(g, t);
        core.stream(g() % 2 ? Engine::sync : Engine::gpsimd)
            .push_back(
                inst(DmaCopy{random_hbm(g, t, src.partition_count, uint32_t(src.free_size())), src,
                             static_cast<uint16_t>(g() % 4)}));
        break;
      }
    }
  }
  return p;
}

struct Outcome {
  Status status;
  double total_ns = 0;
  std::vector<std::byte> hbm, sbuf, psum;
};

Outcome run(const Program& p, bool parallel, uint64_t seed) {
  SimulatorOptions o;
  o.parallel = parallel;
  Simulator sim(target(TargetKind::trn1), o);
  sim.reset(1);
  Outcome out;
  out.hbm.resize(p.hbm_size);
  // The same starting bytes everywhere.
  std::mt19937_64 g(seed ^ 0x5eed);
  for (auto& b : out.hbm) b = std::byte(g() & 0x3f);
  for (int q = 0; q < kPartitions; ++q) {
    std::span<std::byte> s = sim.sbuf(0, q);
    for (size_t i = 0; i < 2048; ++i) s[i] = std::byte(g() & 0x3f);
  }
  auto r = sim.run(p, out.hbm);
  out.status = r.status();
  if (r) out.total_ns = r->total_time_ns;
  for (int q = 0; q < kPartitions; ++q) {
    std::span<std::byte> s = sim.sbuf(0, q);
    out.sbuf.insert(out.sbuf.end(), s.begin(), s.begin() + 2048);
    std::span<std::byte> m = sim.psum(0, q);
    out.psum.insert(out.psum.end(), m.begin(), m.begin() + 512);
  }
  return out;
}

TEST(ParallelEffects, RandomProgramsEndAsASerialRunDoes) {
  int failed_runs = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const Program p = random_program(seed, 400);
    const Outcome serial = run(p, /*parallel=*/false, seed);
    failed_runs += !serial.status.is_ok();
    for (int repeat = 0; repeat < 3; ++repeat) {
      const Outcome par = run(p, /*parallel=*/true, seed);
      SCOPED_TRACE("seed " + std::to_string(seed) + " repeat " + std::to_string(repeat));
      EXPECT_EQ(par.status.code(), serial.status.code());
      EXPECT_EQ(par.status.message(), serial.status.message());
      // A failed run leaves memory unspecified (effects independent of the failing one may or
      // may not have been applied).
      if (!serial.status.is_ok()) continue;
      EXPECT_EQ(par.total_ns, serial.total_ns);
      EXPECT_TRUE(par.hbm == serial.hbm) << "hbm bytes differ";
      EXPECT_TRUE(par.sbuf == serial.sbuf) << "sbuf bytes differ";
      EXPECT_TRUE(par.psum == serial.psum) << "psum bytes differ";
    }
  }
  // Some programs accumulate into words no matmul wrote, so the first-error rule is exercised;
  // most run through.
  EXPECT_GT(failed_runs, 0);
  EXPECT_LT(failed_runs, 12);
}

}  // namespace
}  // namespace neuronc::device
