// A dynamic dim's size as data: the 0-d value a program reads where it uses `x.size(0)`,
// `x.numel()` or `s - 1` as a number, computed from symbol inputs (InputRole::symbol), which the
// loader binds to the run's real size (passes/symbol_values.h, docs/DESIGN.md "Shape buckets").
// The frontend (symbolic arithmetic) and the passes (size reads, a mean's or a variance's count)
// make them here, so each symbol has one input per dtype however many places read it.
#pragma once

#include <string>

#include "ir/graph.h"

namespace neuronc::ir {

// The symbol input of free symbol `s` in dtype `dt` (0-d, named "size_<symbol>_<dtype>"), made
// on first use.
Value* symbol_input(Graph& g, SymbolId s, DType dt);

// The value of dim `d` (symbolic) in the run as a 0-d tensor of `dt`: the symbol inputs of its
// free symbols multiplied, times its coefficient. The nodes go before `at`, with its source
// location, or, when `at` is null, at the graph's end named after `name` (a fresh name each, so
// that a node the caller adds later keeps its own).
Value* symbol_value(Graph& g, const Dim& d, DType dt, const Node* at, const std::string& name = "");

}  // namespace neuronc::ir
