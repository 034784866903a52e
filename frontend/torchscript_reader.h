// TorchScript archives (torch.jit.save) through libtorch: torch::jit::load, freeze, inline, then
// the frozen graph's aten:: nodes into the IR. Built only when NEURONC_HAVE_TORCH is ON; without
// libtorch, reading one throws an error naming the build option and the package.
#pragma once

#include <memory>
#include <string>

#include "frontend/load.h"

namespace neuronc::frontend {

// True when this build can read TorchScript.
bool torchscript_supported();

LoadedProgram read_torchscript(std::shared_ptr<MappedFile> file);

}  // namespace neuronc::frontend
