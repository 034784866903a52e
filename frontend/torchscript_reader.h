// TorchScript archives (torch.jit.save) through libtorch: torch::jit::load, freeze, inline, then
// the frozen graph's aten:: nodes into the IR. The reader is a module opened on first use
// (torchscript_plugin.h); without libtorch (NEURONC_HAVE_TORCH off), reading one throws an error
// naming the build option and the package.
#pragma once

#include <memory>
#include <string>

#include "frontend/load.h"

namespace neuronc::frontend {

// True when this build can read TorchScript.
bool torchscript_supported();

LoadedProgram read_torchscript(std::shared_ptr<MappedFile> file);

}  // namespace neuronc::frontend
