// Random valid ATen graphs for differential testing (NNSmith-style, docs/DIFFTEST.md).
//
// A graph starts from one or two user inputs of odd sizes and grows one operator at a time,
// each drawn from a weighted table and applied to values already in the graph: element-wise
// ops with broadcasting operands, reductions, softmax, layer norm, linear and batched matmuls,
// views (view, permute, transpose, slice, select, unsqueeze, expand), concatenation, casts to
// bf16 and back, and in-place writes through a slice or select view. Shapes come from the
// IR's own shape rules (ir::Graph::append), so every graph is valid by construction; weights
// are variance-preserving random payloads, so no output degenerates to a constant.
//
// Deterministic: the same seed and options give the same graph on every platform (the draws
// use std::mt19937_64 and integer arithmetic only, never a std:: distribution).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ir/graph.h"

namespace neuronc::difftest {

struct GeneratorOptions {
  int min_ops = 3;
  int max_ops = 10;
  int64_t max_numel = 6144;  // per tensor, so a case simulates in milliseconds
  bool bf16 = true;          // casts to bf16 and back
  bool in_place = true;      // add_ / fill_ through a view
};

// A payload owning `values` (f32), for weights built in memory.
ir::ConstantPayload f32_payload(std::vector<float> values);

// Builds the graph for `seed`. Its user inputs are f32; every weight has a payload.
std::unique_ptr<ir::Graph> generate_graph(uint64_t seed, const GeneratorOptions& opts = {});

}  // namespace neuronc::difftest
