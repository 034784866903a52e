// Functionalize: in-place writes become functional ops with eager PyTorch's aliasing semantics,
// as torch's own functionalization does (torch/csrc/functionalization): a write through a view
// is a write to the view's base, seen by every later reader of the base and of every view of it.
//
// The training IR and TorchScript keep the writes of the Python source: BART's
// shift_tokens_right is `s = ids.new_zeros(..); s[:, 1:] = ids[:, :-1]; s[:, 0] = start;
// s.masked_fill_(s == -100, pad)`, i.e. copy_ into a slice, fill_ of a select and masked_fill_
// of the base. One forward walk keeps, for every value, where it came from:
//  - a view (slice, select, view/reshape/flatten/unflatten/squeeze/unsqueeze, permute/
//    transpose/t, split/chunk/tensor_split/unbind results, alias/detach/contiguous, a
//    same-dtype `to`) records its parent and the node that made it; the chain of parents ends at a
//    root, a value no view produced (a graph input, or any other op's result: clone and _to_copy
//    are copies, so writes to a clone never reach its source);
//  - each root has a version, bumped by every write to it or to a view of it, and the value
//    that holds its current content.
// An in-place op `op_(self, ...)` becomes the functional `op(...)` (copy_ and fill_.Tensor
// become copy, zero_ fill 0); its result is scattered back up self's view chain: slice ->
// slice_scatter, select and unbind -> unsqueeze + slice_scatter, a split result ->
// slice_scatter at its offset, view-like -> view to the parent's shape, permute -> the inverse
// permute. The scattered root is the root's new content. A later read of a value whose root
// has a newer version reads the view chain replayed on the current content (cached per value
// and version). Graph outputs read the final versions.
//
// A parameter, buffer or user input written in place with no output that records it (the
// training IR writes buffers in place and lists no BUFFER_MUTATION outputs) gets one, with its
// final content: buffer_mutation (target: its FQN) or user_input_mutation (target: its name),
// as run_decompositions() would record it. A write through a view that cannot be inverted
// (expand, as_strided, diagonal, unfold, ...) is refused with the node and the view.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class Functionalize : public Pass {
 public:
  std::string_view name() const override { return "functionalize"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
