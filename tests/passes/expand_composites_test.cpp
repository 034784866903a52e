// ExpandComposites: before/after IR. The numerics of every rewrite are checked against what
// PyTorch wrote in the e2e tests of the `ops_coverage` fixture.
#include "passes/expand_composites.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "pass_test_util.h"

namespace neuronc::passes {
namespace {

using ::testing::HasSubstr;
using testing::run_pass;

TEST(ExpandComposites, RepeatIsViewExpandView) {
  EXPECT_EQ(run_pass<ExpandComposites>(R"(graph {
  input %x : f32[2, 3]
  %r : f32[4, 2, 9] = aten.repeat.default(%x) {repeats = [4, 1, 3]}
  output %r
}
)"),
            R"(graph {
  input %x : f32[2, 3]
  %view : f32[1, 1, 1, 2, 1, 3] = aten.view.default(%x) {size = [1, 1, 1, 2, 1, 3]}
  %expand : f32[4, 1, 1, 2, 3, 3] = aten.expand.default(%view) {size = [4, 1, 1, 2, 3, 3]}
  %r : f32[4, 2, 9] = aten.view.default(%expand) {size = [4, 2, 9]}
  output %r
}
)");
}

TEST(ExpandComposites, RollIsTheCatOfTheTailAndTheHead) {
  EXPECT_EQ(run_pass<ExpandComposites>(R"(graph {
  input %x : f32[2, 5]
  %r : f32[2, 5] = aten.roll.default(%x) {shifts = [-3], dims = [1]}
  output %r
}
)"),
            R"(graph {
  input %x : f32[2, 5]
  %slice : f32[2, 2] = aten.slice.Tensor(%x) {dim = 1, start = 3, end = 5}
  %slice_1 : f32[2, 3] = aten.slice.Tensor(%x) {dim = 1, start = 0, end = 3}
  %r : f32[2, 5] = aten.cat.default(%slice, %slice_1) {dim = 1}
  output %r
}
)");
}

// Batch letter b, contracted c and w, kept h (first) and d (second): one bmm.
TEST(ExpandComposites, EinsumContractionIsOneBmm) {
  EXPECT_EQ(run_pass<ExpandComposites>(R"(graph {
  input %a : f32[2, 3, 4, 5]
  input %b : f32[2, 3, 6, 5]
  %e : f32[2, 4, 6] = aten.einsum.default(%a, %b) {equation = "bchw,bcdw->bhd"}
  output %e
}
)"),
            R"(graph {
  input %a : f32[2, 3, 4, 5]
  input %b : f32[2, 3, 6, 5]
  %permute : f32[2, 4, 3, 5] = aten.permute.default(%a) {dims = [0, 2, 1, 3]}
  %view : f32[2, 4, 15] = aten.view.default(%permute) {size = [2, 4, 15]}
  %permute_1 : f32[2, 3, 5, 6] = aten.permute.default(%b) {dims = [0, 1, 3, 2]}
  %view_1 : f32[2, 15, 6] = aten.view.default(%permute_1) {size = [2, 15, 6]}
  %e : f32[2, 4, 6] = aten.bmm.default(%view, %view_1)
  output %e
}
)");
}

TEST(ExpandComposites, EinsumRefusesWhatItCannotExpress) {
  for (const char* eq : {"...ij,...jk->...ik", "ii->i", "ij,jk->iz"}) {
    auto g = ir::parse(R"(graph {
  input %a : f32[3, 3]
  output %a
}
)");
    try {
      g->append("aten.einsum.default", {g->find_value("a"), g->find_value("a")},
                {{"equation", std::string(eq)}});
      FAIL() << eq << " was accepted";
    } catch (const ir::Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("einsum '") + eq + "'"));
    }
  }
}

// Nearest by an integer factor repeats pixels (view/expand/view, no arithmetic); bilinear is a
// linear per spatial dim with a constant interpolation matrix.
TEST(ExpandComposites, UpsamplingByFactorAndByMatrix) {
  EXPECT_EQ(run_pass<ExpandComposites>(R"(graph {
  input %x : f32[1, 2, 3, 4]
  %u : f32[1, 2, 6, 8] = aten.upsample_nearest2d.vec(%x) {output_size = none, scale_factors = [2.0, 2.0]}
  output %u
}
)"),
            R"(graph {
  input %x : f32[1, 2, 3, 4]
  %view : f32[1, 2, 3, 1, 4, 1] = aten.view.default(%x) {size = [1, 2, 3, 1, 4, 1]}
  %expand : f32[1, 2, 3, 2, 4, 2] = aten.expand.default(%view) {size = [1, 2, 3, 2, 4, 2]}
  %u : f32[1, 2, 6, 8] = aten.view.default(%expand) {size = [1, 2, 6, 8]}
  output %u
}
)");
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 2, 3, 4]
  %u : f32[1, 2, 5, 7] = aten.upsample_bilinear2d.vec(%x) {output_size = [5, 7], align_corners = true, scale_factors = none}
  output %u
}
)");
  ExpandComposites().run(*g);
  EXPECT_EQ(ir::print(*g, {.locations = false}), R"(graph {
  input %x : f32[1, 2, 3, 4]
  const %u_w : f32[7, 4] "upsample.u.w"
  const %u_h : f32[5, 3] "upsample.u.h"
  %linear : f32[1, 2, 3, 7] = aten.linear.default(%x, %u_w, _)
  %permute : f32[1, 2, 7, 3] = aten.permute.default(%linear) {dims = [0, 1, 3, 2]}
  %linear_1 : f32[1, 2, 7, 5] = aten.linear.default(%permute, %u_h, _)
  %u : f32[1, 2, 5, 7] = aten.permute.default(%linear_1) {dims = [0, 1, 3, 2]}
  output %u
}
)");
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

TEST(ExpandComposites, RepeatInterleaveIsViewExpandView) {
  EXPECT_EQ(testing::run_pass<ExpandComposites>(R"(graph {
  input %x : f32[2, 3]
  %r : f32[2, 6] = aten.repeat_interleave.self_int(%x) {repeats = 2, dim = 1}
  output %r
}
)"),
            R"(graph {
  input %x : f32[2, 3]
  %view : f32[2, 3, 1] = aten.view.default(%x) {size = [2, 3, 1]}
  %expand : f32[2, 3, 2] = aten.expand.default(%view) {size = [2, 3, 2]}
  %r : f32[2, 6] = aten.view.default(%expand) {size = [2, 6]}
  output %r
}
)");
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

// A video head's adaptive_avg_pool3d with even windows is a view and a mean over the window
// dims; uneven windows stay as they are (and are refused later with the op's name).
TEST(ExpandComposites, AdaptiveAvgPool3dWithEvenWindowsIsAMean) {
  EXPECT_EQ(testing::run_pass<ExpandComposites>(R"(graph {
  input %x : f32[1, 2, 4, 6, 6]
  %p : f32[1, 2, 2, 1, 3] = aten.adaptive_avg_pool3d.default(%x) {output_size = [2, 1, 3]}
  output %p
}
)"),
            R"(graph {
  input %x : f32[1, 2, 4, 6, 6]
  %view : f32[1, 2, 2, 2, 1, 6, 3, 2] = aten.view.default(%x) {size = [1, 2, 2, 2, 1, 6, 3, 2]}
  %p : f32[1, 2, 2, 1, 3] = aten.mean.dim(%view) {dim = [3, 5, 7], keepdim = false}
  output %p
}
)");
  const std::string uneven = R"(graph {
  input %x : f32[1, 2, 5, 6, 6]
  %p : f32[1, 2, 2, 1, 1] = aten.adaptive_avg_pool3d.default(%x) {output_size = [2, 1, 1]}
  output %p
}
)";
  EXPECT_EQ(testing::run_pass<ExpandComposites>(uneven), uneven);
}

}  // namespace
}  // namespace neuronc::passes

namespace neuronc::passes {
namespace {

// Found by the differential tester (docs/DIFFTEST.md): core-ATen max.dim and var.correction had
// neither a lowering nor a host kernel.
TEST(ExpandComposites, MaxDimIsAmaxAndArgmax) {
  EXPECT_EQ(testing::run_pass<ExpandComposites>(R"(graph {
  input %x : f32[2, 5]
  %v : f32[2, 1], %i : i64[2, 1] = aten.max.dim(%x) {dim = 1, keepdim = true}
  %w : f32[5], %j : i64[5] = aten.min.dim(%x) {dim = 0, keepdim = false}
  output %v
  output %i
  output %w
}
)"),
            R"(graph {
  input %x : f32[2, 5]
  %v : f32[2, 1] = aten.amax.default(%x) {dim = [1], keepdim = true}
  %i : i64[2, 1] = aten.argmax.default(%x) {dim = 1, keepdim = true}
  %w : f32[5] = aten.amin.default(%x) {dim = [0], keepdim = false}
  output %v
  output %i
  output %w
}
)");
}

TEST(ExpandComposites, VarIsTheMeanSquaredDeviationOverNMinusCorrection) {
  EXPECT_EQ(testing::run_pass<ExpandComposites>(R"(graph {
  input %x : f32[3, 4, 5]
  %v : f32[3, 5] = aten.var.correction(%x) {dim = [1], correction = 1, keepdim = false}
  output %v
}
)"),
            R"(graph {
  input %x : f32[3, 4, 5]
  %mean : f32[3, 1, 5] = aten.mean.dim(%x) {dim = [1], keepdim = true}
  %sub : f32[3, 4, 5] = aten.sub.Tensor(%x, %mean)
  %mul : f32[3, 4, 5] = aten.mul.Tensor(%sub, %sub)
  %sum : f32[3, 5] = aten.sum.dim_IntList(%mul) {dim = [1], keepdim = false}
  %v : f32[3, 5] = aten.div.Scalar(%sum) {other = 3.0}
  output %v
}
)");
}

// torch.var(x, dim, unbiased=False) in the training IR (found by the difftest corpus, case 12):
// the population variance, N in the denominator.
TEST(ExpandComposites, VarDimUnbiasedFalseDividesByN) {
  const std::string out = testing::run_pass<ExpandComposites>(R"(graph {
  input %x : f32[3, 4]
  %v : f32[3, 1] = aten.var.dim(%x) {dim = [-1], unbiased = false, keepdim = true}
  output %v
}
)");
  EXPECT_NE(out.find("aten.div.Scalar(%sum) {other = 4.0}"), std::string::npos) << out;
}

}  // namespace
}  // namespace neuronc::passes
