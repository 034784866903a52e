// Tensor parallelism (`neuronc compile --tp N`): rewrites a program into the program one of N
// NeuronCores runs, Megatron-style, with the collectives that keep the cores' results whole.
//
// The pass re-emits the graph node by node while tracking, for each value, whether every core
// holds all of it (replicated) or the r-th of N equal contiguous chunks along one axis (split):
// - a linear whose input is replicated and whose weight is a constant with N | out_features is
//   column-parallel: each core keeps its rows of the weight and bias, and its result is split on
//   the last axis;
// - a linear whose input is split on its last (reduction) axis is row-parallel: each core keeps
//   its columns of the weight, the partial products meet in a neuronc.all_reduce, and the bias
//   is added once after it;
// - an embedding of a constant table is split over the hidden axis;
// - split values flow through element-wise work (a broadcast operand of size 1 on the split axis,
//   or a constant sliced the same way), views and reshapes that keep the split axis outermost in
//   its group (so [B, S, H*d] split on the last axis becomes [B, S, H, d] split over heads when N
//   divides H), permutes, expands, slices and selects off the split axis, batched matmuls and
//   attention over split heads, reductions and norms over other axes, and index_copy / index_put
//   into a state split the same way (a KV cache sharded over its heads);
// - anything else, and any node the device does not run, sees whole operands: its split operands
//   meet in a neuronc.all_gather first. So a pattern the rules do not know costs communication,
//   never correctness.
// Outputs are made whole; a state (a KV cache) stays split when its update arrives split the same
// way, and each core keeps its own chunk. Only the constants' bytes differ from core to core: the
// pass run with `rank` r slices them for core r (views of the original payload, never copies), so
// the N programs are the same instructions over different weights.
//
// A split value may also be P < N chunks that groups of N / P cores share (core r keeps chunk
// r * P / N): a projection whose view shows fewer heads than cores (GQA's KV heads at a high TP
// degree) keeps one head per group, and repeat_kv's expand gives each core only the repeats its
// own query heads read, so attention stays split N ways (NxD's KV replication). A row-parallel
// linear needs N distinct chunks. Requires static shapes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "passes/pass.h"

namespace neuronc::passes {

struct TensorParallelOptions {
  int ranks = 1;  // N, the cores the program is split over
  int rank = 0;   // which core's constants to keep
  // Whether the node runs on the device (the compiler's placement); null: every node does. A
  // node that does not sees whole operands, so host kernels never see a chunk.
  std::function<bool(const ir::Node&)> on_device;
};

// What the pass did, for `compile`'s report.
struct TensorParallelStats {
  int column_parallel = 0;  // linears split over output features
  int row_parallel = 0;     // linears split over input features (one all-reduce each)
  int embeddings = 0;       // embedding tables split over the hidden axis
  int all_reduces = 0;
  int all_gathers = 0;
  std::map<std::string, int> split_states;  // state FQN -> the axis each core keeps a chunk of
};

class TensorParallel : public Pass {
 public:
  // `stats`, when given, receives what the last run did.
  explicit TensorParallel(TensorParallelOptions opts, TensorParallelStats* stats = nullptr)
      : opts_(std::move(opts)), out_(stats) {}
  std::string_view name() const override { return "tensor-parallel"; }
  bool run(ir::Graph& g) override;
  const TensorParallelStats& stats() const { return stats_; }

 private:
  TensorParallelOptions opts_;
  TensorParallelStats stats_;
  TensorParallelStats* out_ = nullptr;
};

}  // namespace neuronc::passes
