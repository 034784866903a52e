// Common subexpression elimination: two nodes applying the same registered, effect-free
// operator to the same operands with the same attributes compute the same results; the later
// one is replaced by the earlier.
//
// One forward walk keyed on a textual signature (operator, operand names, printed attributes)
// in an ordered map, so the result does not depend on pointer values. Operands are rewritten
// before their users are keyed, so chains of duplicates collapse in the same walk.
#pragma once

#include "passes/pass.h"

namespace neuronc::passes {

class CommonSubexpressionElimination : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  bool run(ir::Graph& g) override;
};

}  // namespace neuronc::passes
