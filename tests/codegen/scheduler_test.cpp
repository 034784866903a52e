// codegen: instruction scheduling within a kernel (scheduler.h). The reordered kernel computes
// bit-identical results, keeps every conflicting pair of instructions (and each DMA queue) in
// program order, and is faster where the lowering's order makes engines wait on each other.
#include "codegen/scheduler.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

using device::DType;
using device::Engine;

// BERT-shaped attention: 12 heads of 128 x 64 after a projection ([1, S, H, D] seen as
// [1, H, S, D]) with an additive mask, the case the head-group pipeline emits head by head.
std::string attention() {
  return R"(graph {
  input %qp : bf16[1, 128, 12, 64]
  input %kp : bf16[1, 128, 12, 64]
  input %vp : bf16[1, 128, 12, 64]
  input %m : bf16[1, 1, 128, 128]
  %q : bf16[1, 12, 128, 64] = aten.transpose.int(%qp) {dim0 = 1, dim1 = 2}
  %k : bf16[1, 12, 128, 64] = aten.transpose.int(%kp) {dim0 = 1, dim1 = 2}
  %v : bf16[1, 12, 128, 64] = aten.transpose.int(%vp) {dim0 = 1, dim1 = 2}
  %o : bf16[1, 12, 128, 64] = aten.scaled_dot_product_attention.default(%q, %k, %v, %m)
  output %o
})";
}

TEST(Scheduler, AttentionIsFasterAndBitIdentical) {
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    const OptionComparison c = compare_option(
        attention(), kind, 2e-2, [](CodegenOptions& o, bool on) { o.schedule = on; }, 5, 9);
    print_comparison("attention 12 x 128 x 64, scheduled", kind, c);
    EXPECT_EQ(c.off.part.stats.kernels_scheduled, 0u);
    EXPECT_GE(c.on.part.stats.kernels_scheduled, 1u);
    EXPECT_EQ(c.on_dma.bytes, c.off_dma.bytes);
    EXPECT_LT(c.on.report.total_time_ns, 0.95 * c.off.report.total_time_ns);
  }
}

// An encoder block's attention half: Q, K, V projections, attention, output projection.
std::string block() {
  std::string t = "graph {\n  input %x : bf16[2, 128, 256]\n";
  for (const char* w : {"wq", "wk", "wv", "wo"})
    t += std::string("  input %") + w + " : bf16[256, 256]\n";
  for (const char* p : {"q", "k", "v"})
    t += std::string("  %") + p + "l : bf16[2, 128, 256] = aten.linear.default(%x, %w" + p +
         ")\n  %" + p + "v : bf16[2, 128, 4, 64] = aten.view.default(%" + p +
         "l) {size = [2, 128, 4, 64]}\n  %" + p +
         " : bf16[2, 4, 128, 64] = " + "aten.transpose.int(%" + p + "v) {dim0 = 1, dim1 = 2}\n";
  t += R"(  %a : bf16[2, 4, 128, 64] = aten.scaled_dot_product_attention.default(%q, %k, %v)
  %at : bf16[2, 128, 4, 64] = aten.transpose.int(%a) {dim0 = 1, dim1 = 2}
  %av : bf16[2, 128, 256] = aten.view.default(%at) {size = [2, 128, 256]}
  %o : bf16[2, 128, 256] = aten.linear.default(%av, %wo)
  output %o
})";
  return t;
}

// Across kernels: the program order is timed against the scheduler's candidates and the
// fastest kept, so the result is never slower, and bit-identical.
TEST(Scheduler, ProgramOrderAcrossKernelsIsTimedAndNeverSlower) {
  int kept = 0;
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    const OptionComparison c = compare_option(
        block(), kind, 5e-2,
        [](CodegenOptions& o, bool on) {
          o.schedule_windows = on ? std::vector<size_t>{4096} : std::vector<size_t>{};
        },
        3, 4);
    print_comparison("encoder attention block, scheduled across kernels", kind, c);
    EXPECT_FALSE(c.off.part.stats.program_scheduled);
    EXPECT_EQ(c.on_dma.bytes, c.off_dma.bytes);
    if (c.on.part.stats.program_scheduled) {
      ++kept;
      EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns);
    } else {
      EXPECT_EQ(c.on.report.total_time_ns, c.off.report.total_time_ns);
    }
  }
  EXPECT_GT(kept, 0);
}

// -O3's wider search (windows of 1024, 4096 and 16384) includes -O2's candidates, so it is
// never slower, and bit-identical.
TEST(Scheduler, WiderSearchIsNeverSlower) {
  for (device::TargetKind kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
    const OptionComparison c = compare_option(
        block(), kind, 5e-2,
        [](CodegenOptions& o, bool on) {
          o.schedule_windows =
              on ? std::vector<size_t>{1024, 4096, 16384} : std::vector<size_t>{4096};
        },
        3, 4);
    print_comparison("encoder attention block, -O3 search", kind, c);
    EXPECT_LE(c.on.report.total_time_ns, c.off.report.total_time_ns);
  }
}

// Both SBUF placements are timed and the faster kept: never slower than the recent-overlap
// placement alone, and the results are the same bits.
TEST(Scheduler, RegionPlacementSearchIsNeverSlower) {
  for (device::TargetKind kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
    const OptionComparison c = compare_option(
        block(), kind, 5e-2,
        [](CodegenOptions& o, bool on) {
          o.region_policies =
              on ? std::vector<RegionPolicy>{RegionPolicy::recent, RegionPolicy::ring}
                 : std::vector<RegionPolicy>{RegionPolicy::recent};
        },
        3, 4);
    print_comparison("encoder attention block, ring placement also tried", kind, c);
    EXPECT_LE(c.on.report.total_time_ns, c.off.report.total_time_ns);
  }
}

// Random kernels over a few small SBUF buffers, loads and stores: after scheduling, every pair
// of instructions whose footprints conflict (one writes what the other touches) and every pair
// of transfers on the same queue is still in program order.
TEST(Scheduler, KeepsConflictingPairsAndQueuesInOrder) {
  const device::CostModel cost(device::target(device::TargetKind::trn1));
  std::mt19937 rng(11);
  int reordered = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<PendingInstruction> insts;
    const int n = 20 + static_cast<int>(rng() % 40);
    auto buf = [](uint32_t b) { return KernelBuilder::sb(b * 1024, 64, DType::f32, 256); };
    for (int i = 0; i < n; ++i) {
      const uint32_t a = rng() % 6, b = rng() % 6;
      PendingInstruction in;
      in.debug_id = static_cast<uint32_t>(i);
      switch (rng() % 5) {
        case 0: {
          in.role = DmaRole::load;
          in.op =
              device::DmaCopy{buf(a), device::hbm(4096 * (rng() % 4), DType::f32, 64, 256, 256), 0};
          break;
        }
        case 1: {
          in.role = DmaRole::store;
          in.op = device::DmaCopy{device::hbm(1 << 20, DType::f32, 64, 256, 256), buf(a), 0};
          break;
        }
        default: {
          device::TensorCopy c;
          c.dst = buf(a);
          c.src = buf(b == a ? (b + 1) % 6 : b);
          in.op = c;
          const Engine engines[] = {Engine::vector, Engine::scalar, Engine::gpsimd};
          in.engine = engines[rng() % 3];
        }
      }
      insts.push_back(std::move(in));
    }
    // `pos[i]`: where instruction i went. Transfers of one queue keep their order within a
    // kernel (`group`, or the whole sequence when `whole`).
    const auto check = [&](const std::vector<int>& pos, bool whole) {
      for (int p : pos) ASSERT_GE(p, 0);
      for (size_t i = 0; i < insts.size(); ++i) {
        const device::Operands oi = device::operands(insts[i].op);
        for (size_t j = i + 1; j < insts.size(); ++j) {
          const device::Operands oj = device::operands(insts[j].op);
          bool conflict = insts[i].role != DmaRole::none && insts[i].role == insts[j].role &&
                          (whole || insts[i].group == insts[j].group);
          auto any = [&](const device::MemRefs& x, const device::MemRefs& y) {
            for (const auto& u : x)
              for (const auto& v : y)
                if (overlaps(byte_rect(u), byte_rect(v))) return true;
            return false;
          };
          conflict = conflict || any(oi.writes, oj.reads) || any(oi.reads, oj.writes) ||
                     any(oi.writes, oj.writes);
          if (conflict) {
            EXPECT_LT(pos[i], pos[j]) << "trial " << trial << ": " << i << " " << j;
          }
        }
      }
    };
    std::vector<PendingInstruction> scheduled = insts;
    const ScheduleResult r = schedule_kernel(scheduled, cost);
    reordered += r.reordered;
    ASSERT_EQ(scheduled.size(), insts.size());
    std::vector<int> pos(insts.size(), -1);
    for (size_t k = 0; k < scheduled.size(); ++k) pos[scheduled[k].debug_id] = static_cast<int>(k);
    check(pos, true);
    if (!r.reordered) {
      for (size_t k = 0; k < scheduled.size(); ++k) EXPECT_EQ(scheduled[k].debug_id, k);
    } else {
      EXPECT_LT(r.scheduled_ns, r.program_order_ns);
    }
    // The same instructions as a program of kernels of 8, scheduled across kernels with a
    // window of 16: the candidates with transfers ordered per kernel, then per program.
    for (size_t i = 0; i < insts.size(); ++i) insts[i].group = static_cast<uint32_t>(i / 8);
    const auto orders = schedule_candidates(insts, cost, 16);
    ASSERT_EQ(orders.size(), 8u);
    for (size_t o = 0; o < orders.size(); ++o) {
      ASSERT_EQ(orders[o].size(), insts.size());
      std::vector<int> at(insts.size(), -1);
      for (size_t k = 0; k < orders[o].size(); ++k) {
        at[orders[o][k]] = static_cast<int>(k);
        // Nothing moves ahead of more than the window.
        EXPECT_LE(static_cast<int64_t>(orders[o][k]) - static_cast<int64_t>(k), 16);
      }
      check(at, o >= 4);
    }
  }
  EXPECT_GT(reordered, 0);  // the property is not checked on unchanged kernels only
}

// A chain in which every instruction reads what the previous one wrote has one order.
TEST(Scheduler, KeepsADependentChain) {
  const device::CostModel cost(device::target(device::TargetKind::trn2));
  std::vector<PendingInstruction> insts;
  for (uint32_t i = 0; i < 12; ++i) {
    PendingInstruction in;
    device::TensorCopy c;
    c.src = KernelBuilder::sb((i % 2) * 4096, 128, DType::f32, 512);
    c.dst = KernelBuilder::sb(((i + 1) % 2) * 4096, 128, DType::f32, 512);
    in.op = c;
    in.engine = i % 2 ? Engine::vector : Engine::scalar;
    in.debug_id = i;
    insts.push_back(std::move(in));
  }
  const ScheduleResult r = schedule_kernel(insts, cost);
  EXPECT_FALSE(r.reordered);
  EXPECT_GT(r.program_order_ns, 0);
  for (uint32_t i = 0; i < insts.size(); ++i) EXPECT_EQ(insts[i].debug_id, i);
}

}  // namespace
}  // namespace neuronc::codegen::testing
