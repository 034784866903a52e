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
#include "neuronc/model.h"

namespace neuronc {

struct Model::Impl {
  artifact::MappedFile file;
  std::unique_ptr<std::byte[]> owned;  // load_from_memory copy
  artifact::LoadedArtifact art;
  const device::Target* target = nullptr;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<TensorSpec> states;
  ModelInfo info;
  std::vector<host::HostKernelFn> kernels;  // per plan step; null for device calls
};

// artifact::Status -> neuronc::Status.
Status from_artifact(const artifact::Status& s);

}  // namespace neuronc
