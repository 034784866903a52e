// Auto-cast, like `neuronx-cc --auto-cast`: runs fp32 work in bf16 on the NeuronCore.
//   none   — nothing changes (the compiler's default, as in neuronx-cc);
//   matmul — matmul, convolution and attention ops read bf16 operands (TensorE's full rate;
//            accumulation stays fp32 in PSUM) and their results are cast back to fp32;
//   all    — every floating-point compute op does the same.
// For each chosen node: fp32 operands get a bf16 cast (one per value, reusing the bf16 source of
// a value that is itself a cast from bf16), the node is rebuilt on the bf16 operands, and each
// result is cast back to fp32 so the graph's types outside the node are unchanged. Casts that
// cancel (bf16 -> f32 -> bf16) are removed by reusing the source, so chains under `all` stay in
// bf16; also through views (view, reshape, permute, transpose, ...): a projection's result split
// into heads for an attention, or an attention's result merged back for the next projection,
// becomes the same views of the bf16 value, so it crosses HBM in bf16.
#pragma once

#include <optional>
#include <string_view>

#include "passes/pass.h"

namespace neuronc::passes {

enum class AutoCastMode { none, matmul, all };
// "none", "matmul" or "all"; nullopt otherwise.
std::optional<AutoCastMode> parse_auto_cast(std::string_view s);
const char* auto_cast_name(AutoCastMode m);

class AutoCast : public Pass {
 public:
  explicit AutoCast(AutoCastMode mode) : mode_(mode) {}
  std::string_view name() const override { return "auto-cast"; }
  bool run(ir::Graph& g) override;

 private:
  AutoCastMode mode_;
};

}  // namespace neuronc::passes
