// ExpandComposites: operators models carry that are compositions of ops neuronc already runs,
// rewritten into them. Runs after Decompose, before constant folding (the interpolation
// matrices of an upsample are constants).
//
//  - min.other / max.other (torch.min(a, b)): minimum / maximum.
//  - repeat(x, r): x viewed with a size-1 dim before each dim, expanded by r, viewed back
//    (the pattern of repeat_kv, which codegen copies with one DMA per run); repeat_interleave
//    with an int count: a size-1 dim after the repeated one, expanded.
//  - roll(x, shifts, dims): per rolled dim, the cat of its last `shift` rows and the rest; no
//    dims rolls the flattened tensor. The rolled dim must be static.
//  - linalg_vector_norm(x, ord, dim, keepdim): ord 2 sqrt(sum(x·x)), 1 sum(|x|), ±inf
//    amax/amin(|x|), 0 the count of non-zeros, any other p sum(|x|^p)^(1/p) — PyTorch's
//    core-ATen decomposition.
//  - upsample_nearest2d / upsample_bilinear2d (.vec, NCHW): along each spatial dim, a linear
//    with a constant [out, in] interpolation matrix whose rows hold the source weights
//    PyTorch computes (area_pixel_compute_source_index: the scale is 1/scale_factor when a
//    factor is given, else in/out; align_corners maps the corner pixels onto each other);
//    nearest with an integer factor is a view/expand/view instead (exact, no arithmetic).
//  - einsum: each operand first sums the letters only it has and no output keeps; two
//    operands become one bmm over [batch letters, kept letters of the first, contracted
//    letters] and [batch, contracted, kept of the second], then the output permutation; more
//    than two fold left to right; one operand is a permute. An ellipsis, a repeated letter in
//    one operand (a diagonal), or a letter whose sizes differ between operands is refused.
//  - adaptive_avg_pool3d with even windows (video heads): a view to [..., Do, kd, Ho, kh, Wo,
//    kw] and a mean over the window dims; uneven windows are left (and refused).
//  - max.dim / min.dim: amax / amin for the values, argmax / argmin for the indices (only when
//    read); var.correction: sum((x - mean)²) / (N - correction) (found by the differential
//    tester: both are core ATen and had neither a lowering nor a host kernel).
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class ExpandComposites : public Pass {
 public:
  std::string_view name() const override { return "expand-composites"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
