// Computing IR nodes at compile time: one node is run through the host kernels
// (kernels/host_kernel.h), the same CPU code the loader runs for host-placed operators, so a value
// folded at compile time is the value the host would compute at run time. Constant folding uses
// it, and so do passes and tests that need a node's value.
//
// Also here: constants as host tensors of doubles (exact for every integer up to 2^53 and for
// every bf16/f16/f32 value), for passes that rewrite constants arithmetically (batch-norm
// folding, sibling-linear fusion).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "kernels/arg.h"
#include "kernels/host_kernel.h"
#include "neuronc/status.h"

namespace neuronc::passes {

struct HostTensor {
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;
  std::vector<double> data;  // row-major
};

// Reads a constant graph input's payload (honouring storage offset and strides).
std::optional<HostTensor> read_constant(const ir::Value& v);
// Encodes a host tensor as little-endian bytes of its dtype (bf16/f16 rounded to nearest even).
std::vector<std::byte> encode(const HostTensor& t);
// Rounds a double to what dtype `t` can hold (bf16/f16/f32 rounding, integer wrap, bool).
double round_to(ir::DType t, double v);

// The node's schema arguments as a host-kernel call, in schema order. Tensor operands are
// numbered by `index(slot, value)`, where `slot` is the operand's position in n.inputs(); an
// absent optional operand is None (or -1 inside a tensor list) without calling `index`.
// Symbolic ints must be bound (the shapes are specialised) before this is called.
using OperandIndex = std::function<int32_t(size_t slot, const ir::Value& value)>;
std::vector<kernels::Arg> kernel_args(const ir::Node& n, const OperandIndex& index);

// A dense row-major tensor; `owner` keeps `data` alive (a constant's payload, or bytes a kernel
// wrote).
struct DenseTensor {
  ::neuronc::DType dtype = ::neuronc::DType::f32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  std::shared_ptr<const void> owner;

  size_t nbytes() const;
  // A read-only view for a kernel call (the kernels never write their inputs).
  host::HostTensor view() const;
  // Owns a copy of `bytes`.
  static DenseTensor owning(::neuronc::DType dtype, std::vector<int64_t> shape,
                            std::vector<std::byte> bytes);
};

// The constant graph input `v`'s value as a dense tensor: its payload's bytes shared, not
// copied, when they are already dense; gathered (or, for a deferred cast, converted: see
// ir::ConstantPayload::stored_dtype) into new bytes otherwise. nullopt when `v` has no
// payload, an absent one (ir::ConstantPayload::absent), a symbolic shape, or a payload shorter
// than its shape and strides need.
std::optional<DenseTensor> dense_constant(const ir::Value& v);
// The same for a payload held apart from its value (a state's initial bytes, GraphInput::initial).
std::optional<DenseTensor> dense_payload(const ir::ConstantPayload& p, const ir::TensorType& type);

// Runs `n` on `inputs` (one entry per n.inputs(), null for an absent optional operand) with the
// host kernel for n.op(), producing one dense tensor per output in the node's static output
// types. An error names why it cannot: no host kernel, a symbolic output shape, or the kernel's
// own refusal (an index out of range, a shape it does not accept).
Result<std::vector<DenseTensor>> evaluate_on_host(const ir::Node& n,
                                                  std::span<const DenseTensor* const> inputs);

// The same on host tensors of doubles, for tests and arithmetic passes. nullopt when the node
// cannot be evaluated (see evaluate_on_host).
std::optional<std::vector<HostTensor>> evaluate(const ir::Node& n,
                                                const std::vector<const HostTensor*>& inputs);

}  // namespace neuronc::passes
