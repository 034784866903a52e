// The stages compile_partition orchestrates, each on its own: kernel formation
// (kernel_formation.h), view lowering (view_lowering.h) and the HBM planner (hbm_plan.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/hbm_plan.h"
#include "codegen/kernel_formation.h"
#include "codegen/view_lowering.h"
#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const device::Target& trn1() {
  return device::target(device::TargetKind::trn1);
}

// The graph's nodes in order, its outputs, and lookup by result name.
struct Parsed {
  std::unique_ptr<ir::Graph> g;
  std::vector<const ir::Node*> nodes;
  std::vector<const ir::Value*> outputs;
  const ir::Node* operator[](const std::string& name) const {
    return g->find_value(name)->producer();
  }
};
Parsed parse(const std::string& text) {
  Parsed p{ir::parse(text), {}, {}};
  for (const auto& n : p.g->nodes()) p.nodes.push_back(n.get());
  for (const ir::GraphOutput& o : p.g->outputs()) p.outputs.push_back(o.value);
  return p;
}

// --- kernel formation ---------------------------------------------------------------------------

TEST(KernelFormation, ElementwiseChainIsOneKernelAtItsLastNode) {
  Parsed p = parse(R"(graph {
  input %x : f32[4, 8]
  input %y : f32[4, 8]
  %a : f32[4, 8] = aten.relu.default(%x)
  %b : f32[4, 8] = aten.mul.Tensor(%a, %y)
  %c : f32[4, 8] = aten.add.Tensor(%b, %x)
  output %c
})");
  const PartitionScope scope(p.nodes, p.outputs);
  const KernelFormation f = form_kernels(scope, trn1(), {});
  EXPECT_TRUE(f.absorbed(p["a"]));
  EXPECT_TRUE(f.absorbed(p["b"]));
  EXPECT_FALSE(f.absorbed(p["c"]));
  const KernelNodes k = f.kernel_at(p["c"]);
  EXPECT_EQ(k.root, p["c"]);
  EXPECT_THAT(k.fused, ElementsAre(p["a"], p["b"]));
  EXPECT_THAT(k.members, ElementsAre(p["a"], p["b"], p["c"]));

  // Nothing is fused without opts.fuse, and a value read outside the partition is not fused.
  CodegenOptions nofuse;
  nofuse.fuse = false;
  const KernelFormation g = form_kernels(scope, trn1(), nofuse);
  EXPECT_FALSE(g.absorbed(p["a"]) || g.absorbed(p["b"]));
  std::vector<const ir::Value*> outs = p.outputs;
  outs.push_back(p.g->find_value("a"));
  const PartitionScope scope2(p.nodes, outs);
  const KernelFormation h = form_kernels(scope2, trn1(), {});
  EXPECT_FALSE(h.absorbed(p["a"]));
  EXPECT_TRUE(h.absorbed(p["b"]));
}

// weight * norm(x) (bf16 LlamaRMSNorm, a layer norm's extra scale) is the norm kernel's
// epilogue; a weight of another dtype, or a product of two norms, is not.
TEST(KernelFormation, NormWeightMultiplyIsTheNormsEpilogue) {
  Parsed p = parse(R"(graph {
  input %x : bf16[2, 5, 64]
  input %w : bf16[64]
  input %v : f32[64]
  %y : bf16[2, 5, 64] = aten.rms_norm.default(%x, _) {normalized_shape = [64], eps = 1e-05}
  %z : bf16[2, 5, 64] = aten.mul.Tensor(%w, %y)
  %y2 : bf16[2, 5, 64] = aten.rms_norm.default(%x, _) {normalized_shape = [64], eps = 1e-05}
  %z2 : f32[2, 5, 64] = aten.mul.Tensor(%y2, %v)
  %y3 : bf16[2, 5, 64] = aten.rms_norm.default(%x, _) {normalized_shape = [64], eps = 1e-05}
  %z3 : bf16[2, 5, 64] = aten.mul.Tensor(%y3, %y3)
  output %z
  output %z2
  output %z3
})");
  const PartitionScope scope(p.nodes, p.outputs);
  const KernelFormation f = form_kernels(scope, trn1(), {});
  EXPECT_TRUE(f.absorbed(p["y"]));
  const KernelNodes k = f.kernel_at(p["z"]);
  EXPECT_EQ(k.root, p["y"]);
  EXPECT_THAT(k.fused, ElementsAre(p["z"]));
  EXPECT_FALSE(f.absorbed(p["y2"]));
  EXPECT_FALSE(f.absorbed(p["y3"]));
}

TEST(KernelFormation, ConvolutionResidualAndActivationAreItsEpilogue) {
  Parsed p = parse(R"(graph {
  input %x : f32[1, 8, 6, 6]
  param %w : f32[8, 8, 3, 3] "c.weight"
  %c : f32[1, 8, 6, 6] = aten.conv2d.default(%x, %w, _) {padding = [1, 1]}
  %s : f32[1, 8, 6, 6] = aten.add.Tensor(%c, %x)
  %r : f32[1, 8, 6, 6] = aten.relu.default(%s)
  output %r
})");
  const PartitionScope scope(p.nodes, p.outputs);
  const KernelFormation f = form_kernels(scope, trn1(), {});
  EXPECT_TRUE(f.absorbed(p["c"]) && f.absorbed(p["s"]));
  const KernelNodes k = f.kernel_at(p["r"]);
  EXPECT_EQ(k.root, p["c"]);
  EXPECT_THAT(k.fused, ElementsAre(p["s"], p["r"]));

  CodegenOptions no_residual;
  no_residual.fuse_residual = false;
  const KernelFormation g = form_kernels(scope, trn1(), no_residual);
  EXPECT_FALSE(g.absorbed(p["c"]));  // the add is a kernel of its own, reading c from HBM
  EXPECT_TRUE(g.absorbed(p["s"]));   // ... fused into the relu
}

TEST(KernelFormation, CastReadOnlyByMatmulOperandsIsReadThrough) {
  const std::string head = R"(graph {
  input %x : f32[4, 16]
  param %w : bf16[8, 16] "fc.weight"
  param %w2 : bf16[8, 16] "fc2.weight"
  %xb : bf16[4, 16] = aten._to_copy.default(%x) {dtype = #bf16}
  %y : bf16[4, 8] = aten.linear.default(%xb, %w, _)
  %z : bf16[4, 8] = aten.linear.default(%xb, %w2, _)
  output %y
  output %z
)";
  Parsed p = parse(head + "}");
  const PartitionScope scope(p.nodes, p.outputs);
  const KernelFormation f = form_kernels(scope, trn1(), {});
  ASSERT_EQ(f.read_through.size(), 1u);
  EXPECT_EQ(f.read_through.at(p.g->find_value("xb")), p.g->find_value("x"));
  // A third, element-wise reader keeps the cast a kernel of its own.
  Parsed q = parse(head + "  %e : bf16[4, 16] = aten.neg.default(%xb)\n  output %e\n}");
  const PartitionScope scope2(q.nodes, q.outputs);
  EXPECT_TRUE(form_kernels(scope2, trn1(), {}).read_through.empty());
}

TEST(KernelFormation, CatInputsAreWrittenInPlaceByTheirProducers) {
  Parsed p = parse(R"(graph {
  input %x : f32[1, 4, 5, 5]
  input %y : f32[1, 6, 5, 5]
  %a : f32[1, 4, 5, 5] = aten.relu.default(%x)
  %b : f32[1, 6, 5, 5] = aten.sigmoid.default(%y)
  %c : f32[1, 10, 5, 5] = aten.cat.default(%a, %b, %x) {dim = 1}
  output %c
})");
  const PartitionScope scope(p.nodes, p.outputs);
  const KernelFormation f = form_kernels(scope, trn1(), {});
  ASSERT_EQ(f.cat_slot.size(), 2u);  // %x is a partition input: the cat copies it
  const auto& b = f.cat_slot.at(p.g->find_value("b"));
  EXPECT_EQ(b.cat, p["c"]);
  EXPECT_EQ(b.view.offset, 4 * 25);  // elements; channel 4 onwards
  EXPECT_THAT(b.view.shape, ElementsAre(1, 6, 5, 5));
  CodegenOptions copy;
  copy.cat_in_place = false;
  EXPECT_TRUE(form_kernels(scope, trn1(), copy).cat_slot.empty());
}

// --- view lowering ------------------------------------------------------------------------------

TEST(ViewLowering, PermutationsOfPermuteTransposeAndT) {
  Parsed p = parse(R"(graph {
  input %x : f32[2, 3, 4]
  input %m : f32[3, 5]
  %a : f32[4, 2, 3] = aten.permute.default(%x) {dims = [-1, 0, 1]}
  %b : f32[4, 3, 2] = aten.transpose.int(%x) {dim0 = 0, dim1 = -1}
  %c : f32[5, 3] = aten.t.default(%m)
  %d : f32[2, 3, 4] = aten.relu.default(%x)
  output %a
  output %b
  output %c
  output %d
})");
  EXPECT_THAT(*view_permutation(*p["a"], 3), ElementsAre(2, 0, 1));
  EXPECT_THAT(*view_permutation(*p["b"], 3), ElementsAre(2, 1, 0));
  EXPECT_THAT(*view_permutation(*p["c"], 2), ElementsAre(1, 0));
  EXPECT_FALSE(view_permutation(*p["d"], 3).has_value());
  EXPECT_TRUE(is_view_node(*p["a"]));
  EXPECT_FALSE(is_view_node(*p["d"]));

  const HbmView x = HbmView::contiguous(device::DType::f32, 0, {2, 3, 4});
  const HbmView a = (*lower_view(*p["a"], x))[0];
  EXPECT_THAT(a.shape, ElementsAre(4, 2, 3));
  EXPECT_THAT(a.strides, ElementsAre(1, 12, 4));
  // A layout under which the permuted reader is contiguous.
  const HbmView l = layout_contiguous_under(device::DType::f32, {2, 3, 4}, {2, 0, 1});
  EXPECT_TRUE(l.permute({2, 0, 1}).is_contiguous());
}

TEST(ViewLowering, ReshapeOnlyWhenTheStridesAllowItAndSplitsAreSlices) {
  Parsed p = parse(R"(graph {
  input %x : f32[6, 4]
  %v : f32[24] = aten.view.default(%x) {size = [24]}
  %s0 : f32[2, 4], %s1 : f32[4, 4] = aten.split_with_sizes.default(%x) {split_sizes = [2, 4], dim = 0}
  %u0 : f32[4], %u1 : f32[4], %u2 : f32[4], %u3 : f32[4], %u4 : f32[4], %u5 : f32[4] = aten.unbind.int(%x) {dim = 0}
  %sl : f32[3, 4] = aten.slice.Tensor(%x) {dim = 0, start = 3, end = 9223372036854775807, step = 1}
  %h : bf16[6, 4] = aten._to_copy.default(%x) {dtype = #bf16}
  %k : f32[6, 4] = aten._to_copy.default(%x) {dtype = #f32}
  output %v
  output %s1
  output %u2
  output %sl
  output %h
  output %k
})");
  const HbmView x = HbmView::contiguous(device::DType::f32, 0, {6, 4});
  EXPECT_THAT((*lower_view(*p["v"], x))[0].shape, ElementsAre(24));
  // The same reshape of a transposed view needs a copy.
  EXPECT_FALSE(
      lower_view(*p["v"], HbmView::contiguous(device::DType::f32, 0, {4, 6}).permute({1, 0}))
          .has_value());
  const auto split = *lower_view(*p["s0"], x);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[1].offset, 8);
  EXPECT_THAT(split[1].shape, ElementsAre(4, 4));
  EXPECT_EQ((*lower_view(*p["u0"], x))[2].offset, 8);
  const HbmView sl = (*lower_view(*p["sl"], x))[0];
  EXPECT_EQ(sl.offset, 12);
  EXPECT_THAT(sl.shape, ElementsAre(3, 4));  // end clamped to the extent
  EXPECT_FALSE(is_view_node(*p["h"]));       // a conversion is a kernel
  ASSERT_TRUE(is_view_node(*p["k"]));        // a cast to its own dtype is a view
}

// --- HBM plan -----------------------------------------------------------------------------------

TEST(HbmPlan, RegionsInOrderAlignedAndScratchSharedAcrossDisjointLifetimes) {
  std::vector<HbmBuffer> b(6);
  b[0] = {HbmBuffer::scratch, 1000, 0, 1, 0};  // kernels 0..1
  b[1] = {HbmBuffer::constant, 10, -1, 3, 0};
  b[2] = {HbmBuffer::input, 100, -1, 2, 0};
  b[3] = {HbmBuffer::scratch, 500, 2, 3, 0};  // disjoint from b[0]: shares its bytes
  b[4] = {HbmBuffer::scratch, 300, 1, 2, 0};  // overlaps both
  b[5] = {HbmBuffer::output, 0, 3, 3, 0};     // empty, still its own slot
  const HbmPlan plan = plan_hbm(b, trn1());
  EXPECT_EQ(b[2].offset, 0u);    // inputs
  EXPECT_EQ(b[5].offset, 128u);  // outputs (100 rounded up)
  EXPECT_EQ(b[1].offset, 192u);  // constants
  EXPECT_EQ(plan.scratch_base, 256u);
  EXPECT_EQ(b[0].offset, 256u);  // largest first
  EXPECT_EQ(b[3].offset, 256u);  // reuses b[0]'s bytes
  EXPECT_EQ(b[4].offset, 256u + 1024u);
  EXPECT_EQ(plan.scratch_end, 256u + 1024u + 320u);
  EXPECT_EQ(plan.scratch_unshared, 1024u + 512u + 320u);
  EXPECT_EQ(plan.size, plan.scratch_end);
  for (const HbmBuffer& x : b) EXPECT_EQ(x.offset % kHbmAlign, 0u);
}

TEST(HbmPlan, ArenaLargerThanTheCoresHbmIsRefused) {
  std::vector<HbmBuffer> b = {{HbmBuffer::constant, trn1().hbm_bytes_per_core, -1, 0, 0},
                              {HbmBuffer::input, 64, -1, 0, 0}};
  try {
    plan_hbm(b, trn1());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bytes of HBM"));
    EXPECT_THAT(e.what(),
                HasSubstr("trn1 NeuronCore has " + std::to_string(trn1().hbm_bytes_per_core)));
  }
}

}  // namespace
}  // namespace neuronc::codegen::testing
