// Partitioning: splits a graph into an ordered list of device partitions (run on the
// NeuronCore) and host partitions (run by the loader's host kernels), with the reason every
// host node is on the host.
//
// Algorithm: list scheduling over the dependency DAG. Ready nodes are taken in their original
// order, preferring the kind (device or host) of the partition being built; the kind switches
// only when no ready node of the current kind is left. This never creates a round trip that a
// different valid order would avoid for a chain, and keeps independent device work together
// around a host op. Deterministic: ties break on the original node index.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace neuronc::passes {

enum class PartitionKind { device, host };

struct Partition {
  PartitionKind kind = PartitionKind::device;
  std::vector<const ir::Node*> nodes;    // in execution order
  std::vector<const ir::Value*> inputs;  // values read here and defined elsewhere (or graph inputs)
  std::vector<const ir::Value*> outputs;  // values defined here and read elsewhere or returned
};

struct HostReason {
  const ir::Node* node = nullptr;
  std::string reason;
};

struct PartitionPlan {
  std::vector<Partition> partitions;
  std::vector<HostReason> host_reasons;  // one per host node, in node order
  std::vector<HostReason> unsupported;   // nodes no path can run, with the reason
};

// Where one node can run, and why it is not on the device when it is not.
struct Placement {
  enum Kind { device, host, unsupported } kind = device;
  std::string reason;
};
using PlacementOracle = std::function<Placement(const ir::Node&)>;

// The registry's answer: its placement for registered operators (host for complex operands,
// which the NeuronCore cannot hold), unsupported for unknown ones.
Placement registry_placement(const ir::Node& n);

// Places every node with `oracle`, then partitions.
PartitionPlan partition_graph(const ir::Graph& g,
                              const PlacementOracle& oracle = registry_placement);

}  // namespace neuronc::passes
