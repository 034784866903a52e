// Partitioning into device and host partitions.
#include "passes/partition.h"

#include <gtest/gtest.h>

#include "ir/printer.h"

namespace neuronc::passes {
namespace {

std::string describe(const PartitionPlan& plan) {
  std::string s;
  for (const Partition& p : plan.partitions) {
    s += p.kind == PartitionKind::device ? "device[" : "host[";
    for (size_t i = 0; i < p.nodes.size(); ++i) s += (i ? " " : "") + p.nodes[i]->name();
    s += "] in(";
    for (size_t i = 0; i < p.inputs.size(); ++i) s += (i ? " " : "") + p.inputs[i]->name();
    s += ") out(";
    for (size_t i = 0; i < p.outputs.size(); ++i) s += (i ? " " : "") + p.outputs[i]->name();
    s += ") ";
  }
  return s;
}

TEST(Partition, AllDeviceIsOnePartition) {
  auto g = ir::parse(R"(graph {
  input %x : f32[4]
  %a : f32[4] = aten.relu.default(%x)
  %b : f32[4] = aten.neg.default(%a)
  output %b
})");
  PartitionPlan plan = partition_graph(*g);
  EXPECT_EQ(describe(plan), "device[a b] in(x) out(b) ");
  EXPECT_TRUE(plan.host_reasons.empty());
}

TEST(Partition, IndependentDeviceWorkStaysTogetherAroundAHostOp) {
  // Written order alternates device/host/device, but %c does not depend on the host op, so it
  // joins the first device partition: two partitions, not three.
  auto g = ir::parse(R"(graph {
  input %x : f32[8]
  %a : f32[8] = aten.relu.default(%x)
  %f : c64[5] = aten.fft_rfft.default(%a)
  %c : f32[8] = aten.neg.default(%x)
  %m : f32[5] = aten.abs.default(%f)
  %d : f32[8] = aten.cumsum.default(%c) {dim = 0}
  output %m
  output %d
})");
  PartitionPlan plan = partition_graph(*g);
  EXPECT_EQ(describe(plan), "device[a c d] in(x) out(a d) host[f m] in(a) out(m) ");
  ASSERT_EQ(plan.host_reasons.size(), 2u);
  EXPECT_EQ(plan.host_reasons[0].reason, "no NeuronCore lowering for aten.fft_rfft.default");
  EXPECT_EQ(plan.host_reasons[1].reason,
            "complex operand 'f' (the NeuronCore has no complex types)");
}

TEST(Partition, ChainThroughHostNeedsThreePartitions) {
  auto g = ir::parse(R"(graph {
  input %x : f32[8]
  %a : f32[8] = aten.relu.default(%x)
  %d : f32[7] = aten.diff.default(%a, _, _)
  %b : f32[7] = aten.neg.default(%d)
  output %b
})");
  PartitionPlan plan = partition_graph(*g);
  EXPECT_EQ(describe(plan), "device[a] in(x) out(a) host[d] in(a) out(d) device[b] in(d) out(b) ");
}

TEST(Partition, UnknownOpsAreUnsupported) {
  auto g = ir::parse(R"(graph {
  input %x : f32[8]
  %h : f32[8] = aten.bincount.default(%x)
  output %h
})");
  PartitionPlan plan = partition_graph(*g);
  ASSERT_EQ(plan.unsupported.size(), 1u);
  EXPECT_EQ(plan.unsupported[0].node->name(), "h");
  EXPECT_EQ(plan.unsupported[0].reason, "operator is not in neuronc's registry");
}

}  // namespace
}  // namespace neuronc::passes

#include "passes/specialize_shapes.h"

namespace neuronc::passes {
namespace {

TEST(SpecializeShapes, BindsSymbolsThroughShapeRules) {
  auto g = ir::parse(R"(graph {
  sym s0 [2, 16]
  input %x : f32[s0, 6]
  %v : f32[2*s0, 3] = aten.view.default(%x) {size = [2*s0, 3]}
  %r : f32[2*s0, 3] = aten.relu.default(%v)
  output %r
})");
  SpecializeShapes pass({{"s0", 4}});
  pass.run(*g);
  EXPECT_EQ(ir::print(*g), R"(graph {
  sym s0 [2, 16]
  input %x : f32[4, 6]
  %v : f32[8, 3] = aten.view.default(%x) {size = [8, 3]}
  %r : f32[8, 3] = aten.relu.default(%v)
  output %r
}
)");
  SpecializeShapes out_of_range({{"s0", 17}});
  auto g2 = ir::parse("graph {\n sym s0 [2, 16]\n input %x : f32[s0]\n output %x\n}");
  try {
    out_of_range.run(*g2);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_STREQ(e.what(), "symbol 's0' = 17 is outside its range [2, 16]");
  }
  SpecializeShapes unknown({{"batch", 1}});
  EXPECT_THROW(unknown.run(*g2), ir::Error);
}

// A product symbol takes the product of its factors' values and is never bound on its own.
TEST(SpecializeShapes, ProductSymbolsFollowTheirFactors) {
  const char* text = R"(graph {
  sym b [1, 16]
  sym s [8, 128]
  input %x : f32[b, s, 4]
  %v : f32[b*s, 4] = aten.view.default(%x) {size = [b*s, 4]}
  output %v
})";
  auto g = ir::parse(text);
  SpecializeShapes({{"b", 3}, {"s", 40}}).run(*g);
  EXPECT_EQ(ir::print(*g), R"(graph {
  sym b [1, 16]
  sym s [8, 128]
  input %x : f32[3, 40, 4]
  %v : f32[120, 4] = aten.view.default(%x) {size = [120, 4]}
  output %v
}
)");
  auto g2 = ir::parse(text);
  try {
    SpecializeShapes({{"b*s", 120}}).run(*g2);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_STREQ(e.what(), "symbol 'b*s' is a product of other symbols: bind its factors");
  }
}

}  // namespace
}  // namespace neuronc::passes
