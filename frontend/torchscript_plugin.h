// The interface between neuronc and its TorchScript reader, libneuronc_torchscript.so.
//
// Reading TorchScript needs libtorch, and loading libtorch runs its static initialisers, which
// register thousands of operators: about 0.7 s at every process start. So the reader
// (torchscript_plugin.cpp, the only file that includes torch headers) is a module of its own,
// and torchscript_reader.cpp opens it with dlopen the first time a TorchScript file is read;
// every other command starts without libtorch.
//
// The module is built from the same tree as the program that opens it, and calls back into it:
// it uses the program's own ir::Graph and ir::OpRegistry (the executable exports its symbols,
// see frontend/CMakeLists.txt), so there is one registry in the process. The ABI number below
// changes with any change to the types that cross.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontend/custom_kernels.h"
#include "frontend/load.h"

namespace neuronc::frontend {

inline constexpr int kTorchScriptPluginAbi = 1;

// What libtorch refused: an operator it does not know, and the archive's serialized code, in
// which the caller looks for custom-kernel calls.
struct TorchScriptUnknownOp {
  std::string op;  // "demo_kernels::fused_scale_gelu"
  std::vector<CodeFile> code;
};

}  // namespace neuronc::frontend

// The module's entry points, by these names (dlsym).
extern "C" {
// kTorchScriptPluginAbi as the module was built.
int neuronc_torchscript_plugin_abi();

// Reads `file` into `out` (graph, torch_version, file) and returns true, or returns false with
// `unknown` filled when libtorch does not know an operator the archive calls. Throws
// frontend::Error for every other failure.
bool neuronc_read_torchscript(const std::shared_ptr<neuronc::frontend::MappedFile>& file,
                              neuronc::frontend::LoadedProgram& out,
                              neuronc::frontend::TorchScriptUnknownOp& unknown);
}
