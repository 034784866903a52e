// Fuzzes the scan of TorchScript's serialized code for custom-kernel calls (untrusted text from a
// .pt archive): any text must scan without reading out of bounds, and every call found must name
// a library and an operator and point at a line of the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "frontend/custom_kernels.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace neuronc::frontend;
  const CodeFile file{"code/__torch__/fuzz.py",
                      std::string(reinterpret_cast<const char*>(data), size)};
  for (const CustomKernelCall& c : find_torchscript_custom_calls({&file, 1})) {
    const size_t dot = c.op.find('.');
    if (dot == 0 || dot == std::string::npos || dot + 1 == c.op.size()) abort();
    if (c.op.starts_with("aten.") || c.op.starts_with("prim.") || c.op.starts_with("prims."))
      abort();
    if (!c.location.starts_with("code/__torch__/fuzz.py:")) abort();
  }
  return 0;
}
