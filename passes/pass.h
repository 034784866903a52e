// A graph-to-graph transformation. Passes are small, one per file, each with a header comment
// that explains its algorithm; each is tested on IR before/after text.
#pragma once

#include <string_view>

#include "ir/graph.h"

namespace neuronc::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // Stable name used by --print-after and in messages ("dce", "cse", "canonicalize").
  virtual std::string_view name() const = 0;
  // Transforms `g` in place; returns true when anything changed.
  virtual bool run(ir::Graph& g) = 0;
};

}  // namespace neuronc::passes
