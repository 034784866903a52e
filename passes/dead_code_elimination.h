// Dead code elimination: removes nodes whose results are unused and that have no effect, and
// parameters/buffers/constants nothing reads.
//
// Walks the nodes backwards so a chain of dead nodes goes in one sweep. A node has an effect
// when it is in-place (mutates an operand), or has no results and is not a registered
// metadata check (checks on static types were already proven by the verifier's shape rules).
// Unknown operators are assumed to have effects only when they have no results.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class DeadCodeElimination : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
