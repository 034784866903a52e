// Kernel formation: which IR nodes of a device partition are computed inside which kernel.
//
// The first stage of compile_partition, before any HBM view exists. It groups nodes by op
// pattern (TVM's fuse_ops does the same over its op patterns):
//   - element-wise chains: element-wise producers of an element-wise consumer of the same shape
//     become one tile program;
//   - epilogues: a unary activation or float cast after a matmul, convolution or attention is
//     applied by the kernel's PSUM evacuation or store;
//   - residual epilogues: conv / matmul -> [cast] -> add -> [activation] -> [layer norm];
//   - norm epilogues: a multiply of a norm's result by a weight along the row;
//   - read-through casts: a float cast read only by matmul, convolution or attention operands is
//     converted by their load DMAs;
//   - channel scales: a squeeze-and-excitation mul read only by a convolution's input;
//   - concatenation in place: a cat input written by its producer straight into its slice.
// Whether a matmul group fits its residual's layout is only known once views exist, so the
// driver settles those groups as it reaches them (settle_matmul_group).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/hbm_view.h"
#include "codegen/lowering.h"
#include "ir/graph.h"

namespace neuronc::codegen {

// The nodes of one partition, in execution order, and the values read outside it.
class PartitionScope {
 public:
  PartitionScope(const std::vector<const ir::Node*>& nodes,
                 const std::vector<const ir::Value*>& outputs);
  const std::vector<const ir::Node*>& nodes() const { return nodes_; }
  bool contains(const ir::Node* n) const { return index_.count(n) != 0; }
  size_t index(const ir::Node* n) const { return index_.at(n); }
  bool is_output(const ir::Value* v) const { return outputs_.count(v) != 0; }

 private:
  const std::vector<const ir::Node*>& nodes_;
  std::unordered_map<const ir::Node*, size_t> index_;
  std::unordered_set<const ir::Value*> outputs_;
};

// A single-result element-wise node that is a kernel of its own when not fused (a cast to the
// same device dtype is a view).
bool is_elementwise_kernel(const ir::Node& n);

// The nodes one kernel computes: `root` is lowered (its family's Lowering), `fused` are the
// nodes computed inside it (KernelBuilder::fused), `members` every node of the kernel.
struct KernelNodes {
  const ir::Node* root = nullptr;
  std::vector<const ir::Node*> fused;
  std::vector<const ir::Node*> members;
};

class KernelFormation {
 public:
  // Float-to-float casts converted by their readers' loads: cast result -> cast source.
  std::unordered_map<const ir::Value*, const ir::Value*> read_through;
  // A cat input its producer writes into its slice of the cat's buffer.
  struct CatSlot {
    const ir::Node* cat = nullptr;
    HbmView view;  // the slice, relative to the cat's buffer
  };
  std::unordered_map<const ir::Value*, CatSlot> cat_slot;

  // Whether `n` is computed inside another node's kernel (it emits no kernel of its own).
  bool absorbed(const ir::Node* n) const { return absorbed_into_.count(n) != 0; }
  // The kernel that node `n` ends (call only when !absorbed(n)).
  KernelNodes kernel_at(const ir::Node* n) const;
  // Whether the kernel ending at `p` stores its single result through any strides (so it can
  // write into a slice of another buffer).
  bool writes_any_view(const ir::Node* p, const HbmView& slice) const;

  // Called when the driver reaches matmul `mm` with every earlier value's view known: a
  // layer-norm epilogue that does not fit the matmul's tiling leaves its group, and a group
  // whose residual's view does not reshape to the matmul's problem layout dissolves into the
  // kernels plain fusion makes of it. No effect on a node that starts no matmul group.
  void settle_matmul_group(const ir::Node& mm, const PartitionContext& ctx);

 private:
  friend KernelFormation form_kernels(const PartitionScope&, const device::Target&,
                                      const CodegenOptions&);
  void form_residual_groups(const PartitionScope& s);
  void form_cast_activation_groups(const PartitionScope& s, const CodegenOptions& opts);
  void form_channel_scales(const PartitionScope& s, const device::Target& t);
  void form_chains(const PartitionScope& s);
  void form_read_through(const PartitionScope& s);
  void form_cat_in_place(const PartitionScope& s);
  const ir::Node* only_consumer(const PartitionScope& s, const ir::Value* v) const;
  std::vector<const ir::Node*> producers_of(const ir::Node* m) const;

  const std::vector<const ir::Node*>* nodes_ = nullptr;
  std::unordered_map<const ir::Node*, const ir::Node*> absorbed_into_;  // producer -> consumer
  std::unordered_map<const ir::Node*, const ir::Node*> epilogue_of_;    // activation -> matmul
  // Residual and cast-activation groups, by their last node: the nodes in order.
  std::unordered_map<const ir::Node*, std::vector<const ir::Node*>> group_;
  std::unordered_set<const ir::Node*> grouped_;  // every node of a group
  // Matmul -> {last node of its residual group, the residual}.
  std::unordered_map<const ir::Node*, std::pair<const ir::Node*, const ir::Value*>>
      matmul_residual_;
  std::unordered_map<const ir::Node*, const ir::Node*> channel_scale_of_;  // conv -> mul
};

// Forms the kernels of the partition `s` (nothing fused when !opts.fuse).
KernelFormation form_kernels(const PartitionScope& s, const device::Target& t,
                             const CodegenOptions& opts);

}  // namespace neuronc::codegen
