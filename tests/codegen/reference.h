// A plain C++ reference interpreter of the IR ops codegen lowers (double precision, row-major,
// no tiling), used to check compiled programs. Slow and simple on purpose.
#pragma once

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

// Evaluates every node of `g`; `env` holds the graph inputs by value name and receives every
// node result. Throws std::runtime_error for an op it does not know.
void evaluate(const ir::Graph& g, std::map<std::string, RefTensor>& env);

}  // namespace neuronc::codegen::testing
