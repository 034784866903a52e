// Canonicalize: rewrites the many spellings torch.export writes — training IR and core ATen,
// in-place and functional — into the smaller operator set codegen lowers.
//
// It runs after Functionalize (in-place writes are gone; clone and detach may now be dropped).
// One forward walk over a snapshot of the node list:
//  - alias spellings (multiply, subtract, divide, true_divide) become mul, sub and div,
//    floor_divide div with rounding_mode floor, swapaxes/swapdims transpose, and
//    reshape_as/view_as/expand_as a view or expand to the other tensor's shape;
//  - no-op aliases and checks disappear: alias, detach, clone, contiguous, lift_fresh_copy,
//    dropout in eval mode, _assert_tensor_metadata, conversions to the same dtype, views and
//    expands to the same shape;
//  - dtype conversions (to.dtype / to.dtype_layout / to.device / type_as) become _to_copy;
//  - shape-only ops (reshape, _unsafe_view, flatten, unflatten, squeeze, unsqueeze) become view
//    with the result shape; t and transpose become permute, and a permute that moves only
//    size-1 dims (row-major order kept) a view; a view of a view reads the first one's input;
//  - a view that keeps the last dim and is the only reader of a linear's result moves into the
//    linear's input (linear(view(a)) computes the same rows), so the linear's result has the
//    shape its consumers read and a residual add after it fuses (ViT: linear -> view ->
//    transpose(0, 1) -> add);
//  - softmax/log_softmax become _softmax/_log_softmax; native_layer_norm and
//    _native_batch_norm_legit_no_training whose statistics are unused become layer_norm /
//    batch_norm.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class Canonicalize : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
