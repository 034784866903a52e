// The state behind a neuronc::Model handle (internal): the bytes (mapping or owned copy), the
// decoded and verified artifact, the public signature and the resolved host kernels.
// Immutable after load; shared by every Session.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "artifact_format/mapped_file.h"
#include "artifact_format/reader.h"
#include "device/target.h"
#include "kernels/host_kernel.h"
#include "loader/plan_walker.h"
#include "neuronc/model.h"

namespace neuronc {

// One entry of the artifact (artifact::EntrySpec; the whole plan when it has none): its
// signature indices, steps, state updates and every plan value its run touches.
struct EntryPlan {
  EntryInfo info;                 // name, input and output specs (public)
  std::vector<uint32_t> inputs;   // signature input index per info.inputs
  std::vector<uint32_t> outputs;  // signature output index per info.outputs
  artifact::StepRange steps;
  std::vector<uint32_t> state_updates;  // per state
  std::vector<uint32_t> values;         // sorted: inputs, outputs, states, updates, steps' values
  plan::EntryTraffic traffic;           // what its device calls copy (end-to-end time)
};

struct Model::Impl {
  artifact::MappedFile file;
  std::unique_ptr<std::byte[]> owned;  // load_from_memory copy
  artifact::LoadedArtifact art;
  const device::Target* target = nullptr;
  std::vector<EntryPlan> entries;  // at least one; entry 0's specs are Model::inputs()/outputs()
  std::vector<EntryInfo> entry_infos;
  // Model::inputs()/outputs(): entry 0's, or its bucket group's declared (symbolic) specs.
  std::vector<TensorSpec> model_inputs, model_outputs;
  std::vector<TensorSpec> states;
  ModelInfo info;
  std::vector<host::HostKernelFn> kernels;  // per plan step; null for device calls
};

// artifact::Status -> neuronc::Status.
Status from_artifact(const artifact::Status& s);

}  // namespace neuronc
