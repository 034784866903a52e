// The IR text form, printed and parsed, so pass tests can be written as before/after IR:
//
//   graph {
//     sym s0 [1, 64]
//     input %x : f32[s0, 3]
//     param %w : f32[3, 3] "linear.weight"
//     %y : f32[s0, 3] = aten.linear.default(%x, %w, _) loc("model.py", 12, "fc")
//     %a : f32[s0], %i : i64[s0] = aten.max.dim(%y) {dim = 1, keepdim = false}
//     output %y
//     output %a buffer_mutation "running"
//   }
//
// `_` is an absent optional tensor; attributes are ints, floats (always with '.', 'e', inf or
// nan), true/false, "strings", [lists], none, dtypes as #f32, #contiguous_format,
// #strided, device("cpu", 0) and symbolic dims like s0 or 4*s0.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace neuronc::ir {

struct PrintOptions {
  bool locations = true;  // print loc(...) suffixes
};

std::string print(const Graph& g, const PrintOptions& opts = {});

// One attribute value in the text form ("[1, 2]", "#bf16", "2*s0").
std::string format_attribute(const Graph& g, const Attribute& a);

// Parses the text form. Throws ir::Error "line L:C: expected X, found Y".
std::unique_ptr<Graph> parse(std::string_view text);

}  // namespace neuronc::ir
