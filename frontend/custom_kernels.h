// Custom kernels a TorchScript program calls (`ops.<lib>.<name>(...)` in its serialized code):
// libtorch cannot load such a program unless the library that defines them is loaded in the same
// process, which neuronc never does. The reader then reports every call it finds instead of the
// first one libtorch stumbled on, so `analyze` can give the whole inventory.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "frontend/error.h"

namespace neuronc::frontend {

struct CustomKernelCall {
  std::string op;        // IR spelling without an overload: "demo_kernels.fused_scale_gelu"
  std::string location;  // "code/__torch__/zoo.py:23: `h = ops.demo_kernels.fused_scale_gelu(x)`"
};

// The program calls custom kernels, listed in `calls` (sorted by op, then location).
class CustomKernelError : public Error {
 public:
  CustomKernelError(const std::string& message, std::vector<CustomKernelCall> calls)
      : Error(message), calls_(std::move(calls)) {}
  const std::vector<CustomKernelCall>& calls() const { return calls_; }

 private:
  std::vector<CustomKernelCall> calls_;
};

// One file of a TorchScript archive's serialized code (`code/__torch__/zoo.py`), as text.
struct CodeFile {
  std::string name;
  std::string text;
};

// Every `ops.<lib>.<name>(` call in the archive's serialized code whose library is not one of
// PyTorch's own (aten, prim, prims), sorted by op (file order within one op).
std::vector<CustomKernelCall> find_torchscript_custom_calls(std::span<const CodeFile> code);

// The error for program `file` calling `calls` (non-empty): names every kernel and where.
CustomKernelError custom_kernel_error(const std::string& file, std::vector<CustomKernelCall> calls);

}  // namespace neuronc::frontend
