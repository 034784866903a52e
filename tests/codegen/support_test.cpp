// codegen/support: whether a node can be lowered is answered by the node's Lowering for a given
// target, and that answer agrees with what the lowering then does.
#include "codegen/support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "codegen/lowering.h"
#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

using ::testing::HasSubstr;

const device::Target& trn(device::TargetKind k) {
  return device::target(k);
}

// A padded 138 x 138 fp32 plane (76 KB per partition) is over trn1's pooling tile budget (a
// third of its 192 KiB partition) but within trn2's (224 KiB) and trn3's (256 KiB): on trn1 it
// is pooled in chunks of output rows, elsewhere in one tile; both lower and match.
constexpr const char* kLargePlanePool = R"(graph {
  input %x : f32[1, 2, 136, 136]
  %y : f32[1, 2, 136, 136] = aten.max_pool2d.default(%x) {kernel_size = [3, 3], stride = [1, 1], padding = [1, 1]}
  output %y
})";

TEST(CodegenSupport, PoolingPlaneOverTheTileBudgetIsPooledInChunks) {
  auto g = ir::parse(kLargePlanePool);
  const ir::Node& pool = *g->nodes()[0];
  PoolGeometry g1, g3;
  EXPECT_FALSE(pool_geometry(pool, trn(device::TargetKind::trn1), g1).has_value());
  EXPECT_FALSE(pool_geometry(pool, trn(device::TargetKind::trn3), g3).has_value());
  // trn1: 64 KiB hold 118 padded rows of 138, but two input tiles, two f32 results and two
  // outputs of r rows take 2 (r + 2) 552 + 2 r 544 (4 + 4) bytes, within 128 KiB for r <= 39;
  // trn3 needs no chunks.
  EXPECT_EQ(g1.chunk_rows, 39);
  EXPECT_EQ(g3.chunk_rows, 0);
  for (auto k : {device::TargetKind::trn1, device::TargetKind::trn3}) {
    EXPECT_FALSE(unsupported_reason(pool, trn(k)).has_value());
    RunResult r = compile_and_run(*g, k);
    EXPECT_EQ(r.max_abs_error, 0.0);
    EXPECT_GT(r.max_abs_reference, 0.0);
  }
}

// VGG's and Inception's first pools on trn1, and planes whose chunks need several passes
// because the (batch, channel) rows fill the partitions: every element matches the reference
// (max exactly; avg, with and without padding, to rounding).
TEST(CodegenSupport, LargePoolingPlanesMatchOnTrn1) {
  for (const char* src : {R"(graph {
  input %x : f32[1, 64, 224, 224]
  %y : f32[1, 64, 112, 112] = aten.max_pool2d.default(%x) {kernel_size = [2, 2], stride = [2, 2]}
  output %y
})",
                          R"(graph {
  input %x : f32[1, 3, 147, 147]
  %y : f32[1, 3, 73, 73] = aten.max_pool2d.default(%x) {kernel_size = [3, 3], stride = [2, 2]}
  output %y
})",
                          R"(graph {
  input %x : f32[1, 100, 150, 150]
  %y : f32[1, 100, 150, 150] = aten.avg_pool2d.default(%x) {kernel_size = [3, 3], stride = [1, 1], padding = [1, 1]}
  output %y
})",
                          R"(graph {
  input %x : f32[2, 80, 131, 140]
  %y : f32[2, 80, 66, 70] = aten.max_pool2d.default(%x) {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], dilation = [1, 1]}
  %z : f32[2, 80, 43, 46] = aten.avg_pool2d.default(%x) {kernel_size = [4, 5], stride = [3, 3]}
  output %y
  output %z
})"}) {
    SCOPED_TRACE(src);
    auto g = ir::parse(src);
    PoolGeometry pg;
    ASSERT_FALSE(pool_geometry(*g->nodes()[0], trn(device::TargetKind::trn1), pg).has_value());
    EXPECT_GT(pg.chunk_rows, 0);
    RunResult r = compile_and_run(*g, device::TargetKind::trn1);
    EXPECT_LE(r.max_abs_error, 1e-6 * std::max(1.0, r.max_abs_reference));
    EXPECT_GT(r.max_abs_reference, 0.0);
  }
}

// What still cannot be chunked is refused with the reason, and the lowering gives the same one.
TEST(CodegenSupport, PoolingThatCannotBeChunkedIsRefused) {
  // Uneven adaptive windows read the whole plane.
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 2, 140, 141]
  %y : f32[1, 2, 3, 4] = aten.adaptive_avg_pool2d.default(%x) {output_size = [3, 4]}
  output %y
})");
  const ir::Node& pool = *g->nodes()[0];
  auto why = unsupported_reason(pool, trn(device::TargetKind::trn1));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("does not fit the SBUF tile budget (uneven adaptive windows"));
  EXPECT_FALSE(unsupported_reason(pool, trn(device::TargetKind::trn3)).has_value());
  try {
    compile_and_run(*g, device::TargetKind::trn1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("node 'y' (aten.adaptive_avg_pool2d.default)"));
    EXPECT_THAT(e.what(), HasSubstr(*why));
  }
  // A window taller than a tile: 3 rows of 8,000 elements do not fit 64 KiB.
  auto tall = ir::parse(R"(graph {
  input %x : f32[1, 2, 9, 8000]
  %y : f32[1, 2, 7, 7998] = aten.max_pool2d.default(%x) {kernel_size = [3, 3], stride = [1, 1]}
  output %y
})");
  why = unsupported_reason(*tall->nodes()[0], trn(device::TargetKind::trn1));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("even one output row at a time"));
}

TEST(CodegenSupport, ConvolutionRowBudgetIsTheTargetsShareOfItsPartition) {
  // 10,500 fp32 elements per input row: 42 KB, over trn1's band budget (5/24 of 192 KiB, 40 KiB)
  // and within trn3's (5/24 of 256 KiB, 53 KiB).
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 2, 10498]
  param %w : f32[4, 2, 3] "c.weight"
  %y : f32[1, 4, 10496] = aten.conv1d.default(%x, %w, _)
  output %y
})");
  const ir::Node& conv = *g->nodes()[0];
  auto why = unsupported_reason(conv, trn(device::TargetKind::trn1));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("input row of 10498 elements is too long"));
  EXPECT_FALSE(unsupported_reason(conv, trn(device::TargetKind::trn3)).has_value());
}

// Weights that stream per output chunk must fit the weight budget: 1536 fp32 input channels x
// 3 x 3 x 128 outputs is 54 KiB a chunk, over trn1's 48 KiB (DeepLab's ASPP is the same case),
// so the convolution is refused (host) rather than failing the compile; in bf16 it is half and
// stays on the device.
TEST(CodegenSupport, ConvolutionWeightChunkOverItsBudgetIsRefused) {
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 1536, 4, 4]
  param %w : f32[128, 1536, 3, 3] "c.weight"
  %y : f32[1, 128, 4, 4] = aten.conv2d.default(%x, %w, _) {padding = [1, 1]}
  output %y
})");
  auto why = unsupported_reason(*g->nodes()[0], trn(device::TargetKind::trn1));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(
      *why, HasSubstr("convolution weights need 55296 SBUF bytes per partition per output chunk"));
  try {
    compile_and_run(*g, device::TargetKind::trn1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(*why));  // the lowering's own check says the same
  }
  auto b = ir::parse(R"(graph {
  input %x : bf16[1, 1536, 4, 4]
  param %w : bf16[128, 1536, 3, 3] "c.weight"
  %y : bf16[1, 128, 4, 4] = aten.conv2d.default(%x, %w, _) {padding = [1, 1]}
  output %y
})");
  EXPECT_FALSE(unsupported_reason(*b->nodes()[0], trn(device::TargetKind::trn1)).has_value());
}

// DeepLab's ASPP (found by the sweep: a compile error, and `analyze` said it was supported): a
// 3 x 3 convolution dilated by 36 needs 73 input rows of every channel chunk for one output
// row, so its double-buffered bands and its weights overflow a partition. It is refused (host)
// with the sizes, and the lowering says the same; undilated, it stays on the device.
TEST(CodegenSupport, ConvolutionBandsAndWeightsOverAPartitionAreRefused) {
  auto g = ir::parse(R"(graph {
  input %x : f32[1, 960, 12, 12]
  param %w : f32[256, 960, 3, 3] "aspp.weight"
  %y : f32[1, 256, 12, 12] = aten.conv2d.default(%x, %w, _) {padding = [36, 36], dilation = [36, 36]}
  output %y
})");
  auto why = unsupported_reason(*g->nodes()[0], trn(device::TargetKind::trn1));
  ASSERT_TRUE(why.has_value());
  // 8 channel chunks x 73 rows x 84 columns x 4 bytes, two slots; two streamed weight chunks.
  EXPECT_THAT(*why, HasSubstr("convolution input bands (393216 bytes) and weights (73728 bytes) "
                              "need more SBUF per partition than the 196608 a trn1 has"));
  try {
    compile_and_run(*g, device::TargetKind::trn1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(*why));
  }
  auto d = ir::parse(R"(graph {
  input %x : f32[1, 960, 12, 12]
  param %w : f32[256, 960, 3, 3] "aspp.weight"
  %y : f32[1, 256, 12, 12] = aten.conv2d.default(%x, %w, _) {padding = [1, 1]}
  output %y
})");
  EXPECT_FALSE(unsupported_reason(*d->nodes()[0], trn(device::TargetKind::trn1)).has_value());
}

TEST(CodegenSupport, AttentionValueHeadWiderThanAPsumBankIsRefused) {
  auto g = ir::parse(R"(graph {
  input %q : f32[1, 2, 16, 64]
  input %k : f32[1, 2, 16, 64]
  input %v : f32[1, 2, 16, 640]
  %o : f32[1, 2, 16, 640] = aten.scaled_dot_product_attention.default(%q, %k, %v)
  output %o
})");
  for (auto k : {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    auto why = unsupported_reason(*g->nodes()[0], trn(k));
    ASSERT_TRUE(why.has_value());
    EXPECT_THAT(*why, HasSubstr("value head dim 640 exceeds the 512 fp32 elements of a PSUM bank"));
  }
}

TEST(CodegenSupport, RowKernelRefusesRowsItsSbufCannotHold) {
  // A 12000-element fp32 softmax row needs two slots of input, work and output tiles: 288 KB
  // per partition, over every target's SBUF. In bf16 (192 KB) it fits trn1's 192 KiB.
  const std::string f32 = R"(graph {
  input %x : f32[4, 12000]
  %y : f32[4, 12000] = aten._softmax.default(%x) {dim = 1, half_to_float = false}
  output %y
})";
  auto g = ir::parse(f32);
  auto why = unsupported_reason(*g->nodes()[0], trn(device::TargetKind::trn1));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("rows of 12000 elements need"));
  EXPECT_THAT(*why, HasSubstr("SBUF bytes per partition but trn1 has 196608"));
  EXPECT_TRUE(unsupported_reason(*g->nodes()[0], trn(device::TargetKind::trn3)).has_value());

  auto b = ir::parse(R"(graph {
  input %x : bf16[4, 12000]
  %y : bf16[4, 12000] = aten._softmax.default(%x) {dim = 1, half_to_float = false}
  output %y
})");
  ASSERT_FALSE(unsupported_reason(*b->nodes()[0], trn(device::TargetKind::trn1)).has_value());
  RunResult r = compile_and_run(*b, device::TargetKind::trn1);  // and it lowers
  EXPECT_LE(r.max_abs_error, 1e-2 * std::max(1.0, r.max_abs_reference));

  // Over one row tile: refused, except a layer norm (the group-norm kernel's statistics).
  auto w = ir::parse(R"(graph {
  input %x : f32[2, 20000]
  param %g : f32[20000] "ln.weight"
  %s : f32[2, 20000] = aten._softmax.default(%x) {dim = 1, half_to_float = false}
  %l : f32[2, 20000] = aten.layer_norm.default(%x, %g, _) {normalized_shape = [20000], eps = 1e-05}
  output %s
  output %l
})");
  why = unsupported_reason(*w->nodes()[0], trn(device::TargetKind::trn1));
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("reduced extent 20000 exceeds the 12288 elements"));
  EXPECT_FALSE(unsupported_reason(*w->nodes()[1], trn(device::TargetKind::trn1)).has_value());
}

// The row family's refusal agrees with its lowering: whatever it accepts compiles, and what it
// refuses fails to compile with the same reason, over extents around the SBUF limit.
TEST(CodegenSupport, RowRefusalAgreesWithTheLowering) {
  const device::Target& t = trn(device::TargetKind::trn1);
  int accepted = 0, refused = 0;
  for (const char* dt : {"f32", "bf16"}) {
    for (int64_t R : {4096, 8000, 10000, 11000, 12000, 12288}) {
      const std::string ty = std::string(dt) + "[3, " + std::to_string(R) + "]";
      const std::string row = std::string(dt) + "[" + std::to_string(R) + "]";
      const std::string ns = "normalized_shape = [" + std::to_string(R) + "]";
      for (const std::string& body :
           {"%y : " + ty + " = aten._softmax.default(%x) {dim = 1, half_to_float = false}",
            "%y : " + ty + " = aten._log_softmax.default(%x) {dim = 1, half_to_float = false}",
            "%y : " + ty + " = aten.layer_norm.default(%x, %g, %b) {" + ns + ", eps = 1e-05}",
            "%y : " + ty + " = aten.rms_norm.default(%x, %g) {" + ns + "}",
            "%y : " + std::string(dt) + "[3] = aten.sum.dim_IntList(%x) {dim = [1]}"}) {
        auto g = ir::parse("graph {\n  input %x : " + ty + "\n  param %g : " + row +
                           " \"n.weight\"\n  param %b : " + row + " \"n.bias\"\n  " + body +
                           "\n  output %y\n}");
        const ir::Node& n = *g->nodes().back();
        const auto why = unsupported_reason(n, t);
        std::vector<const ir::Node*> nodes = {&n};
        std::vector<const ir::Value*> ins;
        for (const ir::GraphInput& gi : g->inputs()) ins.push_back(gi.value);
        try {
          compile_partition(*g, nodes, ins, {n.output()}, t, {});
          EXPECT_FALSE(why.has_value()) << body << ": refused (" << *why << ") but it compiles";
          ++accepted;
        } catch (const Error& e) {
          ASSERT_TRUE(why.has_value()) << body << ": accepted but lowering fails: " << e.what();
          EXPECT_THAT(e.what(), HasSubstr(*why));
          ++refused;
        }
      }
    }
  }
  EXPECT_GT(accepted, 10);
  EXPECT_GT(refused, 5);
}

TEST(CodegenSupport, FamilyRefusalsAndCommonChecks) {
  const device::Target& t = trn(device::TargetKind::trn1);
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 8]
  input %i : i64[3]
  %a : f32[3, 8] = aten.index_select.default(%x, %i) {dim = 0}
  %b : f32[4, 8] = aten.div.Tensor_mode(%x, %x) {rounding_mode = "floor"}
  %c : f32[4, 8] = aten.cumsum.default(%x) {dim = 0}
  %d : f32[4, 8] = aten.relu.default(%x)
  output %a
  output %b
  output %c
  output %d
})");
  const auto& n = g->nodes();
  auto a = unsupported_reason(*n[0], t), b = unsupported_reason(*n[1], t),
       c = unsupported_reason(*n[2], t);
  ASSERT_TRUE(a && b && c);
  EXPECT_THAT(*a, HasSubstr("indices 'i' are only known at run time"));
  EXPECT_THAT(*b, HasSubstr("div with rounding_mode 'floor' is not lowered"));
  EXPECT_THAT(*c, HasSubstr("codegen has no lowering for aten.cumsum.default"));
  EXPECT_FALSE(unsupported_reason(*n[3], t).has_value());
}

}  // namespace
}  // namespace neuronc::codegen::testing
