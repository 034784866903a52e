// View lowering: the ops that are views of their operand (view, permute, expand, slice, ...)
// become HbmViews of the operand's buffer, no copy and no kernel, whenever the view is
// expressible as offset + strides (PyTorch's computeStride rule for reshapes). The view
// algebra itself is hbm_view.h; this maps IR nodes onto it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/hbm_view.h"
#include "ir/graph.h"

namespace neuronc::codegen {

// Ops that are views of their operand, lowered without a kernel when the view is expressible,
// else by a materialising copy.
bool is_alias_op(const std::string& op);

// Whether `n` is a view of its first operand when expressible: an alias op, or a cast to the
// operand's own device dtype.
bool is_view_node(const ir::Node& n);

// The dims a permute, transpose or t node reorders its rank-`rank` operand by (result dim i is
// operand dim perm[i], negatives resolved), or nullopt for any other node.
std::optional<std::vector<int64_t>> view_permutation(const ir::Node& n, int64_t rank);

// The views of `n`'s results over its operand's view `x` (each in its result's device dtype),
// or nullopt when a result needs a copy (a reshape the strides do not allow). `n` is a view
// node.
std::optional<std::vector<HbmView>> lower_view(const ir::Node& n, const HbmView& x);

// A dense layout of `shape` whose view permuted by `perm` (as view_permutation gives it) is
// row-major contiguous: a producer storing in it makes that permuted reader a pure view.
HbmView layout_contiguous_under(device::DType dtype, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& perm);

}  // namespace neuronc::codegen
