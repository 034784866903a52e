// Whether codegen can lower a node for a target, decided before compiling, so the partitioner
// sends what the NeuronCore path cannot run to the host instead of failing the compile. The
// family-specific answer comes from the node's Lowering (lowering.h), the same object that
// lowers it; this adds the checks common to every family (complex dtypes, symbolic result dims,
// ops no family handles).
#pragma once

#include <optional>
#include <string>

#include "device/target.h"
#include "ir/graph.h"

namespace neuronc::codegen {

// nullopt when codegen lowers `n` for `t`; otherwise why not ("grouped convolution is not
// lowered").
std::optional<std::string> unsupported_reason(const ir::Node& n, const device::Target& t);

}  // namespace neuronc::codegen
