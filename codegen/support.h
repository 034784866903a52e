// Whether codegen can lower a node, decided before compiling, so the partitioner sends what the
// NeuronCore path cannot run to the host instead of failing the compile. Mirrors the checks the
// lowerings make at emission time (which stay as the safety net).
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"

namespace neuronc::codegen {

// nullopt when codegen lowers `n`; otherwise why not ("grouped convolution is not lowered").
std::optional<std::string> unsupported_reason(const ir::Graph& g, const ir::Node& n);

}  // namespace neuronc::codegen
