// Row kernels (stub until written).
#include "codegen/lowering.h"

namespace neuronc::codegen {
LowerFn row_lowering(const std::string&) { return nullptr; }
LowerFn attention_lowering(const std::string&) { return nullptr; }
LowerFn gather_lowering(const std::string&) { return nullptr; }
}  // namespace neuronc::codegen
