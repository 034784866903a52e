// Collectives of a tensor-parallel program (neuronc.all_reduce, neuronc.all_gather): each node
// is one device::Collective from its input's HBM view to its result's, triggered on GpSimdE
// (the emitter gives the collective unit a thread and a semaphore of its own, emitter.h).
// Every core runs the same program (device/replicate.h), so the n-th collective of each core forms
// one operation. Views are read and written through their access patterns, no staging copy:
// when the two sides need more than the five dims of one pattern (partition + 4 levels) the
// node becomes one collective per block of the leading dims, in the same order on every core.
#include <limits>
#include <string>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::AccessLevel;
using device::CollectiveKind;

// The largest rank count a collective's destination pattern can hold (all_gather puts the
// ranks on the partition dimension, a uint16).
constexpr int64_t kMaxRanks = std::numeric_limits<uint16_t>::max();

int64_t ranks_of(const ir::Node& n) {
  return n.attr_int("ranks");
}

std::optional<std::string> refuse_collective(const ir::Node& n, const device::Target&) {
  const int64_t ranks = ranks_of(n);  // >= 1: the shape rule checks it
  if (ranks > kMaxRanks)
    return "collective over " + std::to_string(ranks) + " ranks: at most " +
           std::to_string(kMaxRanks) + " cores take part";
  return std::nullopt;
}

int32_t level_stride(int64_t stride, const ir::Node& n) {
  if (stride < std::numeric_limits<int32_t>::min() || stride > std::numeric_limits<int32_t>::max())
    fail(n, "collective operand stride " + std::to_string(stride) +
                " does not fit an access pattern level (int32)");
  return static_cast<int32_t>(stride);
}

// `src` into `slice` of every rank: all_reduce writes the sum into `slice` (ranks = 1, the
// destination is the slice itself); all_gather writes rank r's `src` at `slice` + r *
// `rank_stride` elements. The element orders are row-major over src's shape on both sides.
void emit_collectives(KernelBuilder& kb, const ir::Node& n, CollectiveKind kind,
                      const HbmView& slice, int64_t ranks, int64_t rank_stride,
                      const HbmView& src) {
  if (auto why = refuse_collective(n, kb.target())) fail(n, *why);
  if (src.numel() == 0) return;
  std::vector<int64_t> sizes = src.shape;
  std::vector<std::vector<int64_t>> strides = {slice.strides, src.strides};
  coalesce(sizes, strides);
  // The innermost four dims are the levels of one collective; the rest are looped over.
  const size_t nd = sizes.size();
  const size_t lead = nd > 4 ? nd - 4 : 0;
  std::vector<AccessLevel> dst_levels, src_levels;
  for (size_t i = lead; i < nd; ++i) {
    if (sizes[i] > std::numeric_limits<uint32_t>::max())
      fail(n, "collective dim of " + std::to_string(sizes[i]) + " elements is over 2^32");
    const auto count = static_cast<uint32_t>(sizes[i]);
    dst_levels.push_back({level_stride(strides[0][i], n), count});
    src_levels.push_back({level_stride(strides[1][i], n), count});
  }
  std::vector<int64_t> idx(lead, 0);
  while (true) {
    int64_t doff = 0, soff = 0;
    for (size_t i = 0; i < lead; ++i) {
      doff += idx[i] * strides[0][i];
      soff += idx[i] * strides[1][i];
    }
    device::Collective c;
    c.kind = kind;
    c.op = device::ReduceOp::sum;
    c.dst = KernelBuilder::hbm(slice, doff, ranks, rank_stride, dst_levels);
    c.src = KernelBuilder::hbm(src, soff, 1, 0, src_levels);
    kb.emit(device::Engine::gpsimd, c);
    size_t i = lead;
    while (i > 0 && ++idx[i - 1] == sizes[i - 1]) idx[--i] = 0;
    if (i == 0) break;
  }
}

void lower_all_reduce(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  emit_collectives(kb, n, CollectiveKind::all_reduce, ctx.view(n.output()), 1, 0,
                   ctx.operand_view(n.input(0)));
}

void lower_all_gather(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& dst = ctx.view(n.output());
  const int64_t ranks = ranks_of(n);
  if (dst.rank() < 1 || dst.shape[0] != ranks)
    fail(n,
         "internal: all_gather result does not start with the " + std::to_string(ranks) + " ranks");
  emit_collectives(kb, n, CollectiveKind::all_gather, dst.select(0, 0), ranks, dst.strides[0],
                   ctx.operand_view(n.input(0)));
}

}  // namespace

const Lowering* collective_lowering(const std::string& op) {
  static constexpr Lowering kAllReduce{&lower_all_reduce, &refuse_collective};
  static constexpr Lowering kAllGather{&lower_all_gather, &refuse_collective};
  if (op == "neuronc.all_reduce.default") return &kAllReduce;
  if (op == "neuronc.all_gather.default") return &kAllGather;
  return nullptr;
}

}  // namespace neuronc::codegen
