// Placement (see placement.h).
#include "compiler/placement.h"

#include <optional>
#include <string>

#include "codegen/support.h"
#include "kernels/host_kernel.h"

namespace neuronc::compiler {

passes::PlacementOracle placement_oracle(const device::Target& t) {
  return [&t](const ir::Node& n) -> passes::Placement {
    passes::Placement p = passes::registry_placement(n);
    if (p.kind == passes::Placement::device) {
      std::optional<std::string> why = codegen::unsupported_reason(n, t);
      if (!why) return p;
      p = {passes::Placement::host, *why};
    }
    // The host runs it when the loader has a kernel for the operator.
    if (!host::find_host_kernel(n.op())) {
      return {passes::Placement::unsupported,
              p.reason + "; the loader has no host kernel for " + n.op() + " either"};
    }
    if (p.kind == passes::Placement::unsupported) p.kind = passes::Placement::host;
    return p;
  };
}

passes::PlacementOracle host_first_oracle(const device::Target& t) {
  return [best = placement_oracle(t)](const ir::Node& n) -> passes::Placement {
    if (host::find_host_kernel(n.op())) return {passes::Placement::host, "host_only"};
    return best(n);
  };
}

}  // namespace neuronc::compiler
