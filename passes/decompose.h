// Decompose: rewrites operators that real vision models carry, but that codegen and the host
// kernels do not implement directly, into ones they do. Runs after canonicalize and before
// constant folding, so a decomposition of weights (weight norm) folds into constants.
//
//  - padding, every spelling torch.export writes (aten.pad in any mode, constant_pad_nd,
//    reflection_pad{1,2,3}d, replication_pad{1,2,3}d): per padded dim, a negative pad becomes
//    a slice, and the border becomes
//      constant   a `full` of the border's shape,
//      replicate  the edge slice expanded over the border,
//      reflect    the mirrored size-1 slices, in order,
//      circular   the slice from the other end,
//    concatenated with the body (`cat`, which codegen writes without copying the body when its
//    producer can write into the slice). The padded dim must be static (reflect, replicate and
//    circular index from its end); the others may be symbolic.
//  - _weight_norm(v, g, dim): v * (g / sqrt(sum(v^2) over every dim but `dim`)), the formula
//    of PyTorch's core-ATen decomposition.
//  - slice_scatter with step 1: cat of the part of self before the slice, src, and the rest.
//  - copy(self, src): src expanded to self's shape and cast to its dtype.
//  - empty, empty_like, empty_permuted: zeros (their contents are unspecified; zeros keep
//    compilation deterministic).
//  - index with one integer 1-D index and full slices elsewhere: index_select on that dim.
//
// Every new node keeps the replaced node's source location; the final result keeps its name.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class Decompose : public Pass {
 public:
  std::string_view name() const override { return "decompose"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
