// Internal interface between the partition driver (compile_partition.cpp) and the per-family
// kernel lowerings (matmul_kernel.cpp, elementwise_kernel.cpp, ...). The driver resolves every
// IR value to an HBM view before lowering starts; lowerings only read the context, so kernels
// lower concurrently.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/hbm_view.h"
#include "codegen/kernel.h"
#include "ir/graph.h"

namespace neuronc::codegen {

struct ValueInfo {
  HbmView view;                 // where the value lives (after planning)
  int buffer = -1;              // HBM buffer backing it
  std::optional<double> splat;  // every element equals this compile-time value
};

class PartitionContext {
 public:
  PartitionContext(const ir::Graph& g, const device::Target& t) : graph(g), target(t) {}
  const ir::Graph& graph;
  const device::Target& target;
  std::unordered_map<const ir::Value*, ValueInfo> values;

  const ValueInfo& info(const ir::Value* v) const;
  const HbmView& view(const ir::Value* v) const { return info(v).view; }
  // Row-major element values of a compile-time constant (weight payload or a tensor codegen
  // computed), or nullopt when `v` is only known at run time.
  std::optional<std::vector<double>> constant_values(const ir::Value* v) const;

  std::unordered_map<const ir::Value*, std::vector<double>> synthetic;  // computed constants
  // Constant buffers: the value whose bytes fill it and whether they are stored transposed.
  struct ConstantSource {
    const ir::Value* value = nullptr;
    bool transposed = false;
  };
  std::unordered_map<int, ConstantSource> constant_buffers;
  // Float-to-float casts read through by the matmul that consumes them (the DMA converts on
  // load): cast result -> cast source. The cast result has no buffer.
  std::unordered_map<const ir::Value*, const ir::Value*> read_through;
  // The view a kernel reads for `v` (through a fused cast).
  const HbmView& operand_view(const ir::Value* v) const {
    auto it = read_through.find(v);
    return view(it == read_through.end() ? v : it->second);
  }
};

using LowerFn = void (*)(KernelBuilder&, const ir::Node&, const PartitionContext&);

// Each returns the lowering for `op`, or null when the family does not handle it.
LowerFn matmul_lowering(const std::string& op);
LowerFn elementwise_lowering(const std::string& op);
LowerFn row_lowering(const std::string& op);  // reductions, softmax, layer/rms norm
LowerFn attention_lowering(const std::string& op);
LowerFn gather_lowering(const std::string& op);  // embedding
LowerFn conv_lowering(const std::string& op);
LowerFn data_movement_lowering(const std::string& op);  // cat, materialising copies

// Ops that are views of their operand (view, permute, expand, slice, ...), lowered without a
// kernel when the view is expressible, else by a materialising copy.
bool is_alias_op(const std::string& op);
// The lowering of `op` from any family, or null.
LowerFn find_lowering(const std::string& op);

// Copies the elements of `src` (any strides) into `dst` (same numel, any strides), both read
// in row-major order of their own shapes, with HBM-to-HBM DMAs (casting when dtypes differ).
void copy_view(KernelBuilder& kb, const HbmView& dst, const HbmView& src);

// The ScalarE function when `n` is a unary activation that a matmul epilogue can apply
// (relu, gelu, silu, sigmoid, tanh), else nullopt.
std::optional<device::ActivationFunction> epilogue_activation(const ir::Node& n);

// Fused nodes of the kernel being built (see KernelBuilder::fused).
inline const std::vector<const ir::Node*>& fused_nodes(const KernelBuilder& kb) {
  return kb.fused;
}

// [[noreturn]] helper: "node 'x' (op) at loc: message".
[[noreturn]] void fail(const ir::Node& n, const std::string& message);

// Static dims of a value (the driver has checked they are static).
std::vector<int64_t> static_shape(const ir::Value* v);

// Scalar attribute as double (int, float or bool attributes), or `dflt` when absent/none.
double scalar_attr(const ir::Node& n, const char* name, double dflt);

}  // namespace neuronc::codegen
