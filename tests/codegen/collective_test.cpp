// Collectives (neuronc.all_reduce, neuronc.all_gather) and core replication: a one-rank
// program compiled by codegen, replicated over the cores of one HBM arena, computes on each
// core what the collective promises, with the race checker on, and pays the collective's cost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "codegen/kernel_formation.h"
#include "device/replicate.h"
#include "device/simulator.h"
#include "device/verifier.h"
#include "harness.h"
#include "ir/op_registry.h"
#include "tests/device/same_timing.h"

namespace neuronc::codegen::testing {
namespace {

using ::testing::HasSubstr;

const device::Target& trn1() {
  return device::target(device::TargetKind::trn1);
}

uint64_t aligned_stride(uint64_t hbm_size) {
  return (hbm_size + 4095) / 4096 * 4096;
}

// A graph compiled for one rank, replicated over `cores` cores and run on one arena; input
// element i of core r is `input(r, i)` (f32 inputs only).
struct CoreRun {
  CompiledPartition part;
  device::Program program;
  uint64_t stride = 0;
  std::vector<std::byte> hbm;
  device::RunReport report;
  double collective_ns = 0;  // the cost model's time of the program's first collective

  // Element i of output `k` as core r holds it.
  float output(uint32_t r, size_t k, int64_t i) const {
    const TensorBinding& b = part.outputs.at(k);
    return device::load_f32(hbm.data() + r * stride + b.offset + i * 4, b.dtype);
  }
};

CoreRun run_on_cores(const ir::Graph& g, uint32_t cores,
                     const std::function<float(uint32_t, int64_t)>& input,
                     CodegenOptions opts = {}) {
  CoreRun run;
  run.part = compile_whole(g, trn1(), opts);
  run.stride = aligned_stride(run.part.program.hbm_size);
  device::Result<device::Program> copies =
      device::replicate_cores(run.part.program, cores, run.stride);
  EXPECT_TRUE(copies.is_ok()) << copies.status().message();
  if (!copies.is_ok()) return run;
  run.program = std::move(copies).value();
  run.hbm.assign(run.program.hbm_size, std::byte{0});
  for (uint32_t r = 0; r < cores; ++r) {
    std::byte* base = run.hbm.data() + r * run.stride;
    for (const TensorBinding& b : run.part.inputs) {
      EXPECT_EQ(b.dtype, device::DType::f32);
      for (int64_t i = 0; i < static_cast<int64_t>(b.bytes / 4); ++i)
        device::store_f32(base + b.offset + i * 4, b.dtype, input(r, i));
    }
    for (const ConstantBinding& c : run.part.constants)
      std::memcpy(base + c.offset, c.data.data(), c.data.size());
  }
  device::SimulatorOptions so;
  so.check_races = true;
  so.poison = true;
  so.trace = true;
  device::Simulator sim(trn1(), so);
  auto rep = sim.run(run.program, run.hbm);
  if (!rep.is_ok()) throw std::runtime_error("simulator: " + rep.status().message());
  run.report = *rep;
  for (const auto& stream : run.program.cores[0].streams)
    for (const device::Instruction& in : stream)
      if (const auto* c = std::get_if<device::Collective>(&in.op); c && run.collective_ns == 0)
        run.collective_ns = sim.cost_model().collective_ns(*c, static_cast<int>(cores));
  return run;
}

std::vector<const device::Collective*> collectives(const device::CoreProgram& core) {
  std::vector<const device::Collective*> out;
  for (const auto& stream : core.streams)
    for (const device::Instruction& in : stream)
      if (const auto* c = std::get_if<device::Collective>(&in.op)) out.push_back(c);
  return out;
}

// The collective's span on the trace: from the last core's arrival to completion.
double traced_collective_ns(const device::RunReport& r) {
  double ns = 0;
  for (const device::TraceEvent& e : r.trace)
    if (e.unit == "collective") ns += e.end_ns - e.start_ns;
  return ns;
}

float x_value(uint32_t r, int64_t i) {
  return static_cast<float>(r * 100 + i) * 0.5f;
}

constexpr const char* kAllGather = R"(graph {
  input %x : f32[4, 8]
  %y : f32[2, 4, 8] = neuronc.all_gather.default(%x) {ranks = 2}
  output %y
})";

TEST(Collective, AllGatherGivesEveryCoreEachCoresInput) {
  auto g = ir::parse(kAllGather);
  CoreRun run = run_on_cores(*g, 2, x_value);
  ASSERT_EQ(run.program.cores.size(), 2u);
  for (const device::CoreProgram& core : run.program.cores) {
    ASSERT_EQ(collectives(core).size(), 1u);
    EXPECT_EQ(collectives(core)[0]->kind, device::CollectiveKind::all_gather);
    EXPECT_EQ(core.stream(device::Engine::gpsimd).size(), 1u);
  }
  for (uint32_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 2 * 32; ++i)
      EXPECT_EQ(run.output(r, 0, i), x_value(static_cast<uint32_t>(i / 32), i % 32))
          << "core " << r << " element " << i;
  // The run pays the ring all-gather: (n - 1) hops and 128 bytes per rank over the link.
  EXPECT_GT(run.collective_ns, 0);
  EXPECT_NEAR(traced_collective_ns(run.report), run.collective_ns, 1e-6);
  EXPECT_GE(run.report.total_time_ns, run.collective_ns);
}

constexpr const char* kScaledAllReduce = R"(graph {
  input %x : f32[4, 8]
  %m : f32[4, 8] = aten.mul.Scalar(%x) {other = 2}
  %y : f32[4, 8] = neuronc.all_reduce.default(%m) {ranks = 2}
  output %y
})";

TEST(Collective, AllReduceSumsTheCoresDoubledInputs) {
  auto g = ir::parse(kScaledAllReduce);
  CoreRun run = run_on_cores(*g, 2, x_value);
  // The mul is a kernel of its own: a collective fuses with nothing.
  EXPECT_EQ(run.part.stats.kernels, 2u);
  for (uint32_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_EQ(run.output(r, 0, i), 2 * x_value(0, i) + 2 * x_value(1, i))
          << "core " << r << " element " << i;
  EXPECT_GT(run.collective_ns, 0);
  EXPECT_NEAR(traced_collective_ns(run.report), run.collective_ns, 1e-6);
  EXPECT_GE(run.report.total_time_ns, run.collective_ns);
  // Without the collective the same program is faster by at least its cost.
  auto plain = ir::parse(R"(graph {
  input %x : f32[4, 8]
  %y : f32[4, 8] = aten.mul.Scalar(%x) {other = 2}
  output %y
})");
  CoreRun base = run_on_cores(*plain, 2, x_value);
  EXPECT_GE(run.report.total_time_ns, base.report.total_time_ns + run.collective_ns);
}

TEST(Collective, NeverFusesWithItsNeighbours) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 8]
  %m : f32[4, 8] = aten.mul.Scalar(%x) {other = 2}
  %y : f32[4, 8] = neuronc.all_reduce.default(%m) {ranks = 2}
  %z : f32[4, 8] = aten.relu.default(%y)
  output %z
})");
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  const std::vector<const ir::Value*> outputs = {g->find_value("z")};
  const PartitionScope scope(nodes, outputs);
  const KernelFormation f = form_kernels(scope, trn1(), {});
  for (const ir::Node* n : nodes) EXPECT_FALSE(f.absorbed(n)) << n->name();
  EXPECT_TRUE(f.kernel_at(nodes[1]).fused.empty());
  // The relu's load waits for the collective to complete on every core.
  CoreRun run = run_on_cores(*g, 2, [](uint32_t r, int64_t i) {
    return r == 0 ? static_cast<float>(i) : -2.0f * static_cast<float>(i) + 3.0f;
  });
  EXPECT_EQ(run.part.stats.kernels, 3u);
  for (uint32_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_EQ(run.output(r, 0, i), std::max(0.0f, 2.0f * (3.0f - static_cast<float>(i))))
          << "core " << r << " element " << i;
}

// Strided views are read and written through their access patterns: a transposed source, and
// a six-dim permutation that no pattern of five dims holds (one collective per leading block).
TEST(Collective, ReadsViewsOfAnyStrides) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 8]
  %t : f32[8, 4] = aten.permute.default(%x) {dims = [1, 0]}
  %y : f32[8, 4] = neuronc.all_reduce.default(%t) {ranks = 2}
  output %y
})");
  CoreRun run = run_on_cores(*g, 2, x_value);
  for (uint32_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 32; ++i) {
      const int64_t src = (i % 4) * 8 + i / 4;  // y[a, b] = x[b, a]
      EXPECT_EQ(run.output(r, 0, i), x_value(0, src) + x_value(1, src));
    }

  auto g6 = ir::parse(R"(graph {
  input %x : f32[2, 3, 2, 3, 2, 3]
  %t : f32[3, 2, 3, 2, 3, 2] = aten.permute.default(%x) {dims = [5, 4, 3, 2, 1, 0]}
  %y : f32[2, 3, 2, 3, 2, 3, 2] = neuronc.all_gather.default(%t) {ranks = 2}
  output %y
})");
  CoreRun run6 = run_on_cores(*g6, 2, x_value);
  // Six dims, none mergeable: the two leading ones are looped over, 3 x 2 collectives, each
  // waiting for the one before it (they complete in any order on the device).
  const auto cs = collectives(run6.program.cores[0]);
  EXPECT_EQ(cs.size(), 6u);
  const std::vector<int64_t> shape = {3, 2, 3, 2, 3, 2}, xshape = {2, 3, 2, 3, 2, 3};
  for (uint32_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 2 * 216; ++i) {
      const uint32_t rank = static_cast<uint32_t>(i / 216);
      int64_t rem = i % 216, src = 0;
      std::vector<int64_t> idx(6);
      for (int d = 5; d >= 0; --d) idx[d] = rem % shape[d], rem /= shape[d];
      for (int d = 0; d < 6; ++d) src = src * xshape[d] + idx[5 - d];  // t[a..f] = x[f..a]
      ASSERT_EQ(run6.output(r, 0, i), x_value(rank, src)) << "core " << r << " element " << i;
    }
}

// The emitter gives the collective unit its own semaphore (after the engines' and the DMA
// queues') and chains collectives, so that "semaphore >= rank" keeps meaning "done".
TEST(Collective, CollectivesSignalTheirOwnSemaphoreInOrder) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 8]
  input %w : f32[16]
  %a : f32[4, 8] = neuronc.all_reduce.default(%x) {ranks = 2}
  %b : f32[2, 16] = neuronc.all_gather.default(%w) {ranks = 2}
  output %a
  output %b
})");
  const CompiledPartition part = compile_whole(*g, trn1());
  const device::Program& p = part.program;
  const uint16_t cc = static_cast<uint16_t>(p.num_semaphores - 1);
  EXPECT_EQ(p.num_semaphores, device::kNumEngines + 3u);  // engines, 2 DMA queues, collectives
  const auto& gpsimd = p.cores[0].stream(device::Engine::gpsimd);
  std::vector<const device::Instruction*> cs;
  for (const device::Instruction& in : gpsimd)
    if (std::holds_alternative<device::Collective>(in.op)) cs.push_back(&in);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_THAT(cs[0]->signals, ::testing::Contains(device::SemaphoreSignal{cc, 1}));
  EXPECT_THAT(cs[1]->waits, ::testing::Contains(device::SemaphoreWait{cc, 1}));
  // A program without a collective keeps its semaphore count.
  auto plain = ir::parse(R"(graph {
  input %x : f32[4, 8]
  %y : f32[4, 8] = aten.relu.default(%x)
  output %y
})");
  EXPECT_EQ(compile_whole(*plain, trn1()).program.num_semaphores, device::kNumEngines + 2u);

  CoreRun run = run_on_cores(*g, 2, x_value);
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(run.output(r, 0, 5), x_value(0, 5) + x_value(1, 5));
    EXPECT_EQ(run.output(r, 1, 20), x_value(1, 4));
  }
}

// A collective completes on its own unit, long after the stream that triggered it moves on:
// a later store from the same stream into the bytes it reads (m's scratch, reused for r) waits
// for its completion.
TEST(Collective, LaterWritesWaitForTheCollectiveToComplete) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 8]
  input %y : f32[4, 8]
  %m : f32[4, 8] = aten.mul.Scalar(%x) {other = 2}
  %a : f32[4, 8] = neuronc.all_reduce.default(%m) {ranks = 2}
  %r : f32[4, 8] = aten.relu.default(%y)
  %o : f32[4, 8] = aten.mul.Scalar(%r) {other = 3}
  %p : f32[4, 8] = aten.add.Scalar(%r) {other = 1}
  output %a
  output %o
  output %p
})");
  for (bool forward : {false, true}) {
    CodegenOptions opts;
    opts.forward_stores = forward;
    CoreRun run = run_on_cores(*g, 2, x_value, opts);
    EXPECT_EQ(run.part.stats.hbm_scratch_bytes, 128u);  // m and r share their bytes
    for (uint32_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < 32; ++i) {
        EXPECT_EQ(run.output(r, 0, i), 2 * x_value(0, i) + 2 * x_value(1, i));
        EXPECT_EQ(run.output(r, 1, i), 3 * x_value(r, i));
      }
  }
}

// A long all_reduce then a short all_gather: on the device the second would complete first;
// chained, each consumer reads its collective's complete result.
TEST(Collective, ConsumersOfChainedCollectivesReadCompleteResults) {
  auto g = ir::parse(R"(graph {
  input %x : f32[128, 512]
  input %w : f32[4]
  %a : f32[128, 512] = neuronc.all_reduce.default(%x) {ranks = 2}
  %b : f32[2, 4] = neuronc.all_gather.default(%w) {ranks = 2}
  %ra : f32[128, 512] = aten.relu.default(%a)
  %rb : f32[2, 4] = aten.relu.default(%b)
  output %ra
  output %rb
})");
  CoreRun run = run_on_cores(*g, 2, x_value);
  for (uint32_t r = 0; r < 2; ++r) {
    for (int64_t i = 0; i < 128 * 512; i += 1001)
      ASSERT_EQ(run.output(r, 0, i), x_value(0, i) + x_value(1, i)) << i;
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(run.output(r, 1, i), x_value(i / 4, i % 4));
  }
}

TEST(Collective, PartitionCollectivesMustAgreeOnTheRanks) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 8]
  %a : f32[4, 8] = neuronc.all_reduce.default(%x) {ranks = 2}
  %b : f32[4, 8] = neuronc.all_reduce.default(%a) {ranks = 4}
  output %b
})");
  try {
    compile_whole(*g, trn1());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("node 'b' (neuronc.all_reduce.default)"));
    EXPECT_THAT(e.what(), HasSubstr("collective over 4 ranks, but node 'a' runs over 2"));
  }
}

TEST(Collective, ShapeRules) {
  auto g = ir::parse(R"(graph {
  input %x : bf16[3, 5]
})");
  ir::Value* x = g->find_value("x");
  const ir::Node* ag = g->append("neuronc.all_gather.default", {x}, {{"ranks", int64_t{4}}});
  EXPECT_EQ(g->type_to_string(ag->output()->type()), "bf16[4, 3, 5]");
  const ir::Node* ar = g->append("neuronc.all_reduce.default", {x}, {{"ranks", int64_t{1}}});
  EXPECT_EQ(g->type_to_string(ar->output()->type()), "bf16[3, 5]");
  EXPECT_EQ(ar->info()->category, ir::OpCategory::collective);
  EXPECT_EQ(ar->info()->placement, ir::Placement::device);
  for (const char* op : {"neuronc.all_reduce.default", "neuronc.all_gather.default"}) {
    for (int64_t ranks : {0, -2}) {
      try {
        g->append(op, {x}, {{"ranks", ranks}});
        FAIL() << op << " with ranks " << ranks;
      } catch (const ir::Error& e) {
        EXPECT_THAT(e.what(), HasSubstr(std::string(op) +
                                        ": argument 'ranks': expected the "
                                        "number of cores taking part (>= 1), "
                                        "found " +
                                        std::to_string(ranks)));
      }
    }
    EXPECT_THROW(g->append(op, {x}), ir::Error);  // ranks has no default
  }
}

// --- replicate_cores ----------------------------------------------------------------------------

device::Instruction inst(device::Operation op, std::vector<device::SemaphoreWait> waits = {},
                         std::vector<device::SemaphoreSignal> signals = {}) {
  device::Instruction i;
  i.op = std::move(op);
  i.waits = std::move(waits);
  i.signals = std::move(signals);
  return i;
}

// One core touching HBM through every kind of operand that can: a load, a store, an indirect
// gather (its table), an HBM-to-HBM copy and a collective; SBUF operands beside them.
device::Program one_core_program() {
  using namespace device;
  Program p;
  p.cores.resize(1);
  p.num_semaphores = 4;
  p.hbm_size = 6000;
  CoreProgram& c = p.cores[0];
  const MemRef tile = sbuf(0, 4, 256, DType::f32, 8);
  c.stream(Engine::sync)
      .push_back(inst(DmaCopy(tile, hbm(64, DType::f32, 4, 8, 8)), {}, {{0, 1, kThisCore}}));
  MemRef index = sbuf(0, 4, 0, DType::i32, 1);
  c.stream(Engine::gpsimd).push_back(inst(Iota{index, 0, 1, {}}, {}, {{1, 1, 0}}));
  DmaCopy gather(sbuf(0, 4, 512, DType::f32, 8), hbm(1024, DType::f32, 1, 8, 8));
  gather.row_index = index;
  gather.table_rows = 10;
  c.stream(Engine::sync).push_back(inst(gather, {{1, 1}}, {{2, 1, kThisCore}}));
  TensorScalar ts;
  ts.dst = tile;
  ts.src = tile;
  ts.op0 = AluOp::multiply;
  ts.operand0 = sbuf(0, 4, 128, DType::f32, 1);
  c.stream(Engine::vector).push_back(inst(ts, {{0, 1}, {2, 1}}, {{3, 1, kThisCore}}));
  c.stream(Engine::gpsimd)
      .push_back(inst(DmaCopy(hbm(2048, DType::f32, 4, 8, 8), tile, 1), {{3, 1}}));
  c.stream(Engine::sync)
      .push_back(inst(DmaCopy(hbm(3072, DType::f32, 4, 8, 8), hbm(64, DType::f32, 4, 8, 8))));
  Collective all;
  all.kind = CollectiveKind::all_reduce;
  all.dst = hbm(4096, DType::f32, 4, 8, 8);
  all.src = hbm(3072, DType::f32, 4, 8, 8);
  c.stream(Engine::gpsimd).push_back(inst(all));
  return p;
}

TEST(ReplicateCores, MovesEveryHbmOperandByTheCoreStride) {
  const device::Program one = one_core_program();
  ASSERT_TRUE(device::verify_program(trn1(), one).is_ok());
  constexpr uint32_t kCores = 3;
  constexpr uint64_t kStride = 8192;
  const device::Program p = device::replicate_cores(one, kCores, kStride).value();
  ASSERT_EQ(p.cores.size(), kCores);
  EXPECT_EQ(p.hbm_size, kCores * kStride);
  EXPECT_EQ(p.num_semaphores, one.num_semaphores);
  int hbm_operands = 0, other_operands = 0;
  for (uint32_t r = 0; r < kCores; ++r)
    for (int e = 0; e < device::kNumEngines; ++e) {
      const auto& want = one.cores[0].streams[e];
      const auto& got = p.cores[r].streams[e];
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].opcode(), want[i].opcode());
        EXPECT_EQ(got[i].waits, want[i].waits);
        ASSERT_EQ(got[i].signals.size(), want[i].signals.size());
        for (size_t s = 0; s < want[i].signals.size(); ++s) {
          EXPECT_EQ(got[i].signals[s].semaphore, want[i].signals[s].semaphore);
          // An explicit core 0 is the copy's own core.
          EXPECT_EQ(got[i].signals[s].core,
                    want[i].signals[s].core == device::kThisCore ? device::kThisCore : r);
        }
        std::vector<device::MemRef> a, b;
        device::Operation wop = want[i].op, gop = got[i].op;
        device::for_each_operand(wop, [&](device::MemRef& m, device::Access) { a.push_back(m); });
        device::for_each_operand(gop, [&](device::MemRef& m, device::Access) { b.push_back(m); });
        ASSERT_EQ(a.size(), b.size());
        for (size_t k = 0; k < a.size(); ++k) {
          device::MemRef moved = a[k];
          if (moved.memory == device::MemoryKind::hbm) {
            moved.offset += r * kStride;
            ++hbm_operands;
          } else {
            ++other_operands;
          }
          EXPECT_EQ(b[k], moved) << "core " << r << " " << device::engine_name(device::Engine(e))
                                 << "[" << i << "] operand " << k;
        }
      }
    }
  EXPECT_EQ(hbm_operands, 7 * static_cast<int>(kCores));  // load, gather, store, copy x2, cc x2
  EXPECT_GT(other_operands, 0);
  EXPECT_TRUE(device::verify_program(trn1(), p).is_ok())
      << device::verify_program(trn1(), p).message();
}

// The timing model gives a copy of core 0 core 0's table of costs (ProgramTiming): its times,
// and where its signals to an explicit core go, are those of timing its own instructions.
TEST(ReplicateCores, ACopyOfCoreZeroIsTimedAsItsOwnCore) {
  const device::Program one = one_core_program();  // gpsimd[0] signals core 0 explicitly
  const device::Program copies = device::replicate_cores(one, 3, 8192).value();
  // The same cores in 64 more bytes of arena: no longer three strides, so no core is taken for a
  // copy of core 0 and each is timed from its own instructions.
  device::Program own = copies;
  own.hbm_size += 64;
  device::SimulatorOptions so;
  so.functional = false;
  so.trace = true;
  device::Simulator sim(trn1(), so);
  const auto a = sim.run(copies, {});
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  const auto b = sim.run(own, {});
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  ASSERT_EQ(a->cores.size(), 3u);
  device::device_test::expect_same_timing(*a, *b);
}

// Simulator::run_replicated times the copies replicate_cores would make without making them:
// the same report, trace included, as a run of the copies; and it refuses what needs each copy's
// own addresses, or a replication the verifier refuses.
TEST(ReplicateCores, CopiesTimedWithoutBeingMadeReportAsTheCopiesDo) {
  const device::Program one = one_core_program();  // gpsimd[0] signals core 0 explicitly
  device::SimulatorOptions so;
  so.functional = false;
  so.trace = true;
  device::Simulator sim(trn1(), so);
  for (uint32_t n : {1u, 2u, 3u, 8u}) {
    SCOPED_TRACE("cores " + std::to_string(n));
    const device::Program copies = device::replicate_cores(one, n, 8192).value();
    const auto a = sim.run(copies, {});
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    const auto b = sim.run_replicated(one, n, 8192);
    ASSERT_TRUE(b.is_ok()) << b.status().message();
    ASSERT_EQ(b->cores.size(), n);
    device::device_test::expect_same_timing(*a, *b);
  }
  auto error = [&](device::Simulator& s, const device::Program& p, uint32_t n, uint64_t stride) {
    const auto r = s.run_replicated(p, n, stride);
    return r.is_ok() ? std::string() : r.status().message();
  };
  // What the verifier refuses of the replication: an operand past the stride, a bad stride.
  EXPECT_THAT(error(sim, one, 2, 4096),
              HasSubstr("gpsimd[2] (collective): hbm f32 [0:4] @4096: hbm bytes [4096, 4224) are "
                        "outside the arena of 4096 bytes"));
  EXPECT_THAT(error(sim, one, 2, 8100),
              HasSubstr("core stride 8100 bytes: expected a non-zero multiple of 64"));
  EXPECT_THAT(error(sim, device::replicate_cores(one, 2, 8192).value(), 2, 8192),
              HasSubstr("takes core 0 alone, but the program has 2 cores"));
  // A functional or race-checked run needs each copy's own HBM addresses.
  for (bool functional : {true, false}) {
    device::SimulatorOptions o;
    o.functional = functional;
    o.check_races = !functional;
    device::Simulator s(trn1(), o);
    EXPECT_THAT(error(s, one, 2, 8192), HasSubstr("make them with replicate_cores"));
  }
}

TEST(ReplicateCores, RefusesWhatItCannotReplicate) {
  const device::Program one = one_core_program();
  auto error = [&](const device::Program& p, uint32_t cores, uint64_t stride) -> std::string {
    const device::Result<device::Program> r = device::replicate_cores(p, cores, stride);
    return r.is_ok() ? "" : r.status().message();
  };
  EXPECT_THAT(error(one, 2, 8100),
              HasSubstr("core stride 8100 bytes: expected a non-zero multiple of 64"));
  EXPECT_THAT(error(one, 2, 4096),
              HasSubstr("arena of 6000 bytes is larger than the core stride of 4096"));
  EXPECT_THAT(error(one, 0, 8192), HasSubstr("replication over 0 cores: expected 1 to 65535"));
  const device::Program two = device::replicate_cores(one, 2, 8192).value();
  EXPECT_THAT(error(two, 2, 32768), HasSubstr("expected a one-core program, found 2 cores"));
  // An operand past the stride (the program's hbm_size understated).
  device::Program bad = one;
  bad.hbm_size = 4096;
  EXPECT_THAT(error(bad, 2, 4096),
              HasSubstr("gpsimd[2] (collective) touches hbm bytes [4096, 4224) outside the core "
                        "stride of 4096 bytes"));
  // A signal to another core of a one-core program.
  device::Program other = one;
  other.cores[0].stream(device::Engine::sync)[0].signals[0].core = 1;
  EXPECT_THAT(error(other, 2, 8192), HasSubstr("sync[0] (dma_copy) signals core 1"));
}

}  // namespace
}  // namespace neuronc::codegen::testing
