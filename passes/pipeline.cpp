// The pass pipeline.
#include "passes/pipeline.h"

#include "passes/canonicalize.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/constant_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/decompose.h"
#include "passes/expand_composites.h"
#include "passes/fold_batch_norm.h"
#include "passes/functionalize.h"
#include "passes/fuse_rms_norm.h"
#include "passes/fuse_sibling_linears.h"
#include "passes/lift_state.h"

namespace neuronc::passes {

void build_pipeline(PassManager& pm, const PipelineOptions& opts) {
  pm.add(std::make_unique<Functionalize>());
  pm.add(std::make_unique<LiftState>());
  pm.add(std::make_unique<Canonicalize>());
  pm.add(std::make_unique<Decompose>());
  pm.add(std::make_unique<ExpandComposites>());
  pm.add(std::make_unique<ConstantFolding>());
  pm.add(std::make_unique<FoldBatchNorm>());
  pm.add(std::make_unique<DeadCodeElimination>());
  if (opts.tensor_parallel.ranks > 1) {
    pm.add(std::make_unique<TensorParallel>(opts.tensor_parallel, opts.tensor_parallel_stats));
    pm.add(std::make_unique<DeadCodeElimination>());
  }
  if (opts.opt_level >= 1) {
    pm.add(std::make_unique<CommonSubexpressionElimination>());
    pm.add(std::make_unique<FuseRmsNorm>());
    pm.add(std::make_unique<FuseSiblingLinears>());
    pm.add(std::make_unique<DeadCodeElimination>());
  }
}

}  // namespace neuronc::passes
