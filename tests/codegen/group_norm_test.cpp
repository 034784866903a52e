// codegen: group norm (group_norm, native_group_norm) and layer norms over channels / large
// extents, compiled, run on the device model of every target (functional, race checker on) and
// compared with the reference (the host kernels).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace neuronc::codegen::testing {
namespace {

constexpr device::TargetKind kTargets[] = {device::TargetKind::trn1, device::TargetKind::trn2,
                                           device::TargetKind::trn3};

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Runs `text` on every target; expects every output within `tol` x max(1, max|reference|).
// Returns the largest error seen.
double check_all_targets(const std::string& text, double tol, const char* what) {
  double worst = 0;
  for (device::TargetKind kind : kTargets) {
    auto g = ir::parse(text);
    attach_random_payloads(*g, 11);
    RunResult r = compile_and_run(*g, kind, {}, 3);
    EXPECT_LE(r.max_abs_error, tol * std::max(1.0, r.max_abs_reference))
        << what << " on " << device::target(kind).name << ": max |ref| " << r.max_abs_reference;
    worst = std::max(worst, r.max_abs_error);
  }
  std::printf("%s: max abs error %g over trn1/trn2/trn3\n", what, worst);
  return worst;
}

// group_norm over x [shape] in `dt` with an affine weight and bias (f32 params, cast when
// `dt` is narrower).
std::string group_norm_graph(const std::vector<int64_t>& shape, int64_t groups,
                             const std::string& dt, double eps = 1e-5) {
  const std::string C = std::to_string(shape[1]);
  std::string s = "graph {\n  input %x : " + dt + shape_str(shape) + "\n";
  s += "  param %w : f32[" + C + "] \"gn.weight\"\n  param %b : f32[" + C + "] \"gn.bias\"\n";
  std::string w = "%w", b = "%b";
  if (dt != "f32") {
    s += "  %wc : " + dt + "[" + C + "] = aten._to_copy.default(%w) {dtype = #" + dt + "}\n";
    s += "  %bc : " + dt + "[" + C + "] = aten._to_copy.default(%b) {dtype = #" + dt + "}\n";
    w = "%wc", b = "%bc";
  }
  s += "  %y : " + dt + shape_str(shape) + " = aten.group_norm.default(%x, " + w + ", " + b +
       ") {num_groups = " + std::to_string(groups) + ", eps = " + std::to_string(eps) + "}\n";
  s += "  output %y\n}";
  return s;
}

struct GroupNormCase {
  std::vector<int64_t> shape;
  int64_t groups;
  const char* what;
};

const GroupNormCase kCases[] = {
    {{2, 64, 8, 8}, 8, "8 channels per group, 16 groups per tile, rows across the batch"},
    {{2, 96, 10, 10}, 1, "groups=1, C=96 (not a multiple of 128)"},
    {{2, 48, 7, 7}, 48, "groups=C (instance-norm-like)"},
    {{1, 160, 9, 9}, 1, "a group of 160 channels spans two tiles"},
    {{2, 320, 5, 5}, 32, "C=320, 10 channels per group: tiles cut the batch boundary"},
    {{1, 32, 96, 96}, 8, "H*W = 9216: resident, several chunks"},
    {{1, 8, 160, 160}, 2, "H*W = 25600: streamed from HBM on every pass"},
    {{4, 24, 50}, 6, "N, C, L input"},
};

TEST(CodegenGroupNorm, MatchesReferenceFp32) {
  for (const GroupNormCase& c : kCases)
    check_all_targets(group_norm_graph(c.shape, c.groups, "f32"), 2e-5, c.what);
}

TEST(CodegenGroupNorm, MatchesReferenceBf16) {
  for (const GroupNormCase& c : kCases)
    check_all_targets(group_norm_graph(c.shape, c.groups, "bf16"), 2e-2, c.what);
}

TEST(CodegenGroupNorm, OneKernelNoHostWork) {
  auto g = ir::parse(group_norm_graph({2, 64, 8, 8}, 8, "f32"));
  attach_random_payloads(*g, 11);
  RunResult r = compile_and_run(*g);
  EXPECT_EQ(r.part.stats.kernels, 1u);
  EXPECT_GT(r.part.stats.instructions[static_cast<int>(device::Engine::tensor)], 0u);
}

TEST(CodegenGroupNorm, NativeGroupNormMeanAndRstd) {
  // mean / rstd are [N, G]; read by a later node and returned.
  check_all_targets(R"(graph {
  input %x : f32[2, 320, 5, 5]
  param %w : f32[320] "gn.weight"
  param %b : f32[320] "gn.bias"
  %y : f32[2, 320, 5, 5], %mean : f32[2, 32], %rstd : f32[2, 32] = aten.native_group_norm.default(%x, %w, %b) {N = 2, C = 320, HxW = 25, group = 32, eps = 1e-06}
  %s : f32[2, 32] = aten.mul.Tensor(%mean, %rstd)
  output %y
  output %mean
  output %rstd
  output %s
})",
                    2e-5, "native_group_norm with mean and rstd");
  check_all_targets(R"(graph {
  input %x : f32[1, 256, 4, 4]
  %y : f32[1, 256, 4, 4], %mean : f32[1, 1], %rstd : f32[1, 1] = aten.native_group_norm.default(%x, _, _) {N = 1, C = 256, HxW = 16, group = 1, eps = 1e-05}
  output %y
  output %rstd
})",
                    2e-5, "native_group_norm, no affine, one 256-channel group");
}

TEST(CodegenGroupNorm, WeightOnlyAndBiasOnly) {
  check_all_targets(R"(graph {
  input %x : f32[2, 40, 6, 6]
  param %w : f32[40] "gn.weight"
  param %b : f32[40] "gn.bias"
  %y : f32[2, 40, 6, 6] = aten.group_norm.default(%x, %w, _) {num_groups = 5, eps = 1e-05}
  %z : f32[2, 40, 6, 6] = aten.group_norm.default(%x, _, %b) {num_groups = 10, eps = 0.001}
  output %y
  output %z
})",
                    2e-5, "group norm with weight only / bias only");
}

TEST(CodegenGroupNorm, PermutedChannelsLastInput) {
  // NHWC storage viewed as NCHW: rows (n, c) have stride 1, spatial stride C; the batch does
  // not merge with the channels.
  check_all_targets(R"(graph {
  input %x : f32[2, 6, 6, 64]
  param %w : f32[64] "gn.weight"
  param %b : f32[64] "gn.bias"
  %p : f32[2, 64, 6, 6] = aten.permute.default(%x) {dims = [0, 3, 1, 2]}
  %y : f32[2, 64, 6, 6] = aten.group_norm.default(%p, %w, %b) {num_groups = 4, eps = 1e-05}
  output %y
})",
                    2e-5, "group norm of a channels-last view");
}

TEST(CodegenLayerNorm, ChannelsLastAsInConvNeXt) {
  // ConvNeXt's LayerNorm2d: permute to NHWC, layer_norm over C, permute back.
  check_all_targets(R"(graph {
  input %x : f32[2, 96, 7, 7]
  param %w : f32[96] "norm.weight"
  param %b : f32[96] "norm.bias"
  %p : f32[2, 7, 7, 96] = aten.permute.default(%x) {dims = [0, 2, 3, 1]}
  %n : f32[2, 7, 7, 96] = aten.layer_norm.default(%p, %w, %b) {normalized_shape = [96], eps = 1e-06}
  %q : f32[2, 96, 7, 7] = aten.permute.default(%n) {dims = [0, 3, 1, 2]}
  output %q
})",
                    2e-5, "ConvNeXt channels-last layer norm");
}

TEST(CodegenLayerNorm, OverChannelsAndSpaceBeyondOneRow) {
  // normalized_shape [C, H, W] with C*H*W = 16384 > 12288: the group-norm kernel's path.
  check_all_targets(R"(graph {
  input %x : f32[2, 64, 16, 16]
  param %w : f32[64, 16, 16] "ln.weight"
  param %b : f32[64, 16, 16] "ln.bias"
  %n : f32[2, 64, 16, 16] = aten.layer_norm.default(%x, %w, %b) {normalized_shape = [64, 16, 16], eps = 1e-05}
  output %n
})",
                    2e-5, "layer norm over [64, 16, 16]");
  check_all_targets(R"(graph {
  input %x : bf16[3, 20000]
  %n : bf16[3, 20000] = aten.layer_norm.default(%x) {normalized_shape = [20000], eps = 1e-05}
  output %n
})",
                    2e-2, "layer norm over 20000 elements, bf16, no affine");
}

}  // namespace
}  // namespace neuronc::codegen::testing
