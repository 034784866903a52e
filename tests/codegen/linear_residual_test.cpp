// codegen: residual epilogues of the matmul family. A linear / addmm / mm / bmm / matmul whose
// only use is add(residual) (optionally followed by an activation) runs as one kernel that loads
// the residual tile, in the matmul's own [batch, M, N] tile order, next to the PSUM result. The
// results must be bit-identical to the unfused program, the add kernel must disappear with
// exactly one store and one load of the matmul's output, and every case the fusion must not
// take (including a residual view that does not fit the kernel's layout) keeps the add kernel.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

// With and without the residual epilogue (off = unfused, on = fused): both match the reference
// and each other.
OptionComparison compare(const std::string& text,
                         device::TargetKind kind = device::TargetKind::trn1, double tol = 1e-5) {
  return compare_option(
      text, kind, tol, [](CodegenOptions& opts, bool on) { opts.fuse_residual = on; }, 5, 13);
}

// The fused program has one kernel fewer and moves exactly one store and one load of the
// matmul's output (`out_bytes`) less; it is also faster on the device model.
void expect_fused(const OptionComparison& c, uint64_t out_bytes, const std::string& what) {
  EXPECT_EQ(c.on.part.stats.kernels + 1, c.off.part.stats.kernels) << what;
  EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, 2 * out_bytes) << what;
  EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns) << what;
}

void expect_unfused(const OptionComparison& c, const std::string& what) {
  EXPECT_EQ(c.on.part.stats.kernels, c.off.part.stats.kernels) << what;
  EXPECT_EQ(c.on_dma.bytes, c.off_dma.bytes) << what;
}

// Weights are f32 parameters; `dt` bf16 converts them at compile time (auto-cast weights).
std::string param(const std::string& name, const std::string& shape, const std::string& dt) {
  std::string s = "  param %" + name + "_f : f32[" + shape + "] \"" + name + "\"\n";
  s += "  %" + name + " : " + dt + "[" + shape + "] = aten._to_copy.default(%" + name + "_f)" +
       " {dtype = #" + dt + "}\n";
  return s;
}

constexpr int64_t kB = 2, kS = 80, kH = 192;

// Transformer sub-block on [B, S, H]: linear (attention output projection) -> add(x) ->
// [gelu] -> layer_norm.
std::string block(const std::string& dt, bool bias, const std::string& act, int64_t b = kB,
                  int64_t s = kS) {
  const std::string X = std::to_string(b) + ", " + std::to_string(s) + ", " + std::to_string(kH);
  const std::string H = std::to_string(kH);
  std::string t = "graph {\n  input %x : " + dt + "[" + X + "]\n";
  t += param("w", H + ", " + H, dt) + param("g", H, dt) + param("beta", H, dt);
  if (bias) t += param("b", H, dt);
  t += "  %l : " + dt + "[" + X + "] = aten.linear.default(%x, %w" + (bias ? ", %b" : "") + ")\n";
  t += "  %s : " + dt + "[" + X + "] = aten.add.Tensor(%l, %x)\n";
  std::string last = "s";
  if (!act.empty()) {
    t += "  %a : " + dt + "[" + X + "] = aten." + act + ".default(%s)\n";
    last = "a";
  }
  t += "  %y : " + dt + "[" + X + "] = aten.layer_norm.default(%" + last +
       ", %g, %beta) {normalized_shape = [" + H + "], eps = 1e-05}\n";
  t += "  output %y\n}";
  return t;
}

constexpr device::TargetKind kTargets[] = {device::TargetKind::trn1, device::TargetKind::trn2,
                                           device::TargetKind::trn3};

// 160 rows (two m-tiles, the second of 32): B loads once, so each m-tile's rows are complete
// before the next starts and the layer norm is the epilogue per m-tile as well: three kernels
// become one, two round trips of the output fewer.
TEST(CodegenLinearResidual, TransformerBlock) {
  for (const char* dt : {"f32", "bf16"}) {
    const bool bf16 = std::string(dt) == "bf16";
    const uint64_t out_bytes = kB * kS * kH * (bf16 ? 2 : 4);
    for (bool bias : {true, false})
      for (const char* act : {"", "gelu"})
        for (device::TargetKind kind : kTargets) {
          const std::string what = std::string("linear") + (bias ? "+bias" : "") + " + x" +
                                   (*act ? " -> gelu" : "") + " -> layer_norm " + dt;
          OptionComparison c = compare(block(dt, bias, act), kind, bf16 ? 5e-2 : 1e-4);
          EXPECT_EQ(c.on.part.stats.kernels + 2, c.off.part.stats.kernels) << what;
          EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, 4 * out_bytes) << what;
          EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns) << what;
          print_comparison(what, kind, c);
        }
  }
}

// At most 128 rows (BERT at batch 1): the layer norm is the matmul's epilogue as well. The rows
// stay in SBUF until normalised, so the add's result never reaches HBM: two kernels and two
// round trips fewer, the same bits (emit_row_norm is the row kernel's own sequence).
TEST(CodegenLinearResidual, LayerNormIsTheEpilogueBitIdentically) {
  for (const char* dt : {"f32", "bf16"}) {
    const bool bf16 = std::string(dt) == "bf16";
    const uint64_t out_bytes = 100 * kH * (bf16 ? 2 : 4);
    for (bool bias : {true, false})
      for (const char* act : {"", "gelu"})
        for (device::TargetKind kind : kTargets) {
          const std::string what = std::string("100 rows: linear") + (bias ? "+bias" : "") +
                                   " + x" + (*act ? " -> gelu" : "") + " -> layer_norm " + dt;
          OptionComparison c = compare(block(dt, bias, act, 1, 100), kind, bf16 ? 5e-2 : 1e-4);
          EXPECT_EQ(c.on.part.stats.kernels + 2, c.off.part.stats.kernels) << what;
          // Two round trips of the output fewer; gamma and beta load as one row each in both
          // (broadcast over the partitions on TensorE).
          EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, 4 * out_bytes) << what;
          EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns) << what;
          print_comparison(what, kind, c);
        }
  }
}

// `--auto-cast matmul`'s FFN: linear (bf16) -> f32 -> gelu -> bf16 -> linear. With the
// narrowing store the up projection's kernel applies gelu and stores bf16 itself, so the
// intermediate crosses HBM in bf16 instead of in f32 converted by the next load: half the bytes
// of the hand-off, bit-identical.
TEST(CodegenLinearResidual, NarrowingCastAfterTheActivationIsStoredByTheKernel) {
  for (const char* bias : {"", "b1"}) {
    std::string t = "graph {\n  input %x : bf16[64, 96]\n";
    t += param("w1", "192, 96", "bf16") + param("w2", "96, 192", "bf16");
    if (*bias) t += param("b1", "192", "bf16");
    t += std::string("  %u : bf16[64, 192] = aten.linear.default(%x, %w1") +
         (*bias ? ", %b1" : "") + ")\n";
    t += "  %uf : f32[64, 192] = aten._to_copy.default(%u) {dtype = #f32}\n";
    t += "  %h : f32[64, 192] = aten.gelu.default(%uf)\n";
    t += "  %hb : bf16[64, 192] = aten._to_copy.default(%h) {dtype = #bf16}\n";
    t += "  %y : bf16[64, 96] = aten.linear.default(%hb, %w2)\n  output %y\n}";
    for (device::TargetKind kind : kTargets) {
      const OptionComparison c = compare_option(
          t, kind, 5e-2, [](CodegenOptions& o, bool on) { o.fuse_narrowing_store = on; }, 5, 13);
      const std::string what = std::string("ffn gelu -> bf16") + (*bias ? " + bias" : "");
      print_comparison(what, kind, c);
      // h crosses HBM as bf16 (64 x 192 x 2 bytes, stored and loaded) instead of f32.
      EXPECT_EQ(c.off_dma.bytes - c.on_dma.bytes, 2u * 64 * 192 * 2) << what;
      EXPECT_LT(c.on.report.total_time_ns, c.off.report.total_time_ns) << what;
      EXPECT_EQ(c.on.part.stats.kernels, c.off.part.stats.kernels) << what;
    }
  }
}

TEST(CodegenLinearResidual, FeedForwardDownProjection) {
  // FFN: up projection -> gelu (a plain activation epilogue in both) -> down projection ->
  // add(x): the down projection absorbs the add. K = 384 runs three PSUM accumulation steps.
  for (const char* dt : {"f32", "bf16"}) {
    const bool bf16 = std::string(dt) == "bf16";
    std::string t = "graph {\n  input %x : " + std::string(dt) + "[2, 40, 128]\n";
    t += param("w1", "384, 128", dt) + param("b1", "384", dt);
    t += param("w2", "128, 384", dt) + param("b2", "128", dt);
    t += std::string("  %u : ") + dt + "[2, 40, 384] = aten.linear.default(%x, %w1, %b1)\n";
    t += std::string("  %h : ") + dt + "[2, 40, 384] = aten.gelu.default(%u)\n";
    t += std::string("  %d : ") + dt + "[2, 40, 128] = aten.linear.default(%h, %w2, %b2)\n";
    t += std::string("  %y : ") + dt + "[2, 40, 128] = aten.add.Tensor(%x, %d)\n";
    t += "  output %y\n}";
    for (device::TargetKind kind : kTargets) {
      OptionComparison c = compare(t, kind, bf16 ? 5e-2 : 1e-4);
      expect_fused(c, 2 * 40 * 128 * (bf16 ? 2 : 4), std::string("ffn ") + dt);
      print_comparison(std::string("ffn ") + dt, kind, c);
    }
  }
}

TEST(CodegenLinearResidual, MatmulFamily) {
  struct Case {
    const char* name;
    const char* text;
    uint64_t out_bytes;
  };
  const Case cases[] = {
      {"mm + relu", R"(graph {
  input %a : f32[150, 64]
  input %r : f32[150, 96]
  param %w : f32[64, 96] "w"
  %m : f32[150, 96] = aten.mm.default(%a, %w)
  %s : f32[150, 96] = aten.add.Tensor(%r, %m)
  %y : f32[150, 96] = aten.relu.default(%s)
  output %y
})",
       150 * 96 * 4},
      {"addmm (beta, alpha)", R"(graph {
  input %a : f32[64, 48]
  input %r : f32[64, 32]
  param %w : f32[48, 32] "w"
  param %b : f32[32] "b"
  %m : f32[64, 32] = aten.addmm.default(%b, %a, %w) {beta = 0.5, alpha = 2.0}
  %s : f32[64, 32] = aten.add.Tensor(%m, %r)
  output %s
})",
       64 * 32 * 4},
      {"bmm + silu", R"(graph {
  input %a : bf16[3, 40, 64]
  input %b : bf16[3, 64, 72]
  input %r : bf16[3, 40, 72]
  %m : bf16[3, 40, 72] = aten.bmm.default(%a, %b)
  %s : bf16[3, 40, 72] = aten.add.Tensor(%m, %r)
  %y : bf16[3, 40, 72] = aten.silu.default(%s)
  output %y
})",
       3 * 40 * 72 * 2},
      {"matmul 3-D @ 2-D", R"(graph {
  input %a : f32[2, 30, 64]
  input %r : f32[2, 30, 40]
  param %w : f32[64, 40] "w"
  %m : f32[2, 30, 40] = aten.matmul.default(%a, %w)
  %s : f32[2, 30, 40] = aten.add.Tensor(%m, %r)
  output %s
})",
       2 * 30 * 40 * 4},
      // --auto-cast matmul: a bf16 linear cast back to f32 before the f32 add; the cast is the
      // evacuation's (no bf16 rounding of the matmul value), the sum is f32.
      {"auto-cast linear", R"(graph {
  input %x : f32[2, 24, 64]
  param %w_f : f32[64, 64] "w"
  %w : bf16[64, 64] = aten._to_copy.default(%w_f) {dtype = #bf16}
  %xb : bf16[2, 24, 64] = aten._to_copy.default(%x) {dtype = #bf16}
  %lb : bf16[2, 24, 64] = aten.linear.default(%xb, %w)
  %l : f32[2, 24, 64] = aten._to_copy.default(%lb) {dtype = #f32}
  %s : f32[2, 24, 64] = aten.add.Tensor(%x, %l)
  %y : f32[2, 24, 64] = aten.gelu.default(%s) {approximate = "tanh"}
  output %y
})",
       2 * 24 * 64 * 4},
      // x is a permuted view (no flat [B*S, K] layout): the kernel keeps the batch dim, and the
      // permuted residual fits that [B, S, N] order.
      {"permuted input and residual", R"(graph {
  input %xt : f32[24, 2, 64]
  param %w : f32[48, 64] "w"
  input %rt : f32[24, 2, 48]
  %x : f32[2, 24, 64] = aten.permute.default(%xt) {dims = [1, 0, 2]}
  %r : f32[2, 24, 48] = aten.permute.default(%rt) {dims = [1, 0, 2]}
  %l : f32[2, 24, 48] = aten.linear.default(%x, %w)
  %s : f32[2, 24, 48] = aten.add.Tensor(%l, %r)
  output %s
})",
       2 * 24 * 48 * 4},
  };
  for (const Case& k : cases) {
    const bool bf16 = std::string(k.text).find("bf16[3") != std::string::npos;
    for (device::TargetKind kind : kTargets) {
      OptionComparison c =
          compare(k.text, kind, bf16 || std::string(k.name) == "auto-cast linear" ? 5e-2 : 1e-4);
      expect_fused(c, k.out_bytes, k.name);
      if (kind == device::TargetKind::trn2) print_comparison(k.name, kind, c);
    }
  }
}

TEST(CodegenLinearResidual, UnsafeCasesKeepTheAddKernel) {
  const std::string head =
      "graph {\n  input %x : f32[2, 24, 64]\n  param %w : f32[64, 64] \"w\"\n  %l : f32[2, 24, "
      "64] = aten.linear.default(%x, %w)\n";
  const char* bodies[] = {
      // alpha 2
      "  %s : f32[2, 24, 64] = aten.add.Tensor(%l, %x) {alpha = 2}\n  output %s\n}",
      // the matmul output is read again
      "  %s : f32[2, 24, 64] = aten.add.Tensor(%l, %x)\n  %t : f32[2, 24, 64] = "
      "aten.mul.Tensor(%s, %l)\n  output %t\n}",
      // the matmul output is a partition output
      "  %s : f32[2, 24, 64] = aten.add.Tensor(%l, %x)\n  output %s\n  output %l\n}",
      // a broadcast residual
      "  input %r : f32[64]\n  %s : f32[2, 24, 64] = aten.add.Tensor(%l, %r)\n  output %s\n}",
      // another dtype (the add promotes)
      "  input %r : bf16[2, 24, 64]\n  %s : f32[2, 24, 64] = aten.add.Tensor(%l, %r)\n  output "
      "%s\n}",
      // the residual is the matmul itself
      "  %s : f32[2, 24, 64] = aten.add.Tensor(%l, %l)\n  output %s\n}",
      // the residual is computed after the matmul
      "  %r : f32[2, 24, 64] = aten.tanh.default(%x)\n  %s : f32[2, 24, 64] = "
      "aten.add.Tensor(%l, %r)\n  output %s\n}",
  };
  for (const char* body : bodies) expect_unfused(compare(head + body), body);

  // The kernel flattens x [2, 24, 64] to [48, 64]; a residual permuted from [24, 2, 64] has no
  // [48, N] layout, so the group dissolves when the matmul is reached.
  OptionComparison c = compare(R"(graph {
  input %x : f32[2, 24, 64]
  input %rt : f32[24, 2, 64]
  param %w : f32[64, 64] "w"
  %r : f32[2, 24, 64] = aten.permute.default(%rt) {dims = [1, 0, 2]}
  %l : f32[2, 24, 64] = aten.linear.default(%x, %w)
  %s : f32[2, 24, 64] = aten.add.Tensor(%l, %r)
  %y : f32[2, 24, 64] = aten.relu.default(%s)
  output %y
})");
  expect_unfused(c, "permuted residual");
}

}  // namespace
}  // namespace neuronc::codegen::testing
