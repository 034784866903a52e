// The reference the codegen tests check compiled programs against: each node run by the host
// kernels (kernels/host/, through passes/host_eval.h), which compute in double and round once to
// the node's output dtype, row-major, no tiling. Values travel as doubles of their IR dtype.
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
// Called for an op with no host kernel; returns false when it cannot evaluate it either.
using Fallback = std::function<bool(const ir::Node&, Env&)>;

// Evaluates every node of `g`; `env` holds the graph inputs by value name and receives every
// node result. Throws std::runtime_error for an op neither a kernel nor `fallback` evaluates,
// and with the kernel's message for a node the kernel refuses.
void evaluate(const ir::Graph& g, Env& env, const Fallback& fallback = {});
void evaluate_nodes(const std::vector<const ir::Node*>& nodes, Env& env,
                    const Fallback& fallback = {});

}  // namespace neuronc::codegen::testing
