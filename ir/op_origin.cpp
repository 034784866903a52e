// Operator origins by name. The CUDA-only list is PyTorch's native_functions.yaml entries
// dispatched for CUDA alone (no CPU kernel): cuDNN/MIOpen/cuFFT calls, the flash and
// memory-efficient attention kernels and cuSPARSELt; a name in one of these families cannot run on
// any other backend. (Fused optimisers, _int_mm and _scaled_mm have CPU kernels too.)
#include "ir/op_origin.h"

#include <array>

namespace neuronc::ir {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// The ATen operator name without namespace and overload: "aten._cudnn_rnn.default" -> "_cudnn_rnn".
std::string_view aten_name(std::string_view op) {
  op.remove_prefix(5);  // "aten."
  return op.substr(0, op.find('.'));
}

bool cuda_only_aten(std::string_view name) {
  // Families: every operator whose name contains one of these is a CUDA backend's kernel.
  static constexpr std::array<std::string_view, 3> kFamilies = {"cudnn", "miopen", "cufft"};
  for (std::string_view f : kFamilies)
    if (name.find(f) != std::string_view::npos) return true;
  // Single kernels with CUDA (and ROCm) dispatch only. The CPU flash attention
  // (_scaled_dot_product_flash_attention_for_cpu) is not among them.
  static constexpr std::array<std::string_view, 9> kKernels = {
      "_scaled_dot_product_flash_attention",
      "_scaled_dot_product_flash_attention_backward",
      "_scaled_dot_product_efficient_attention",
      "_scaled_dot_product_efficient_attention_backward",
      "_flash_attention_forward",
      "_flash_attention_backward",
      "_efficient_attention_forward",
      "_efficient_attention_backward",
      "_cslt_sparse_mm",
  };
  for (std::string_view k : kKernels)
    if (name == k) return true;
  return false;
}

}  // namespace

OpOrigin op_origin(std::string_view op) {
  if (starts_with(op, "aten.")) {
    return cuda_only_aten(aten_name(op)) ? OpOrigin::cuda_only : OpOrigin::aten;
  }
  if (starts_with(op, "prims.")) return OpOrigin::prims;
  if (starts_with(op, "neuronc.")) return OpOrigin::neuronc;
  if (starts_with(op, "higher_order.")) return OpOrigin::higher_order;
  return OpOrigin::custom;
}

const char* op_origin_name(OpOrigin origin) {
  switch (origin) {
    case OpOrigin::aten:
      return "aten";
    case OpOrigin::prims:
      return "prims";
    case OpOrigin::neuronc:
      return "neuronc";
    case OpOrigin::custom:
      return "custom";
    case OpOrigin::higher_order:
      return "higher-order";
    case OpOrigin::cuda_only:
      return "cuda-only";
  }
  return "?";
}

}  // namespace neuronc::ir
