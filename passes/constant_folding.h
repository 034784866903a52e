// Constant folding: a node whose tensor operands are all constants (weights, buffers, lifted
// constants, earlier folded results) — or that has none, like arange/full/ones — is computed at
// compile time by the host kernel the loader would run for it (passes/host_eval.h) and becomes a
// constant graph input. This removes the
// mask, position and rotary-table arithmetic that exported transformers carry, and turns casts
// of weights (auto-cast) into weights stored in the narrow type.
//
// One forward walk; results larger than `max_elements` stay in the graph (they would bloat the
// artifact more than they save), except casts to a dtype no wider, which bloat nothing.
// Non-persistent buffers are constants too; persistent buffers that the graph mutates are not
// (their runtime value may differ from the file's).
#pragma once

#include <cstdint>

#include "passes/pass.h"

namespace neuronc::passes {

class ConstantFolding : public Pass {
 public:
  explicit ConstantFolding(int64_t max_elements = int64_t{1} << 24) : max_elements_(max_elements) {}
  std::string_view name() const override { return "fold"; }
  bool run(ir::Graph& g) override;

 private:
  // Every output is static and at most max_elements_ long (any length for a narrowing cast).
  bool fits(const ir::Node& n) const;
  int64_t max_elements_;
};

}  // namespace neuronc::passes
