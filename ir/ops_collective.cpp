// Collective operators of a tensor-parallel program (neuronc's own namespace: PyTorch has no
// such ATen op). A graph pass that splits a model over N cores inserts them into the per-rank
// graph; every core runs the same program and the n-th collective of each core is one
// operation over all `ranks` cores. They run only on a multi-core device program, so the host
// has no kernel for them.
#include "ir/op_definitions.h"

namespace neuronc::ir {
namespace {

int64_t checked_ranks(const ShapeContext& c) {
  const int64_t ranks = c.get_int("ranks");
  if (ranks < 1)
    c.fail("argument 'ranks': expected the number of cores taking part (>= 1), found " +
           std::to_string(ranks));
  return ranks;
}

}  // namespace

void register_collective_ops(OpRegistry& r) {
  const auto C = OpCategory::collective;
  const auto D = Placement::device;
  // The element-wise sum of `self` over every rank; each rank receives the whole sum.
  r.add("neuronc::all_reduce(Tensor self, int ranks) -> Tensor", C, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          checked_ranks(c);
          return {c.input(0)};
        });
  // [ranks, *self.shape]: slice r is rank r's `self`; every rank receives all of it.
  r.add("neuronc::all_gather(Tensor self, int ranks) -> Tensor", C, D,
        [](const ShapeContext& c) -> std::vector<TensorType> {
          const int64_t ranks = checked_ranks(c);
          TensorType t = c.input(0);
          t.shape.insert(t.shape.begin(), Dim::constant(ranks));
          return {t};
        });
}

}  // namespace neuronc::ir
