// codegen: each op family compiled, run on the device model (functional, race checker on) and
// compared with the reference interpreter.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "device/verifier.h"
#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

// Runs `text` and expects every output within `tol` x max|reference| (absolute when the
// reference is all zeros).
RunResult check(const std::string& text, double tol = 1e-5,
                device::TargetKind kind = device::TargetKind::trn1, CodegenOptions opts = {},
                int64_t int_range = 10) {
  auto g = ir::parse(text);
  attach_random_payloads(*g, 7);
  RunResult r = compile_and_run(*g, kind, opts, 1, int_range);
  EXPECT_LE(r.max_abs_error, tol * std::max(1.0, r.max_abs_reference))
      << "max |ref| " << r.max_abs_reference;
  return r;
}

// The bf16 constant of a program that has one (an auto-cast weight), and the DMAs reading it.
const ConstantBinding* bf16_constant(const RunResult& r) {
  const ConstantBinding* wp = nullptr;
  for (const ConstantBinding& cb : r.part.constants)
    if (cb.dtype == device::DType::bf16) wp = &cb;
  return wp;
}
std::vector<const device::DmaCopy*> dmas_reading(const RunResult& r, const ConstantBinding& w) {
  std::vector<const device::DmaCopy*> out;
  for (const auto& stream : r.part.program.cores[0].streams)
    for (const auto& in : stream)
      if (const auto* d = std::get_if<device::DmaCopy>(&in.op))
        if (d->src.memory == device::MemoryKind::hbm && d->src.offset >= w.offset &&
            d->src.offset < w.offset + w.data.size())
          out.push_back(d);
  return out;
}

// A permuted (and row-interleaved) weight is laid out in stored order by an odometer; every
// stored element lands where stored_to_logical, one element at a time, puts it.
TEST(CodegenLayout, ForEachStoredIsStoredToLogicalInOrder) {
  struct Case {
    std::vector<int64_t> shape, perm;
    int64_t interleave;
  };
  const Case cases[] = {
      {{7}, {}, 0},
      {{3, 5}, {1, 0}, 0},
      {{64, 3, 3, 3}, {1, 2, 3, 0}, 0},  // a conv weight, output channels last
      {{8, 4, 3, 2}, {3, 0, 2, 1}, 0},
      {{12, 5}, {}, 4},                  // interleaved rows, no permutation
      {{6, 16, 3, 3}, {1, 2, 3, 0}, 8},  // permuted and interleaved
      {{16, 6, 2}, {0, 2, 1}, 2},
      {{1, 1, 1}, {2, 1, 0}, 0},
      {{}, {}, 0},
  };
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    int64_t next = 0;
    for_each_stored(c.shape, c.perm, c.interleave, [&](int64_t k, int64_t logical) {
      ASSERT_EQ(k, next++);
      ASSERT_EQ(logical, stored_to_logical(k, c.shape, c.perm, c.interleave))
          << "element " << k << " of a " << c.shape.size() << "-d shape";
    });
    EXPECT_EQ(next, n);
  }
}

TEST(CodegenMatmul, MlpLinearReluGelu) {
  RunResult r = check(R"(graph {
  input %x : f32[4, 16]
  param %w1 : f32[32, 16] "fc1.weight"
  param %b1 : f32[32] "fc1.bias"
  param %w2 : f32[32, 32] "fc2.weight"
  param %b2 : f32[32] "fc2.bias"
  param %w3 : f32[8, 32] "fc3.weight"
  param %b3 : f32[8] "fc3.bias"
  %l1 : f32[4, 32] = aten.linear.default(%x, %w1, %b1)
  %r : f32[4, 32] = aten.relu.default(%l1)
  %l2 : f32[4, 32] = aten.linear.default(%r, %w2, %b2)
  %ge : f32[4, 32] = aten.gelu.default(%l2)
  %l3 : f32[4, 8] = aten.linear.default(%ge, %w3, %b3)
  output %l3
})");
  EXPECT_GT(r.part.stats.flops, 0);
  std::printf("mlp: max abs err %g (max |ref| %g), %.3f us, %llu instructions, %llu waits\n",
              r.max_abs_error, r.max_abs_reference, r.report.total_time_ns / 1000,
              (unsigned long long)r.report.instructions,
              (unsigned long long)r.part.stats.semaphore_waits);
  EXPECT_TRUE(r.part.constants[0].transposed);
}

}  // namespace
}  // namespace neuronc::codegen::testing

namespace neuronc::codegen::testing {
namespace {

// A weight that fits in a third of a partition loads as one DMA per 128-row K chunk spanning
// every n-tile, so each DMA engine streams its rows back to back (TRAINIUM.md §5.3) instead of
// one strided row per n-tile.
// B loads in whole row blocks: a weight stored [K, N] (transposed) streams each K chunk as one
// DMA over 128 partitions. When 8 rows (one DMA engine's partitions) are shorter than the
// full-rate transfer size, or one row is too short a descriptor (its descriptor cost above 5 %
// of its data time: 6800 B on trn1, 9200 B on trn2, 13200 B on trn3), T chunks interleave into
// one DMA (partition p holds rows p*T .. p*T + T-1), so each engine moves 8*T rows back to
// back in 8 descriptors.
TEST(CodegenMatmul, WeightsStreamInWholeRowBlocks) {
  struct Case {
    int64_t n;
    device::TargetKind kind;
    int loads;              // weight DMAs (K = 384: three chunks, so T is 1 or 3)
    uint64_t row_elements;  // per partition per DMA
  };
  using device::TargetKind;
  // N = 1536 bf16: 8 rows = 24 KiB < 32 KiB, so the three chunks interleave (T = 3) everywhere.
  // N = 2048: 8 rows = 32 KiB, but a 4 KiB row is a short descriptor: T = 3 on trn1 and trn2;
  // on trn3 T = 3 (12 KiB) still misses its 13200 B, and T = 1 already runs at the full rate.
  for (const Case& c :
       {Case{1536, TargetKind::trn1, 1, 3 * 1536}, Case{1536, TargetKind::trn2, 1, 3 * 1536},
        Case{1536, TargetKind::trn3, 1, 3 * 1536}, Case{2048, TargetKind::trn1, 1, 3 * 2048},
        Case{2048, TargetKind::trn2, 1, 3 * 2048}, Case{2048, TargetKind::trn3, 3, 2048}}) {
    const device::TargetKind kind = c.kind;
    const std::string N = std::to_string(c.n);
    RunResult r =
        check("graph {\n  input %x : bf16[128, 384]\n  param %wf : f32[" + N +
                  ", 384] \"w\"\n  %w : bf16[" + N +
                  ", 384] = aten._to_copy.default(%wf) {dtype = #bf16}\n  %y : bf16[128, " + N +
                  "] = aten.linear.default(%x, %w)\n  output %y\n}",
              2e-2, kind);
    const ConstantBinding* wp = bf16_constant(r);
    ASSERT_NE(wp, nullptr);
    EXPECT_TRUE(wp->transposed);  // stored [K, N]: K chunks are contiguous row blocks
    const auto loads = dmas_reading(r, *wp);
    for (const device::DmaCopy* d : loads) {
      EXPECT_EQ(d->src.partition_count, 128);
      EXPECT_EQ(d->src.free_size(), c.row_elements);
      EXPECT_EQ(d->src.partition_stride, static_cast<int64_t>(c.row_elements));
    }
    EXPECT_EQ(static_cast<int>(loads.size()), c.loads) << "N = " << c.n;
  }
}

// A long K (BERT-large's FFN down projection: K = 4096, N = 1024) streams B through a ring of
// slots of K chunks instead of holding all of it: the kernel's SBUF region stays under the
// 64 KiB per partition the whole weight would take on trn1, every weight byte still loads once,
// and each n-tile accumulates over all K.
TEST(CodegenMatmul, LongKWeightsStreamThroughARing) {
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    RunResult r = check(
        "graph {\n  input %x : bf16[128, 4096]\n  param %wf : f32[1024, 4096] \"w\"\n"
        "  %w : bf16[1024, 4096] = aten._to_copy.default(%wf) {dtype = #bf16}\n"
        "  %y : bf16[128, 1024] = aten.linear.default(%x, %w)\n  output %y\n}",
        2e-2, kind);
    uint64_t weight_bytes = 0;
    for (const auto& stream : r.part.program.cores[0].streams)
      for (const auto& in : stream)
        if (const auto* d = std::get_if<device::DmaCopy>(&in.op))
          if (d->dst.memory == device::MemoryKind::sbuf && d->dst.partition_count == 128 &&
              d->src.memory == device::MemoryKind::hbm && d->src.free_size() >= 1024)
            weight_bytes += uint64_t{128} * d->src.free_size() * 2;
    EXPECT_EQ(weight_bytes, uint64_t{4096} * 1024 * 2 + 128 * 4096 * 2);  // B once, x once
    if (kind == device::TargetKind::trn1) {
      EXPECT_LT(r.part.stats.sbuf_peak_bytes, 64u * 1024);
    }
  }
}

// More rows than one A^T block holds (9 m-tiles of a K = 3072 activation; 8 fit in trn1's A^T
// share) with a weight that fits its share: the weight loads once and stays while the A^T
// tiles stream through two alternating blocks (weights stationary), instead of loading again
// for every m-block.
TEST(CodegenMatmul, WeightsStayAcrossMBlocks) {
  RunResult r = check(
      "graph {\n  input %x : bf16[1152, 3072]\n  param %wf : f32[128, 3072] \"w\"\n"
      "  %w : bf16[128, 3072] = aten._to_copy.default(%wf) {dtype = #bf16}\n"
      "  %y : bf16[1152, 128] = aten.linear.default(%x, %w)\n  output %y\n}",
      2e-2, device::TargetKind::trn1);
  const ConstantBinding* wp = bf16_constant(r);
  ASSERT_NE(wp, nullptr);
  uint64_t weight_bytes = 0;
  for (const device::DmaCopy* d : dmas_reading(r, *wp))
    weight_bytes += uint64_t{d->src.partition_count} * d->src.free_size() * 2;
  EXPECT_EQ(weight_bytes, wp->data.size());
}

// Interleaved K chunks with A^T loaded directly (A a transposed view, M contiguous): the A^T
// DMA walks the same rows {p*T + j} by partition stride.
TEST(CodegenMatmul, InterleavedChunksWithADirectTransposedLoad) {
  check(R"(graph {
  input %xt : bf16[768, 96]
  param %wf : f32[768, 768] "w"
  %w : bf16[768, 768] = aten._to_copy.default(%wf) {dtype = #bf16}
  %x : bf16[96, 768] = aten.permute.default(%xt) {dims = [1, 0]}
  %y : bf16[96, 768] = aten.linear.default(%x, %w)
  output %y
})",
        2e-2);
}

// A row bias joins the PSUM accumulation (a K = 1 matmul against ones): bit-identical to adding
// it after the matmul in fp32, loaded once per block instead of once per output tile, and the
// output tiles of a row block are stored by one DMA.
TEST(CodegenMatmul, RowBiasAccumulatesInPsumBitIdentically) {
  const std::string fused = R"(graph {
  input %x : f32[200, 300]
  param %w : f32[700, 300] "w"
  param %b : f32[700] "b"
  %y : f32[200, 700] = aten.linear.default(%x, %w, %b)
  output %y
})";
  const std::string separate = R"(graph {
  input %x : f32[200, 300]
  param %w : f32[700, 300] "w"
  param %b : f32[700] "b"
  %l : f32[200, 700] = aten.linear.default(%x, %w)
  %y : f32[200, 700] = aten.add.Tensor(%l, %b)
  output %y
})";
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    auto run = [&](const std::string& text) {
      auto g = ir::parse(text);
      attach_random_payloads(*g, 11);
      CodegenOptions opts;
      opts.fuse_residual = false;  // keep the add a kernel of its own
      return compile_and_run(*g, kind, opts, 5);
    };
    RunResult a = run(fused), b = run(separate);
    EXPECT_LE(a.max_abs_error, 1e-5 * std::max(1.0, a.max_abs_reference));
    EXPECT_EQ(a.device_outputs.begin()->second.data, b.device_outputs.begin()->second.data);
    // Bias row: one [1, 700] load; stores: one [mt, 700] row block per m-tile (2).
    int bias_loads = 0, stores = 0;
    for (const auto& stream : a.part.program.cores[0].streams)
      for (const auto& in : stream)
        if (const auto* d = std::get_if<device::DmaCopy>(&in.op)) {
          if (d->dst.memory == device::MemoryKind::hbm) {
            ++stores;
            EXPECT_EQ(d->dst.free_size(), 700u);
          } else if (d->src.partition_count == 1 && d->src.free_size() == 700) {
            ++bias_loads;
          }
        }
    EXPECT_EQ(bias_loads, 1);
    EXPECT_EQ(stores, 2);
  }
}

// `body` (ending in the cast %c and the activation %a) compiled with %c only feeding %a, and
// again with %c also returned (which keeps the activation a kernel of its own): the first is
// one kernel fewer, faster, and bit-identical on %a.
void expect_cast_activation_fused(const std::string& body, uint64_t seed) {
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    auto run = [&](bool keep_cast) {
      auto g = ir::parse("graph {\n" + body + "  output %a\n" + (keep_cast ? "  output %c\n" : "") +
                         "}");
      attach_random_payloads(*g, seed);
      return compile_and_run(*g, kind, {}, seed + 1);
    };
    RunResult fused = run(false), split = run(true);
    EXPECT_LE(fused.max_abs_error, 2e-2 * std::max(1.0, fused.max_abs_reference));
    EXPECT_EQ(fused.part.stats.kernels + 1, split.part.stats.kernels);
    EXPECT_EQ(fused.device_outputs.at("a").data, split.device_outputs.at("a").data);
    EXPECT_LT(fused.report.total_time_ns, split.report.total_time_ns);
  }
}

// linear (bf16) -> cast to f32 -> gelu, as `--auto-cast matmul` leaves a transformer's FFN: one
// matmul kernel whose evacuation applies gelu, bit-identical to the cast epilogue followed by a
// gelu kernel.
TEST(CodegenMatmul, CastThenActivationIsOneKernel) {
  expect_cast_activation_fused(R"(  input %x : bf16[128, 192]
  param %wf : f32[384, 192] "w"
  param %bf : f32[384] "b"
  %w : bf16[384, 192] = aten._to_copy.default(%wf) {dtype = #bf16}
  %b : bf16[384] = aten._to_copy.default(%bf) {dtype = #bf16}
  %l : bf16[128, 384] = aten.linear.default(%x, %w, %b)
  %c : f32[128, 384] = aten._to_copy.default(%l) {dtype = #f32}
  %a : f32[128, 384] = aten.gelu.default(%c)
)",
                               17);
}

// The same for a convolution: conv (bf16, folded bias) -> cast to f32 -> relu, as ResNet's
// blocks look under `--auto-cast matmul`.
TEST(CodegenConv, CastThenActivationIsOneKernel) {
  expect_cast_activation_fused(R"(  input %x : bf16[1, 32, 12, 12]
  param %wf : f32[48, 32, 3, 3] "w"
  param %bf : f32[48] "b"
  %w : bf16[48, 32, 3, 3] = aten._to_copy.default(%wf) {dtype = #bf16}
  %b : bf16[48] = aten._to_copy.default(%bf) {dtype = #bf16}
  %y : bf16[1, 48, 12, 12] = aten.conv2d.default(%x, %w, %b) {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1}
  %c : f32[1, 48, 12, 12] = aten._to_copy.default(%y) {dtype = #f32}
  %a : f32[1, 48, 12, 12] = aten.relu.default(%c)
)",
                               19);
}

TEST(CodegenMatmul, LargeTilesAccumulateAcrossK) {
  // K = 300 (3 K tiles, ragged), M = 200 (2 M tiles), N = 700 (2 N tiles).
  check(R"(graph {
  input %x : f32[200, 300]
  param %w : f32[700, 300] "w"
  param %b : f32[700] "b"
  %y : f32[200, 700] = aten.linear.default(%x, %w, %b)
  output %y
})",
        1e-5);
}

TEST(CodegenMatmul, CoreAtenAddmmWithPermutedWeight) {
  check(R"(graph {
  input %x : f32[4, 16]
  param %w : f32[32, 16] "w"
  param %b : f32[32] "b"
  %t : f32[16, 32] = aten.permute.default(%w) {dims = [1, 0]}
  %y : f32[4, 32] = aten.addmm.default(%b, %x, %t)
  output %y
})");
}

TEST(CodegenMatmul, BmmWithTransposedActivation) {
  // q @ k^T per batch: k^T is a permuted view (contraction dim contiguous) -> TensorE transpose.
  check(R"(graph {
  input %q : f32[3, 40, 16]
  input %k : f32[3, 50, 16]
  %kt : f32[3, 16, 50] = aten.permute.default(%k) {dims = [0, 2, 1]}
  %s : f32[3, 40, 50] = aten.bmm.default(%q, %kt)
  output %s
})");
}

TEST(CodegenMatmul, MatmulBroadcastBatchBf16) {
  check(R"(graph {
  input %a : bf16[2, 3, 8, 32]
  input %b : bf16[32, 24]
  %y : bf16[2, 3, 8, 24] = aten.matmul.default(%a, %b)
  output %y
})",
        1e-2);
}

TEST(CodegenElementwise, BroadcastArithmeticAndActivations) {
  check(R"(graph {
  input %x : f32[2, 3, 64]
  input %y : f32[3, 1]
  input %z : f32[64]
  %a : f32[2, 3, 64] = aten.add.Tensor(%x, %y) {alpha = 2.0}
  %b : f32[2, 3, 64] = aten.mul.Tensor(%a, %z)
  %c : f32[2, 3, 64] = aten.sub.Tensor(%b, %x)
  %d : f32[2, 3, 64] = aten.tanh.default(%c)
  %e : f32[2, 3, 64] = aten.div.Scalar(%d) {other = 3.0}
  %f : f32[2, 3, 64] = aten.silu.default(%e)
  %g : f32[2, 3, 64] = aten.pow.Tensor_Scalar(%f) {exponent = 2.0}
  %h : f32[2, 3, 64] = aten.rsqrt.default(%g)
  %i : f32[2, 3, 64] = aten.neg.default(%h)
  output %i
})",
        1e-4);
}

// Few rows and a free dimension longer than a chunk (BERT batch 16's embedding sum): [4, 128,
// 768] coalesces to 4 rows of 98,304 elements; with a chunk of 1228 elements the free dimension
// splits into the longest rows that fit one chunk (96 per batch row, of 1024 elements), and
// every load and store is a dense block of 96 such rows: back to back in HBM, one contiguous
// run per partition. Before, 128 rows of 12,288 elements moved in 1228-element pieces (40
// transfers of strided runs). (A tile does not straddle a batch row, so 32 partitions idle.)
// Immediates folded at compile time round as the engines compute, in fp32 per operation:
// (1e8 + 1) - 1e8 is 0 in fp32 (as PyTorch computes it on f32 tensors), 1 in double.
TEST(CodegenElementwise, FoldedImmediatesRoundLikeTheDevice) {
  // (Checked against the input directly, independently of the reference.)
  auto g = ir::parse(R"(graph {
  input %x : f32[4, 8]
  %big : f32[4, 8] = aten.full.default() {size = [4, 8], fill_value = 100000000.0, dtype = #f32}
  %one : f32[4, 8] = aten.full.default() {size = [4, 8], fill_value = 1.0, dtype = #f32}
  %a : f32[4, 8] = aten.add.Tensor(%big, %one)
  %b : f32[4, 8] = aten.sub.Tensor(%a, %big)
  %y : f32[4, 8] = aten.add.Tensor(%x, %b)
  output %y
})");
  RunResult r = compile_and_run(*g);
  EXPECT_EQ(r.part.stats.kernels, 1u);  // one tile program, its immediates folded
  const RefTensor& x = r.reference.at("x");
  const RefTensor& y = r.device_outputs.at("y");
  ASSERT_EQ(x.data.size(), y.data.size());
  for (size_t i = 0; i < x.data.size(); ++i) ASSERT_EQ(y.data[i], x.data[i]) << "element " << i;
}

TEST(CodegenElementwise, LongRowsSplitIntoRowsOfOneChunk) {
  RunResult r = check(R"(graph {
  input %a : f32[4, 128, 768]
  input %b : f32[4, 128, 768]
  input %p : f32[1, 128, 768]
  %s : f32[4, 128, 768] = aten.add.Tensor(%a, %b)
  %t : f32[4, 128, 768] = aten.add.Tensor(%s, %p)
  output %t
})",
                      1e-6);
  int transfers = 0;
  for (const auto& stream : r.part.program.cores[0].streams)
    for (const auto& in : stream)
      if (const auto* d = std::get_if<device::DmaCopy>(&in.op)) {
        const bool load = d->src.memory == device::MemoryKind::hbm;
        const device::MemRef& h = load ? d->src : d->dst;
        const device::MemRef& on_chip = load ? d->dst : d->src;
        ++transfers;
        EXPECT_EQ(on_chip.partition_count, 96);
        EXPECT_EQ(on_chip.free_size(), 1024u);
        EXPECT_EQ(h.partition_count * h.free_size(), 96u * 1024);
        const device::ByteRange fp = device::footprint(h);
        EXPECT_EQ(fp.end - fp.begin, 96 * 1024 * 4);  // dense: rows back to back
      }
  EXPECT_EQ(transfers, 4 * 4);  // four tiles of three loads and a store
}

TEST(CodegenElementwise, ComparisonsWhereMaskedFillCasts) {
  check(R"(graph {
  input %x : f32[4, 8, 8]
  input %m : bool[8, 8]
  %g : bool[4, 8, 8] = aten.gt.Scalar(%x) {other = 0.25}
  %n : bool[8, 8] = aten.logical_not.default(%m)
  %a : bool[4, 8, 8] = aten.bitwise_and.Tensor(%g, %n)
  %w : f32[4, 8, 8] = aten.where.self(%a, %x, %x)
  %f : f32[4, 8, 8] = aten.masked_fill.Scalar(%w, %m) {value = -inf}
  %s : f32[4, 8, 8] = aten.where.ScalarOther(%g, %f) {other = 0.5}
  %c : bf16[4, 8, 8] = aten._to_copy.default(%s) {dtype = #bf16}
  %i : i64[4, 8, 8] = aten._to_copy.default(%x) {dtype = #i64}
  %fl : f32[4, 8, 8] = aten._to_copy.default(%a) {dtype = #f32}
  output %c
  output %i
  output %fl
})",
        1e-2);
}

TEST(CodegenDataMovement, ViewsSlicesCatAndOutputCopies) {
  check(R"(graph {
  input %x : f32[2, 6, 8]
  %p : f32[8, 6, 2] = aten.permute.default(%x) {dims = [2, 1, 0]}
  %v : f32[8, 12] = aten.view.default(%p) {size = [8, 12]}
  %s : f32[2, 3, 8] = aten.slice.Tensor(%x) {dim = 1, start = 1, end = 6, step = 2}
  %e : f32[2, 2, 3, 8] = aten.expand.default(%s) {size = [2, 2, 3, 8]}
  %c : f32[2, 9, 8] = aten.cat.default(%x, %s) {dim = 1}
  %sel : f32[2, 8] = aten.select.int(%x) {dim = 1, index = -1}
  output %v
  output %e
  output %c
  output %sel
})");
}

// A copy whose source is a transposed view (ViT: cat(class token, conv(x).flatten(2).transpose(1,
// 2))) stages through SBUF and transposes 32 x 32 blocks on VectorE instead of moving one element
// per DMA descriptor. Partial blocks, more than 128 rows, more than one tile of columns, a batch
// dim and 2-byte elements; the result is bit-exact.
TEST(CodegenDataMovement, TransposedCopiesStageThroughSbuf) {
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    RunResult r = check(R"(graph {
  input %c : f32[1, 1, 1100]
  input %x : f32[1, 1100, 197]
  input %h : bf16[3, 40, 70]
  %t : f32[1, 197, 1100] = aten.permute.default(%x) {dims = [0, 2, 1]}
  %cat : f32[1, 198, 1100] = aten.cat.default(%c, %t) {dim = 1}
  %ht : bf16[3, 70, 40] = aten.permute.default(%h) {dims = [0, 2, 1]}
  output %cat
  output %ht
})",
                        0.0, kind);
    uint64_t transposes = 0, descriptors = 0;
    for (const auto& stream : r.part.program.cores[0].streams)
      for (const auto& in : stream) {
        if (std::holds_alternative<device::Transpose>(in.op)) ++transposes;
        if (const auto* d = std::get_if<device::DmaCopy>(&in.op))
          descriptors += uint64_t{d->src.partition_count} * d->src.free_size() /
                         std::max<uint64_t>(1, d->src.levels[d->src.num_levels - 1].count);
      }
    // 35 x 7 blocks of the f32 transpose and 3 x 2 x 3 of the bf16 one.
    EXPECT_EQ(transposes, 35u * 7 + 3u * 2 * 3) << device::target(kind).name;
    // Runs of up to 32 elements: far fewer descriptors than the 216,700 + 8,400 elements.
    EXPECT_LT(descriptors, 20000u) << device::target(kind).name;
  }
}

TEST(CodegenRow, ReductionsSoftmaxLayerNorm) {
  check(R"(graph {
  input %x : f32[3, 10, 48]
  param %g : f32[48] "ln.weight"
  param %b : f32[48] "ln.bias"
  %s : f32[3, 48] = aten.sum.dim_IntList(%x) {dim = [1], keepdim = false}
  %m : f32[3, 10, 1] = aten.mean.dim(%x) {dim = [-1], keepdim = true}
  %a : f32[10] = aten.amax.default(%x) {dim = [0, 2], keepdim = false}
  %sm : f32[3, 10, 48] = aten._softmax.default(%x) {dim = -1, half_to_float = false}
  %sm1 : f32[3, 10, 48] = aten._softmax.default(%x) {dim = 1, half_to_float = false}
  %ls : f32[3, 10, 48] = aten._log_softmax.default(%x) {dim = -1, half_to_float = false}
  %ln : f32[3, 10, 48] = aten.layer_norm.default(%x, %g, %b) {normalized_shape = [48], eps = 1e-05}
  output %s
  output %m
  output %a
  output %sm
  output %sm1
  output %ls
  output %ln
})",
        1e-5);
}

// Sum and mean over a middle dim ([B, S, H] over S: mean pooling, a one-hot selection of
// positions): [S, H] slabs load as contiguous rows and a ones matmul sums over the partitions,
// instead of rows gathered element by element H apart. S over one partition tile (300 = 128 +
// 128 + 44, accumulating in PSUM), H over one PSUM bank (700 = 512 + 188), bf16, keepdim.
TEST(CodegenRow, MiddleDimSumsOnTensorE) {
  for (auto kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
    const RunResult r = check(R"(graph {
  input %x : f32[2, 300, 700]
  input %y : bf16[3, 40, 64]
  %s : f32[2, 700] = aten.sum.dim_IntList(%x) {dim = [1], keepdim = false}
  %m : f32[2, 1, 700] = aten.mean.dim(%x) {dim = [1], keepdim = true}
  %t : bf16[3, 64] = aten.sum.dim_IntList(%y) {dim = [1], keepdim = false}
  output %s
  output %m
  output %t
})",
                              1e-5, kind);
    size_t matmuls = 0;
    for (const auto& stream : r.part.program.cores[0].streams)
      for (const auto& in : stream) matmuls += std::holds_alternative<device::MatMul>(in.op);
    // 2 x 2 x 3 slabs for each of s and m, 3 for t.
    EXPECT_EQ(matmuls, 2u * 2 * 3 * 2 + 3) << device::target(kind).name;
    // Whole rows per partition: 420,000 + 7,680 elements loaded, not one descriptor each.
    EXPECT_LT(r.report.cores[0].dma_transfers, 200u) << device::target(kind).name;
  }
}

TEST(CodegenRow, RmsNormAsEmittedByLlama) {
  check(R"(graph {
  input %x : f32[1, 7, 64]
  param %w : f32[64] "norm.weight"
  %p : f32[1, 7, 64] = aten.pow.Tensor_Scalar(%x) {exponent = 2}
  %m : f32[1, 7, 1] = aten.mean.dim(%p) {dim = [-1], keepdim = true}
  %a : f32[1, 7, 1] = aten.add.Scalar(%m) {other = 1e-06}
  %r : f32[1, 7, 1] = aten.rsqrt.default(%a)
  %y : f32[1, 7, 64] = aten.mul.Tensor(%x, %r)
  %z : f32[1, 7, 64] = aten.mul.Tensor(%w, %y)
  %q : f32[1, 7, 64] = aten.rms_norm.default(%x, %w) {normalized_shape = [64], eps = 1e-06}
  output %z
  output %q
})",
        1e-5);
}

// A decode step's norms: few rows of a long hidden state, each row spread over the partitions
// (the group-norm kernel's layout: RMS without the mean pass, layer norm with it), weights
// along the row; f32 and bf16, and an RMS norm too long for one SBUF row.
TEST(CodegenRow, FewLongRowsSpreadOverThePartitions) {
  for (auto kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
    const RunResult r = check(R"(graph {
  input %x : f32[1, 2, 4096]
  input %big : f32[2, 16384]
  param %w : f32[4096] "norm.weight"
  param %b : f32[4096] "ln.bias"
  %q : f32[1, 2, 4096] = aten.rms_norm.default(%x, %w) {normalized_shape = [4096], eps = 1e-05}
  %l : f32[1, 2, 4096] = aten.layer_norm.default(%x, %w, %b) {normalized_shape = [4096], eps = 1e-05}
  %u : f32[2, 16384] = aten.rms_norm.default(%big, _) {normalized_shape = [16384]}
  output %q
  output %l
  output %u
})",
                              1e-5, kind);
    // The statistics are combined across partitions on TensorE (one matmul per row and pass:
    // 2 + 2 x 2 + 2 x 1), not reduced along one partition's row.
    size_t matmuls = 0;
    for (const auto& stream : r.part.program.cores[0].streams)
      for (const auto& in : stream) matmuls += std::holds_alternative<device::MatMul>(in.op);
    EXPECT_GE(matmuls, 8u) << device::target(kind).name;
    check(R"(graph {
  input %h : bf16[3, 2048]
  input %hw : bf16[2048]
  %g : bf16[3, 2048] = aten.rms_norm.default(%h, %hw) {normalized_shape = [2048], eps = 1e-06}
  output %g
})",
          1e-2, kind);
  }
}

// The bf16 LlamaRMSNorm's weight multiply (weight * norm(x).to(bf16)) runs in the norm's
// kernel: the norm rounded to bf16, then the product rounded again, as the separate multiply
// does (KernelFormation.NormWeightMultiplyIsTheNormsEpilogue checks that it fuses). Many rows
// (one per partition) and few long rows (spread over the partitions), fused and not.
TEST(CodegenRow, NormWeightMultiplyIsTheNormsEpilogue) {
  for (const char* shape : {"[2, 40, 256]", "[2, 1, 2048]"}) {
    const std::string d = std::string(shape).substr(std::string(shape).rfind(' ') + 1);
    const std::string D = d.substr(0, d.size() - 1);
    const std::string text = std::string(R"(graph {
  input %x : bf16)") + shape +
                             R"(
  input %w : bf16[)" + D + R"(]
  input %g : f32[)" + D + R"(]
  input %b : f32[)" + D + R"(]
  input %f : f32)" + shape + R"(
  %y : bf16)" + shape + R"( = aten.rms_norm.default(%x, _) {normalized_shape = [)" +
                             D +
                             R"(], eps = 1e-05}
  %z : bf16)" + shape + R"( = aten.mul.Tensor(%w, %y)
  %l : f32)" + shape + R"( = aten.layer_norm.default(%f, %g, %b) {normalized_shape = [)" +
                             D +
                             R"(], eps = 1e-05}
  %m : f32)" + shape + R"( = aten.mul.Tensor(%l, %g)
  output %z
  output %m
})";
    for (auto kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
      check(text, 1e-2, kind);
      CodegenOptions unfused;
      unfused.fuse = false;
      check(text, 1e-2, kind, unfused);
    }
  }
}

// The bf16 LlamaRMSNorm as passes::FuseRmsNorm leaves it: the norm of the bf16 row, fp32
// inside, one rounding at the end (the unfused casts beside it; a 2048-wide hidden state).
TEST(CodegenRow, RmsNormOfBf16Rows) {
  for (auto kind : {device::TargetKind::trn1, device::TargetKind::trn2}) {
    check(R"(graph {
  input %x0 : bf16[2, 9, 2048]
  %q : bf16[2, 9, 2048] = aten.rms_norm.default(%x0, _) {normalized_shape = [2048], eps = 1e-05}
  %x : f32[2, 9, 2048] = aten._to_copy.default(%x0) {dtype = #f32}
  %p : f32[2, 9, 2048] = aten.pow.Tensor_Scalar(%x) {exponent = 2}
  %m : f32[2, 9, 1] = aten.mean.dim(%p) {dim = [-1], keepdim = true}
  %a : f32[2, 9, 1] = aten.add.Scalar(%m) {other = 1e-05}
  %r : f32[2, 9, 1] = aten.rsqrt.default(%a)
  %y : f32[2, 9, 2048] = aten.mul.Tensor(%x, %r)
  %b : bf16[2, 9, 2048] = aten._to_copy.default(%y) {dtype = #bf16}
  output %q
  output %b
})",
          1e-2, kind);
  }
}

}  // namespace
}  // namespace neuronc::codegen::testing

namespace neuronc::codegen::testing {
namespace {

TEST(CodegenAttention, SdpaFloatMaskAcrossKeyTiles) {
  // Sk = 600 > 512: two key tiles, online softmax rescaling.
  check(R"(graph {
  input %q : f32[1, 2, 130, 32]
  input %k : f32[1, 2, 600, 32]
  input %v : f32[1, 2, 600, 48]
  input %m : f32[1, 1, 130, 600]
  %o : f32[1, 2, 130, 48] = aten.scaled_dot_product_attention.default(%q, %k, %v, %m)
  output %o
})",
        1e-5);
}

TEST(CodegenAttention, SdpaCausalGqaBoolMaskBf16) {
  check(R"(graph {
  input %q : bf16[2, 4, 40, 16]
  input %k : bf16[2, 2, 40, 16]
  input %v : bf16[2, 2, 40, 16]
  %o : bf16[2, 4, 40, 16] = aten.scaled_dot_product_attention.default(%q, %k, %v) {is_causal = true, enable_gqa = true}
  output %o
})",
        2e-2);
  check(R"(graph {
  input %q : f32[2, 3, 20, 8]
  input %k : f32[2, 3, 24, 8]
  input %v : f32[2, 3, 24, 8]
  input %m : bool[2, 1, 1, 24]
  %o : f32[2, 3, 20, 8] = aten.scaled_dot_product_attention.default(%q, %k, %v, %m) {scale = 0.5}
  output %o
})",
        1e-5);
}

// A norm's gamma and beta load as one HBM row each and are broadcast over the partitions on
// TensorE (a ones matmul, exact): the DMAs move 2 x 700 x 4 bytes, not 2 x 100 rows of them.
TEST(CodegenRow, NormWeightsLoadOnceAndBroadcastOnTensorE) {
  for (const std::string d : {"f32", "bf16"}) {
    std::string t = "graph {\n  input %x : " + d + "[100, 700]\n";
    for (const char* w : {"g", "b"}) {
      t += std::string("  param %") + w + "f : f32[700] \"ln." + w + "\"\n";
      t += std::string("  %") + w + " : " + d + "[700] = aten._to_copy.default(%" + w +
           "f) {dtype = #" + d + "}\n";
    }
    t += "  %y : " + d +
         "[100, 700] = aten.layer_norm.default(%x, %g, %b) {normalized_shape = [700], eps = "
         "1e-05}\n  output %y\n}";
    RunResult r = check(t, d == "f32" ? 1e-5 : 2e-2);
    const uint64_t es = d == "f32" ? 4 : 2;
    // x in, y out, gamma and beta one row each.
    EXPECT_EQ(dma_totals(r.part.program).bytes, 2 * 100 * 700 * es + 2 * 700 * es) << d;
  }
}

// Head groups (attention_kernel.cpp): the heads of the innermost lead dim share each Q, K and
// V load and the output store, and are software-pipelined three deep. [1, S, H, D] projections
// seen as [1, H, S, D] (BERT's layout), two query tiles (S = 200), with a float mask shared by
// the heads (loaded once per group), a bool mask per head, and causal.
std::string head_group_block(int64_t s, int64_t h, int64_t d, const std::string& mask,
                             bool causal) {
  const std::string S = std::to_string(s), H = std::to_string(h), D = std::to_string(d);
  const std::string proj = "f32[1, " + S + ", " + H + ", " + D + "]";
  const std::string heads = "f32[1, " + H + ", " + S + ", " + D + "]";
  std::string t = "graph {\n";
  for (const char* x : {"q", "k", "v"}) t += std::string("  input %") + x + "p : " + proj + "\n";
  if (!mask.empty()) t += "  input %m : " + mask + "\n";
  for (const char* x : {"q", "k", "v"})
    t += std::string("  %") + x + " : " + heads + " = aten.transpose.int(%" + x +
         "p) {dim0 = 1, dim1 = 2}\n";
  t += "  %o : " + heads + " = aten.scaled_dot_product_attention.default(%q, %k, %v" +
       (mask.empty() ? "" : ", %m") + ")" + (causal ? " {is_causal = true}" : "") + "\n";
  return t + "  output %o\n}";
}

TEST(CodegenAttention, HeadGroupsMatchTheReference) {
  for (device::TargetKind kind :
       {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    check(head_group_block(200, 6, 32, "f32[1, 1, 200, 200]", false), 1e-5, kind);
    check(head_group_block(200, 6, 32, "bool[1, 6, 200, 200]", false), 1e-5, kind);
    check(head_group_block(200, 6, 32, "", true), 1e-5, kind);
  }
  // 24 heads of 128 do not fit one group's SBUF budget on trn1: groups of 6.
  check(head_group_block(64, 24, 128, "", false), 1e-5);
}

// One query tile of 8 heads: one load each of Q, K, V and the shared mask, one store, instead
// of three loads, a mask load and a store per head.
TEST(CodegenAttention, HeadGroupMovesEachOperandOnce) {
  auto g = ir::parse(head_group_block(128, 8, 64, "f32[1, 1, 128, 128]", false));
  RunResult r = compile_and_run(*g);
  EXPECT_LE(r.max_abs_error, 1e-5 * std::max(1.0, r.max_abs_reference));
  EXPECT_EQ(dma_totals(r.part.program).transfers, 5u);
}

TEST(CodegenGather, EmbeddingOneHotMatmul) {
  check(R"(graph {
  input %ids : i64[2, 7]
  param %w : f32[300, 40] "emb.weight"
  %e : f32[2, 7, 40] = aten.embedding.default(%w, %ids)
  output %e
})",
        0.0, device::TargetKind::trn1, {}, 300);
}

}  // namespace
}  // namespace neuronc::codegen::testing

namespace neuronc::codegen::testing {
namespace {

TEST(CodegenConv, PatchEmbeddingAndPaddedStridedConv) {
  check(R"(graph {
  input %x : f32[1, 3, 32, 32]
  param %w : f32[16, 3, 8, 8] "conv.weight"
  param %b : f32[16] "conv.bias"
  %y : f32[1, 16, 4, 4] = aten.conv2d.default(%x, %w, %b) {stride = [8, 8]}
  output %y
})",
        1e-5);
  check(R"(graph {
  input %x : f32[2, 5, 9, 11]
  param %w : f32[7, 5, 3, 3] "conv.weight"
  %y : f32[2, 7, 5, 6] = aten.conv2d.default(%x, %w) {stride = [2, 2], padding = [1, 1]}
  output %y
})",
        1e-5);
}

TEST(CodegenConv, DepthwiseGroupedDilatedAndOneD) {
  // Depthwise (groups = C) across two 128-channel chunks, stride 2, padding 1, fused ReLU.
  check(R"(graph {
  input %x : f32[1, 160, 9, 9]
  param %w : f32[160, 1, 3, 3] "dw.weight"
  param %b : f32[160] "dw.bias"
  %y : f32[1, 160, 5, 5] = aten.conv2d.default(%x, %w, %b) {stride = [2, 2], padding = [1, 1], groups = 160}
  %r : f32[1, 160, 5, 5] = aten.relu.default(%y)
  output %r
})");
  // Grouped (4 groups of 6 -> 4 channels), dilation 2, asymmetric kernel.
  check(R"(graph {
  input %x : f32[2, 24, 10, 12]
  param %w : f32[16, 6, 3, 2] "g.weight"
  param %b : f32[16] "g.bias"
  %y : f32[2, 16, 6, 12] = aten.conv2d.default(%x, %w, %b) {stride = [1, 1], padding = [0, 1], dilation = [2, 2], groups = 4}
  output %y
})");
  // conv1d with "same" padding; conv2d.padding "valid".
  check(R"(graph {
  input %x : f32[2, 6, 20]
  param %w : f32[5, 6, 4] "c1.weight"
  %y : f32[2, 5, 20] = aten.conv1d.padding(%x, %w, _) {padding = "same"}
  output %y
})");
  check(R"(graph {
  input %x : f32[1, 4, 7, 7]
  param %w : f32[8, 4, 3, 3] "c.weight"
  %y : f32[1, 8, 5, 5] = aten.conv2d.padding(%x, %w, _) {padding = "valid"}
  output %y
})");
}

TEST(CodegenConv, FewInputChannelsArePackedOnPartitions) {
  // 3 x 3 x 3 = 27 taps on partitions: one matmul per output tile.
  RunResult a = check(R"(graph {
  input %x : f32[1, 3, 20, 20]
  param %w : f32[32, 3, 3, 3] "stem.weight"
  %y : f32[1, 32, 10, 10] = aten.conv2d.default(%x, %w, _) {stride = [2, 2], padding = [1, 1]}
  output %y
})");
  EXPECT_EQ(a.part.stats.instructions[static_cast<int>(device::Engine::tensor)], 1u);
  // 7 x 7 stem: (c, kh) = 21 partitions, one matmul per kernel column.
  RunResult b = check(R"(graph {
  input %x : f32[1, 3, 64, 64]
  param %w : f32[16, 3, 7, 7] "stem.weight"
  param %b : f32[16] "stem.bias"
  %y : f32[1, 16, 32, 32] = aten.conv2d.default(%x, %w, %b) {stride = [2, 2], padding = [3, 3]}
  output %y
})");
  // 32 output rows in 8 bands of 4 (two per partition quadrant, so the band loads use 12 DMA
  // engines instead of 3): 8 PSUM tiles of 4 x 32, 7 matmuls each.
  EXPECT_EQ(b.part.stats.instructions[static_cast<int>(device::Engine::tensor)], 56u);
  std::set<int> quadrants;
  for (const auto& in : b.part.program.cores[0].streams[static_cast<int>(device::Engine::tensor)])
    if (const auto* mm = std::get_if<device::MatMul>(&in.op))
      quadrants.insert(mm->stationary.partition_start);
  EXPECT_EQ(quadrants, (std::set<int>{0, 32, 64, 96}));
}

TEST(CodegenConv, WideChannelsAndStreamedWeightsBf16) {
  // 192 input channels (2 chunks), 576 x 192 x 3 x 3 weights do not stay resident.
  check(R"(graph {
  input %x : f32[1, 192, 6, 6]
  param %w : f32[288, 192, 3, 3] "c.weight"
  %y : f32[1, 288, 6, 6] = aten.conv2d.default(%x, %w, _) {padding = [1, 1]}
  output %y
})",
        1e-4);
  check(R"(graph {
  input %x : bf16[1, 64, 8, 8]
  param %w : f32[32, 64, 1, 1] "c.weight"
  %wb : bf16[32, 64, 1, 1] = aten._to_copy.default(%w) {dtype = #bf16}
  %y : bf16[1, 32, 8, 8] = aten.conv2d.default(%x, %wb, _)
  output %y
})",
        2e-2);
}

// Weights with several whole 128-channel chunks (a bottleneck's 1x1 reduction, 512 -> 128, and
// a streamed 3x3 256 -> 576) are stored with their channel rows interleaved, so partition p's
// rows of every chunk are one run: the resident weight is one DMA whose engines each stream
// 8 x 4 x 256 B = 8 KiB back to back (instead of four DMAs of 8 x 256 B runs), the streamed one
// keeps one DMA per chunk and output chunk. Both match the reference.
TEST(CodegenConv, ChannelChunksOfTheWeightInterleave) {
  for (device::TargetKind kind : {device::TargetKind::trn1, device::TargetKind::trn3}) {
    RunResult r = check(R"(graph {
  input %x : bf16[1, 512, 7, 7]
  param %w : f32[128, 512, 1, 1] "c.weight"
  %wb : bf16[128, 512, 1, 1] = aten._to_copy.default(%w) {dtype = #bf16}
  %y : bf16[1, 128, 7, 7] = aten.conv2d.default(%x, %wb, _)
  output %y
})",
                        2e-2, kind);
    const ConstantBinding* wp = bf16_constant(r);
    ASSERT_NE(wp, nullptr);
    EXPECT_EQ(wp->row_interleave, 128);
    const auto loads = dmas_reading(r, *wp);
    ASSERT_EQ(loads.size(), 1u);
    EXPECT_EQ(loads[0]->src.partition_count, 128);
    EXPECT_EQ(loads[0]->src.partition_stride, 4 * 128);
    EXPECT_EQ(loads[0]->src.free_size(), 4u * 128);
  }
  check(R"(graph {
  input %x : f32[1, 256, 6, 6]
  param %w : f32[576, 256, 3, 3] "c.weight"
  %y : f32[1, 576, 6, 6] = aten.conv2d.default(%x, %w, _) {padding = [1, 1]}
  output %y
})",
        1e-4);
}

TEST(CodegenPool, MaxAvgAdaptive) {
  check(R"(graph {
  input %x : f32[2, 3, 11, 11]
  %y : f32[2, 3, 6, 6] = aten.max_pool2d.default(%x) {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]}
  output %y
})");
  check(R"(graph {
  input %x : f32[2, 70, 8, 8]
  %y : f32[2, 70, 4, 4] = aten.avg_pool2d.default(%x) {kernel_size = [2, 2], stride = [2, 2]}
  %z : f32[2, 70, 1, 1] = aten.adaptive_avg_pool2d.default(%y) {output_size = [1, 1]}
  output %y
  output %z
})");
  check(R"(graph {
  input %x : f32[1, 5, 7, 10]
  %y : f32[1, 5, 3, 4] = aten.adaptive_avg_pool2d.default(%x) {output_size = [3, 4]}
  %m : f32[1, 5, 3, 2] = aten.max_pool2d.default(%x) {kernel_size = [3, 3], stride = [2, 3], dilation = [1, 2]}
  output %y
  output %m
})");
  check(R"(graph {
  input %x : f32[2, 4, 9]
  %y : f32[2, 4, 4] = aten.max_pool1d.default(%x) {kernel_size = [3], stride = [2]}
  %z : f32[2, 4, 3] = aten.avg_pool1d.default(%x) {kernel_size = [3], stride = [3]}
  output %y
  output %z
})");
}

TEST(CodegenDataMovement, GatherWithConstantIndex) {
  check(R"(graph {
  param %t : f32[1, 16] "token_type_ids"
  input %x : f32[1, 5]
  %i : i64[5] = aten.arange.default() {end = 5}
  %iv : i64[1, 5] = aten.view.default(%i) {size = [1, 5]}
  %g : f32[1, 5] = aten.gather.default(%t, %iv) {dim = 1}
  %y : f32[1, 5] = aten.add.Tensor(%g, %x)
  output %y
})");
}

}  // namespace
}  // namespace neuronc::codegen::testing

namespace neuronc::codegen::testing {
namespace {

TEST(CodegenParallel, ByteIdenticalForAnyThreadCount) {
  auto g = ir::parse(R"(graph {
  input %x : f32[64, 96]
  param %w1 : f32[128, 96] "w1"
  param %b1 : f32[128] "b1"
  param %w2 : f32[96, 128] "w2"
  param %g : f32[96] "g"
  %a : f32[64, 128] = aten.linear.default(%x, %w1, %b1)
  %r : f32[64, 128] = aten.gelu.default(%a)
  %s : f32[64, 128] = aten._softmax.default(%r) {dim = -1, half_to_float = false}
  %c : f32[64, 96] = aten.linear.default(%s, %w2)
  %d : f32[64, 96] = aten.add.Tensor(%c, %x)
  %n : f32[64, 96] = aten.layer_norm.default(%d, %g) {normalized_shape = [96]}
  output %n
})");
  attach_random_payloads(*g, 3);
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  std::vector<const ir::Value*> inputs, outputs;
  for (const auto& gi : g->inputs()) inputs.push_back(gi.value);
  for (const auto& go : g->outputs()) outputs.push_back(go.value);
  const device::Target& t = device::target(device::TargetKind::trn2);
  CompiledPartition base;
  for (int threads : {1, 2, 4, 0}) {
    CodegenOptions o;
    o.threads = threads;
    CompiledPartition p = compile_partition(*g, nodes, inputs, outputs, t, o);
    if (threads == 1) {
      base = std::move(p);
      continue;
    }
    EXPECT_TRUE(p.program == base.program) << "threads " << threads;
    ASSERT_EQ(p.constants.size(), base.constants.size());
    for (size_t i = 0; i < p.constants.size(); ++i) {
      EXPECT_EQ(p.constants[i].offset, base.constants[i].offset);
      EXPECT_TRUE(p.constants[i].data == base.constants[i].data);
    }
  }
}

TEST(CodegenErrors, NamesTheNodeAndWhatIsUnsupported) {
  auto g = ir::parse(R"(graph {
  sym s0 [1, 8]
  input %x : f32[s0, 4]
  %y : f32[s0, 4] = aten.relu.default(%x) loc("model.py", 3, "fc")
  output %y
})");
  std::vector<const ir::Node*> nodes = {g->nodes()[0].get()};
  try {
    compile_partition(*g, nodes, {g->inputs()[0].value}, {g->outputs()[0].value},
                      device::target(device::TargetKind::trn1), {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("symbolic dimension s0"));
  }
  auto h = ir::parse(R"(graph {
  input %x : f32[4, 4]
  %y : f32[4] = aten.cumsum.default(%x) {dim = 0} loc("model.py", 3, "fc")
  output %y
})");
  try {
    compile_partition(*h, {h->nodes()[0].get()}, {h->inputs()[0].value}, {h->outputs()[0].value},
                      device::target(device::TargetKind::trn1), {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("node 'y' (aten.cumsum.default) at model.py:3"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("codegen has no lowering for aten.cumsum.default"));
  }
}

TEST(CodegenMemory, ScratchIsReusedAcrossKernels) {
  CodegenOptions unfused;
  unfused.fuse = false;
  RunResult r = check(R"(graph {
  input %x : f32[128, 256]
  %a : f32[128, 256] = aten.relu.default(%x)
  %b : f32[128, 256] = aten.exp.default(%a)
  %c : f32[128, 256] = aten.sin.default(%b)
  %d : f32[128, 256] = aten.cos.default(%c)
  %e : f32[128, 256] = aten.tanh.default(%d)
  output %e
})",
                      1e-5, device::TargetKind::trn1, unfused);
  EXPECT_EQ(r.part.stats.kernels, 5u);
  EXPECT_LT(r.part.stats.hbm_scratch_bytes, r.part.stats.hbm_scratch_unshared_bytes);
}

TEST(CodegenFusion, ElementwiseChainsAndMatmulEpilogues) {
  const char* text = R"(graph {
  input %x : f32[32, 64]
  param %w : f32[48, 64] "w"
  param %b : f32[48] "b"
  %l : f32[32, 48] = aten.linear.default(%x, %w, %b)
  %g : f32[32, 48] = aten.gelu.default(%l) {approximate = "tanh"}
  %m : f32[32, 48] = aten.mul.Tensor(%g, %g)
  %s : f32[32, 48] = aten.sigmoid.default(%m)
  %c : f32[32, 48] = aten.mul.Scalar(%s) {other = 0.5}
  output %c
})";
  CodegenOptions unfused;
  unfused.fuse = false;
  RunResult a = check(text, 1e-5);
  RunResult b = check(text, 1e-5, device::TargetKind::trn1, unfused);
  // linear+gelu fuse; mul/sigmoid/mul fuse (gelu's value is read twice, so it stays).
  EXPECT_EQ(a.part.stats.kernels, 2u);
  EXPECT_EQ(b.part.stats.kernels, 5u);
  EXPECT_LT(a.report.total_time_ns, b.report.total_time_ns);
}

TEST(CodegenConstants, CastsOfWeightsHappenAtCompileTime) {
  RunResult r = check(R"(graph {
  input %x : bf16[8, 32]
  param %w : f32[16, 32] "w"
  %wb : bf16[16, 32] = aten._to_copy.default(%w) {dtype = #bf16}
  %y : bf16[8, 16] = aten.linear.default(%x, %wb)
  output %y
})",
                      1e-2);
  EXPECT_EQ(r.part.stats.kernels, 1u);
}

}  // namespace
}  // namespace neuronc::codegen::testing

namespace neuronc::codegen::testing {
namespace {

// Compiles `text` as one device partition for `kind` and returns the error message ("" if it
// compiled).
std::string compile_error(const std::string& text, device::TargetKind kind) {
  auto g = ir::parse(text);
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g->nodes()) nodes.push_back(n.get());
  std::vector<const ir::Value*> inputs, outputs;
  for (const auto& gi : g->inputs()) inputs.push_back(gi.value);
  for (const auto& go : g->outputs()) outputs.push_back(go.value);
  try {
    compile_partition(*g, nodes, inputs, outputs, device::target(kind), {});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CodegenLimits, PartitionLargerThanTheTargetsHbmIsRefusedBeforeEmitting) {
  // 2 x 32 GiB: more than a NeuronCore's HBM on every target (16 / 12 / 18 GiB).
  const std::string text = R"(graph {
  input %x : f32[1048576, 8192]
  %y : f32[1048576, 8192] = aten.relu.default(%x)
  output %y
})";
  for (auto kind : {device::TargetKind::trn1, device::TargetKind::trn2, device::TargetKind::trn3}) {
    const std::string msg = compile_error(text, kind);
    EXPECT_THAT(msg, ::testing::HasSubstr("bytes of HBM"));
    EXPECT_THAT(msg,
                ::testing::HasSubstr(std::string(device::target(kind).name) + " NeuronCore has " +
                                     std::to_string(device::target(kind).hbm_bytes_per_core)));
  }
  // A size that fits compiles.
  EXPECT_EQ(compile_error(R"(graph {
  input %x : f32[1024, 8192]
  %y : f32[1024, 8192] = aten.relu.default(%x)
  output %y
})",
                          device::TargetKind::trn1),
            "");
}

TEST(CodegenLimits, ElementCountThatOverflowsIsRefused) {
  const std::string msg = compile_error(R"(graph {
  input %x : f32[1099511627776, 1099511627776]
  %y : f32[1099511627776, 1099511627776] = aten.relu.default(%x)
  output %y
})",
                                        device::TargetKind::trn1);
  EXPECT_THAT(msg, ::testing::HasSubstr("more elements than fit in int64"));
}

}  // namespace
}  // namespace neuronc::codegen::testing
