// A small reference evaluator for constant folding: computes one IR node on host tensors held
// as doubles (exact for every integer up to 2^53, and for bf16/f16/f32 values; results are
// rounded to the result dtype). Only the operators that build masks, positions, rotary tables
// and dtype conversions of constants are covered; anything else returns nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

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

// Evaluates `n` on `inputs` (null entries for absent optional tensors). nullopt when the
// operator is not covered.
std::optional<std::vector<HostTensor>> evaluate(const ir::Node& n,
                                                const std::vector<const HostTensor*>& inputs);

}  // namespace neuronc::passes
