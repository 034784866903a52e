// The compiler's pass pipeline, in the order of DESIGN.md. Passes are added here as they land.
#pragma once

#include <memory>

#include "passes/pass_manager.h"
#include "passes/tensor_parallel.h"

namespace neuronc::passes {

struct PipelineOptions {
  int opt_level = 2;  // -O0 runs only what correctness needs
  // ranks > 1: the program one core of a tensor-parallel group runs (after the passes every
  // program needs, before sibling linears fuse: a fused q/k/v weight would not split by rows).
  TensorParallelOptions tensor_parallel;
  TensorParallelStats* tensor_parallel_stats = nullptr;  // filled when given
};

// Adds the pipeline's passes to `pm`.
void build_pipeline(PassManager& pm, const PipelineOptions& opts = {});

}  // namespace neuronc::passes
