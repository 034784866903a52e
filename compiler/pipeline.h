// The one pass pipeline: what `compile`, `analyze`, `verify` and the tests run on a program
// before partitioning, so they all see the same optimised graph.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/load.h"
#include "ir/graph.h"
#include "passes/auto_cast.h"
#include "passes/pass_manager.h"
#include "passes/tensor_parallel.h"

namespace neuronc::compiler {

struct PipelineOptions {
  std::map<std::string, int64_t> dims;  // symbol bindings (one static shape bucket)
  // The open dims of a bucketed compile: the program's reads of their sizes as data come from
  // symbol inputs the loader fills with the run's real sizes (passes/symbol_values.h), before
  // `dims` binds the shapes.
  std::set<std::string> symbol_values;
  int opt_level = 2;
  passes::AutoCastMode auto_cast = passes::AutoCastMode::none;
  passes::TensorParallelOptions tensor_parallel;  // ranks > 1: one core's program of N
  passes::TensorParallelStats* tensor_parallel_stats = nullptr;
};

// The free symbols some value's shape of `g` refers to (a product symbol stands for its
// factors). A range constraint can name a symbol nothing uses: an unbacked one from a value read
// back with item() only to be asserted on (XLM's max(lengths) <= seq).
std::set<ir::SymbolId> used_symbols(const ir::Graph& g);

// Binds every symbol of `g`: the `given` value (`--dim`), else the one the program's sample
// inputs imply. With `require_all`, a symbol left unbound throws an error naming it and its
// range and asking for `--dim`; without, it stays symbolic. A symbol no value's shape uses
// (an unbacked one from item() that only feeds an assert) needs no value.
std::map<std::string, int64_t> bind_symbolic_dims(const ir::Graph& g,
                                                  const std::vector<frontend::SampleInput>& samples,
                                                  const std::map<std::string, int64_t>& given,
                                                  bool require_all = true);

// Adds the pipeline to `pm`: shape specialisation to `o.dims` (when any), passes::build_pipeline
// at `o.opt_level`, then auto-cast and the folding it enables.
void build_compile_pipeline(passes::PassManager& pm, const PipelineOptions& o);

}  // namespace neuronc::compiler
