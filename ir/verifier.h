// Structural and type checks on a Graph. Every message names the node and says what was
// expected and what was found.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace neuronc::ir {

struct VerifyOptions {
  bool allow_unknown_ops = true;  // imported graphs may hold ops outside the registry
};

// All problems found, in node order; empty when the graph is well formed.
std::vector<std::string> verify(const Graph& g, const VerifyOptions& opts = {});
// Throws ir::Error with the first problem (and the count of the rest).
void verify_or_throw(const Graph& g, const VerifyOptions& opts = {});

}  // namespace neuronc::ir
