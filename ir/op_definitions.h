// Internal to ir/: the registration functions of each operator family and the shape-rule
// helpers they share.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "kernels/window.h"

namespace neuronc::ir {

void register_matmul_ops(OpRegistry& r);
void register_conv_and_pool_ops(OpRegistry& r);
void register_elementwise_ops(OpRegistry& r);
void register_reduction_and_norm_ops(OpRegistry& r);
void register_data_movement_ops(OpRegistry& r);
void register_creation_and_indexing_ops(OpRegistry& r);
void register_collective_ops(OpRegistry& r);

namespace shape_rules {

// Wraps a negative dim and checks 0 <= dim < rank (rank 0 accepts -1 and 0, as PyTorch does).
int64_t normalize_dim(const ShapeContext& c, int64_t dim, int64_t rank, const char* what = "dim");
// NumPy broadcasting with symbolic dims: equal dims stay, 1 broadcasts; a symbol against a
// constant other than 1 is an error unless the symbol's range allows only that constant.
Shape broadcast(const ShapeContext& c, const Shape& a, const Shape& b);
// The constant value of d, or a failure naming `what`.
int64_t require_constant(const ShapeContext& c, const Dim& d, const std::string& what);
// Result dtype of an op mixing a tensor with a Python scalar (int, float or bool).
DType promote_with_scalar(DType tensor, const Attribute* scalar);
std::string shape_str(const ShapeContext& c, const Shape& s);
// Output spatial size of conv/pool windows (kernels/window.h, shared with the host kernels).
using kernels::window_out;

}  // namespace shape_rules
}  // namespace neuronc::ir
