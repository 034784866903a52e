// The compiler's pass pipeline, in the order of DESIGN.md. Passes are added here as they land.
#pragma once

#include <memory>

#include "passes/pass_manager.h"

namespace neuronc::passes {

struct PipelineOptions {
  int opt_level = 2;  // -O0 runs only what correctness needs
};

// Adds the pipeline's passes to `pm`.
void build_pipeline(PassManager& pm, const PipelineOptions& opts = {});

}  // namespace neuronc::passes
