// Placement: where each node of a program runs on a given target.
#pragma once

#include "device/target.h"
#include "passes/partition.h"

namespace neuronc::compiler {

// The placement the compiler uses for target `t`: the device when the registry and codegen both
// can (codegen::unsupported_reason, each op family's Lowering), else the host when the loader
// has a kernel for the operator, else unsupported (with the reason).
passes::PlacementOracle placement_oracle(const device::Target& t);

// The reverse preference, for the reference side of differential testing: the host when the
// loader has a kernel for the operator, else the device when it can, else unsupported.
passes::PlacementOracle host_first_oracle(const device::Target& t);

}  // namespace neuronc::compiler
