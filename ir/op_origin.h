// Where an operator of a PyTorch program comes from, for the custom-kernel inventory
// (`neuronc analyze`): ATen and prims are PyTorch's own operator sets, which a compiler for
// another accelerator can implement; anything else is a kernel someone wrote for one backend.
#pragma once

#include <string_view>

namespace neuronc::ir {

enum class OpOrigin : uint8_t {
  aten,          // aten.*: PyTorch's operator set
  prims,         // prims.*: PyTorch's primitive set
  neuronc,       // neuronc.*: the compiler's own (collectives); never written by a user
  custom,        // torch.ops.<lib>.*: a library's custom operator (torch.library, C++ extension)
  higher_order,  // higher_order.*: a higher-order kernel call kept whole (triton, flex attention)
  cuda_only,     // an ATen operator PyTorch implements only for CUDA (cuDNN, flash attention)
};

// The origin of an operator by its IR name ("aten.add.Tensor", "mylib.fused_rope.default",
// "higher_order.triton_kernel_wrapper_functional").
OpOrigin op_origin(std::string_view op);

// "aten", "prims", "neuronc", "custom", "higher-order", "cuda-only".
const char* op_origin_name(OpOrigin origin);

// Whether the origin is a custom kernel that needs a port: custom, higher-order or CUDA-only.
inline bool is_custom_kernel(OpOrigin origin) {
  return origin == OpOrigin::custom || origin == OpOrigin::higher_order ||
         origin == OpOrigin::cuda_only;
}

}  // namespace neuronc::ir
