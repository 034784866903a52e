// A plain C++ reference interpreter of the IR ops codegen lowers (double precision, row-major,
// no tiling), used to check compiled programs. Slow and simple on purpose.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace neuronc::codegen::testing {

struct RefTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
  int64_t numel() const;
};

using Env = std::map<std::string, RefTensor>;
// Called for an op the interpreter does not know; returns false when it cannot either.
using Fallback = std::function<bool(const ir::Node&, Env&)>;

// Evaluates every node of `g`; `env` holds the graph inputs by value name and receives every
// node result. Throws std::runtime_error for an op neither it nor `fallback` knows.
void evaluate(const ir::Graph& g, Env& env, const Fallback& fallback = {});
void evaluate_nodes(const std::vector<const ir::Node*>& nodes, Env& env,
                    const Fallback& fallback = {});

}  // namespace neuronc::codegen::testing
