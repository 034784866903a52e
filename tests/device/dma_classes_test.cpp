// The DMA engines of a core whose states are the same bits are simulated once, as a class
// (SimulatorOptions::dma_engine_classes, issue 19). Random DMA-heavy programs must give the bits
// of a run that simulates each engine on its own: the same report, the same trace, to the last
// bit of every time. The programs mix transfers over all 16 engines with ones over a few (which
// split a class), transfers that give engines unequal work, several queues sharing an engine,
// HBM and on-chip transfers, and engines waiting on semaphores, so that ticks of different
// classes fall at the same time.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "device/simulator.h"
#include "device/target.h"
#include "tests/device/device_test_util.h"

namespace neuronc::device {
namespace {

using namespace device_test;

constexpr uint64_t kHbmBytes = 1 << 24;

// A transfer of `rows` partitions from `p0`, `n` elements each, in a random direction; `full`:
// mostly over all 128 partitions (all 16 engines).
DmaCopy random_dma(std::mt19937_64& g, bool full) {
  static constexpr uint16_t kCounts[] = {1, 4, 8, 16, 24, 64, 128, 128, 128, 128};
  uint16_t rows = kCounts[g() % std::size(kCounts)];
  if (g() % 8 == 0) rows = static_cast<uint16_t>(1 + g() % 128);
  if (full && g() % 8) rows = 128;
  uint16_t p0 = rows == 128 ? 0 : static_cast<uint16_t>(g() % (129 - rows));
  if (g() % 2) p0 = static_cast<uint16_t>(p0 / 8 * 8);
  // A few sizes, so that transfers often give engines the same work (and classes form).
  static constexpr uint32_t kSizes[] = {64, 512, 2048, 4096};
  const uint32_t n =
      g() % 4 ? kSizes[g() % std::size(kSizes)] : static_cast<uint32_t>(1 + g() % 3000);
  const DType t = g() % 3 ? DType::bf16 : DType::f32;
  const int64_t stride = g() % 2 ? n : 2 * int64_t{n};
  const MemRef on_chip = sbuf(p0, rows, (g() % 4) * 16384, t, n);
  const MemRef off_chip = hbm((g() % 64) * 65536, t, rows, n, stride);
  const auto queue = static_cast<uint16_t>(g() % 3 ? g() % 3 : g() % 16);
  switch (g() % 8) {
    case 0:
      return DmaCopy{off_chip, on_chip, queue};  // a store
    case 1:
      return DmaCopy{sbuf(p0, rows, 65536 + (g() % 4) * 16384, t, n), on_chip, queue};  // on chip
    case 2:
      return DmaCopy{hbm(kHbmBytes / 2 + (g() % 64) * 65536, t, rows, n, stride), off_chip,
                     queue};  // HBM to HBM: engines round-robin
    default:
      return DmaCopy{on_chip, off_chip, queue};  // a load
  }
}

// Transfers triggered from three engines; the sync engine signals semaphores the others wait on
// (only it signals, so nothing deadlocks), and VectorE's memsets stagger the triggers. Odd seeds
// mostly use all 16 engines.
Program random_program(uint64_t seed, int cores, int instructions) {
  std::mt19937_64 g(seed);
  const bool full = seed % 2 == 1;
  Program p = program(cores, kHbmBytes, 4);
  for (int c = 0; c < cores; ++c) {
    CoreProgram& core = p.cores[c];
    std::vector<uint32_t> signalled(4, 0);
    for (int i = 0; i < instructions; ++i) {
      const uint64_t r = g() % 16;
      if (r < 8) {
        std::vector<SemaphoreSignal> sig;
        if (g() % 3 == 0) {
          const auto s = static_cast<uint16_t>(g() % 4);
          sig.push_back({s, 1});
          ++signalled[s];
        }
        core.stream(Engine::sync).push_back(inst(random_dma(g, full), {}, std::move(sig)));
      } else if (r < 13) {
        const Engine e = r < 11 ? Engine::gpsimd : Engine::scalar;
        std::vector<SemaphoreWait> wait;
        const auto s = static_cast<uint16_t>(g() % 4);
        if (signalled[s] > 0 && g() % 2)
          wait.push_back({s, 1 + static_cast<uint32_t>(g() % signalled[s])});
        core.stream(e).push_back(inst(random_dma(g, full), std::move(wait)));
      } else {
        core.stream(Engine::vector)
            .push_back(inst(Memset{sbuf(0, 128, 131072, DType::f32, 1 + g() % 2048), 0.0}));
      }
    }
  }
  return p;
}

// Rounds of transfers that mirror each other: in round r, ScalarE and VectorE each trigger one
// when the sync engine's transfer r has landed, and the sync engine and GpSimdE each trigger
// one when one of those has. Transfers are whole, half, quarter or one-engine slices of the
// partitions with a few sizes, so transfers on different engines often end at the same time,
// and the order in which those ends are handled shows in the order of the trace.
Program mirrored_program(uint64_t seed, int rounds) {
  std::mt19937_64 g(seed);
  Program p = program(1, kHbmBytes, 4);
  CoreProgram& core = p.cores[0];
  auto slice = [&](int r) {
    static constexpr uint16_t kRows[] = {128, 64, 32, 8};
    const uint16_t rows = kRows[g() % std::size(kRows)];
    const auto p0 = static_cast<uint16_t>(rows * (g() % (128 / rows)));
    const uint32_t n = g() % 2 ? 512 : 2048;
    const MemRef src = hbm((r % 64) * 65536, DType::bf16, rows, n, n);
    return DmaCopy{sbuf(p0, rows, (g() % 4) * 16384, DType::bf16, n), src,
                   static_cast<uint16_t>(g() % 2)};
  };
  for (uint32_t r = 1; r <= static_cast<uint32_t>(rounds); ++r) {
    std::vector<SemaphoreWait> after_scalar;
    if (r > 1) after_scalar.push_back({0, r - 1});
    core.stream(Engine::sync).push_back(inst(slice(int(r)), after_scalar, {{2, 1}}));
    core.stream(Engine::scalar).push_back(inst(slice(int(r)), {{2, r}}, {{0, 1}}));
    core.stream(Engine::vector).push_back(inst(slice(int(r)), {{2, r}}, {{1, 1}}));
    core.stream(Engine::gpsimd).push_back(inst(slice(int(r)), {{1, r}}));
  }
  return p;
}

Result<RunReport> run(const Target& t, const Program& p, bool classes, bool functional) {
  SimulatorOptions o;
  o.functional = functional;
  o.trace = true;
  o.dma_engine_classes = classes;
  Simulator sim(t, o);
  std::vector<std::byte> hbm(functional ? kHbmBytes : 0);
  return sim.run(p, hbm);
}

uint64_t bits(double x) {
  return std::bit_cast<uint64_t>(x);
}

void expect_same(const RunReport& a, const RunReport& b, const std::string& what) {
  EXPECT_EQ(bits(a.total_time_ns), bits(b.total_time_ns)) << what;
  ASSERT_EQ(a.cores.size(), b.cores.size()) << what;
  for (size_t c = 0; c < a.cores.size(); ++c) {
    const CoreStats &x = a.cores[c], &y = b.cores[c];
    EXPECT_EQ(bits(x.dma_active_ns), bits(y.dma_active_ns)) << what << " core " << c;
    EXPECT_EQ(x.dma_transfers, y.dma_transfers) << what;
    EXPECT_EQ(x.dma_bytes, y.dma_bytes) << what;
    for (int e = 0; e < kNumEngines; ++e) {
      EXPECT_EQ(bits(x.engines[e].busy_ns), bits(y.engines[e].busy_ns)) << what;
      EXPECT_EQ(x.engines[e].instructions, y.engines[e].instructions) << what;
    }
  }
  EXPECT_EQ(bits(a.mbu_percent), bits(b.mbu_percent)) << what;
  ASSERT_EQ(a.trace.size(), b.trace.size()) << what;
  for (size_t i = 0; i < a.trace.size(); ++i) {
    const TraceEvent &x = a.trace[i], &y = b.trace[i];
    ASSERT_TRUE(x.core == y.core && x.unit == y.unit &&
                x.instruction_index == y.instruction_index &&
                bits(x.start_ns) == bits(y.start_ns) && bits(x.end_ns) == bits(y.end_ns))
        << what << ": trace event " << i << " differs: " << x.unit << " [" << x.instruction_index
        << "] " << x.start_ns << ".." << x.end_ns << " vs " << y.unit << " [" << y.instruction_index
        << "] " << y.start_ns << ".." << y.end_ns;
  }
}

// Runs `p` with one state per DMA engine and with classes, and compares the two.
void expect_classes_change_nothing(const Target& t, const Program& p, const std::string& what,
                                   bool functional = false) {
  auto each = run(t, p, /*classes=*/false, functional);
  auto classes = run(t, p, /*classes=*/true, functional);
  ASSERT_TRUE(each.is_ok()) << what << ": " << each.status().message();
  ASSERT_TRUE(classes.is_ok()) << what << ": " << classes.status().message();
  expect_same(*each, *classes, what);
}

TEST(DmaEngineClasses, RandomProgramsGiveTheBitsOfOneStatePerEngine) {
  for (TargetKind k : {TargetKind::trn1, TargetKind::trn2}) {
    const Target& t = target(k);
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const int cores = seed % 4 == 0 ? 2 : 1;
      const Program p = random_program(seed, cores, 120);
      const std::string what = std::string(t.name) + " seed " + std::to_string(seed);
      expect_classes_change_nothing(t, p, what);
    }
  }
}

TEST(DmaEngineClasses, MirroredTransfersEndInTheSameOrder) {
  for (TargetKind k : {TargetKind::trn1, TargetKind::trn2}) {
    const Target& t = target(k);
    for (uint64_t seed = 1; seed <= 60; ++seed) {
      const Program p = mirrored_program(seed, 40);
      const std::string what = std::string(t.name) + " mirrored seed " + std::to_string(seed);
      expect_classes_change_nothing(t, p, what);
    }
  }
}

// trn1 with every clock at 1 GHz and every DMA cost a power of two: times are whole numbers of
// ns, so transfers, ticks and instructions keep meeting at the same time, and the order in
// which a class's members and the events between them are handled decides the result.
Target whole_ns_target() {
  Target t = target(TargetKind::trn1);
  t.tensor_clock_ghz = t.vector_clock_ghz = t.scalar_clock_ghz = t.gpsimd_clock_ghz =
      t.sync_clock_ghz = 1.0;
  t.dma_engine_bytes_per_ns = t.dma_engine_peak_bytes_per_ns = 16;
  t.dma_small_transfer_bytes_per_ns = 16;
  t.dma_descriptor_ns = 2;
  t.dma_trigger_latency_ns = 1024;
  t.dma_semaphore_write_ns = 4;
  t.hbm_gbps_per_chip = 512;
  return t;
}

TEST(DmaEngineClasses, ProgramsWhoseTimesMeetGiveTheSameBits) {
  const Target t = whole_ns_target();
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    for (bool mirrored : {false, true}) {
      const Program p =
          mirrored ? mirrored_program(seed, 40) : random_program(seed, 1 + seed % 2, 120);
      const std::string what =
          std::string(mirrored ? "mirrored" : "random") + " seed " + std::to_string(seed);
      expect_classes_change_nothing(t, p, what);
    }
  }
}

// A functional run takes the same path through the DMA engines.
TEST(DmaEngineClasses, AFunctionalRunKeepsTheSameTimes) {
  const Target& t = target(TargetKind::trn1);
  for (uint64_t seed = 100; seed < 104; ++seed)
    expect_classes_change_nothing(t, random_program(seed, 1, 80),
                                  "functional seed " + std::to_string(seed), /*functional=*/true);
}

}  // namespace
}  // namespace neuronc::device
