// embedding (a gather of weight rows by data-dependent indices). The ISA has no indirect DMA
// on NC-v2/v3, so the gather runs on TensorE as a one-hot matmul:
//   onehot[v, t] = (index[t] - v0 == v)     VectorE tensor_scalar against an iota column
//   out[t, d]    = sum_v onehot[v, t] W[v0 + v, d]   accumulated in PSUM over vocab chunks
// Exact in fp32 (one non-zero product per output). Cost grows with the vocabulary (every
// token tile streams the whole table); an indirect-DMA instruction would make it
// proportional to the tokens (asked for in docs/CODEGEN.md).
#include <algorithm>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::AluOp;
using device::DType;
using device::Engine;
using device::MemRef;

void lower_embedding(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& w = ctx.view(n.input(0));
  const HbmView& ix = ctx.view(n.input(1));
  const HbmView& out = ctx.view(n.output());
  if (w.rank() != 2) fail(n, "embedding weight must be 2-D");
  const int64_t V = w.shape[0], D = w.shape[1];
  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  const int64_t DT = std::min<int64_t>(D, t.psum_bank_elems_f32());
  const int64_t nDT = ceil_div(D, DT);
  if (nDT > t.psum_banks)
    fail(n, "embedding dim " + std::to_string(D) + " needs more than " +
                std::to_string(t.psum_banks) + " PSUM banks");
  const DType mdt = w.dtype == DType::f32 ? DType::f32 : w.dtype;
  const uint32_t es = device::dtype_size(mdt);
  const int64_t nV = ceil_div(V, P);

  // Token tiles: never straddle the innermost index dimension.
  std::vector<int64_t> sizes = ix.shape;
  std::vector<std::vector<int64_t>> strides = {ix.strides};
  coalesce(sizes, strides);
  const int64_t inner = sizes.back();
  const int64_t inner_stride = strides[0].back();
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < sizes.size(); ++d) outer *= sizes[d];
  const int64_t TT = std::min(P, inner);

  const uint32_t iota = kb.alloc(4, "embedding iota");
  const uint32_t idx_b = kb.alloc(TT * 4, "embedding indices");
  const uint32_t onehot[2] = {kb.alloc(TT * es, "embedding one-hot"),
                              kb.alloc(TT * es, "embedding one-hot")};
  uint32_t wt[2] = {kb.alloc(DT * es, "embedding rows"), kb.alloc(DT * es, "embedding rows")};
  const uint32_t o_sb = kb.alloc(DT * device::dtype_size(out.dtype), "embedding output");

  device::Iota io;
  io.dst = KernelBuilder::sb(iota, P, DType::f32, 1);
  io.channel_multiplier = 1;
  kb.emit(Engine::gpsimd, io);

  std::vector<uint32_t> banks(static_cast<size_t>(nDT));
  int iter = 0;
  int64_t token = 0;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = 0, rem = o;
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) {
      base += (rem % sizes[d]) * strides[0][d];
      rem /= sizes[d];
    }
    for (int64_t t0 = 0; t0 < inner; t0 += TT) {
      const int64_t tt = std::min(TT, inner - t0);
      // Indices broadcast to every partition, as f32 (the DMA converts).
      const MemRef ib = KernelBuilder::sb(idx_b, P, DType::f32, tt);
      kb.dma(ib,
             KernelBuilder::hbm(ix, base + t0 * inner_stride, P, 0,
                                {{static_cast<int32_t>(inner_stride), static_cast<uint32_t>(tt)}}),
             DmaRole::load);
      for (auto& b : banks) b = kb.psum_bank();
      for (int64_t vc = 0; vc < nV; ++vc, ++iter) {
        const int64_t v0 = vc * P, vn = std::min(P, V - v0);
        const MemRef oh = KernelBuilder::sb(onehot[iter % 2], vn, mdt, tt);
        device::TensorScalar x;
        x.dst = oh;
        x.src = KernelBuilder::sb(idx_b, vn, DType::f32, tt);
        x.op0 = AluOp::subtract;
        x.operand0 = static_cast<float>(v0);
        x.op1 = AluOp::is_equal;
        x.operand1 = KernelBuilder::sb(iota, vn, DType::f32, 1);
        kb.emit(Engine::vector, x);
        for (int64_t dc = 0; dc < nDT; ++dc) {
          const int64_t d0 = dc * DT, dn = std::min(DT, D - d0);
          const MemRef wr = KernelBuilder::sb(wt[(iter * nDT + dc) % 2], vn, mdt, dn);
          kb.dma(
              wr,
              KernelBuilder::hbm(w, v0 * w.strides[0] + d0 * w.strides[1], vn, w.strides[0],
                                 {{static_cast<int32_t>(w.strides[1]), static_cast<uint32_t>(dn)}}),
              DmaRole::load);
          device::MatMul mm;
          mm.dst = KernelBuilder::ps(banks[dc], tt, dn);
          mm.stationary = oh;
          mm.moving = wr;
          mm.accumulate = vc > 0;
          kb.emit(Engine::tensor, mm);
        }
      }
      for (int64_t dc = 0; dc < nDT; ++dc) {
        const int64_t d0 = dc * DT, dn = std::min(DT, D - d0);
        const MemRef ot = KernelBuilder::sb(o_sb, tt, out.dtype, dn);
        device::TensorCopy c;
        c.dst = ot;
        c.src = KernelBuilder::ps(banks[dc], tt, dn);
        kb.emit(Engine::vector, c);
        kb.dma(
            KernelBuilder::hbm(out, (token + t0) * D + d0, tt, D, {{1, static_cast<uint32_t>(dn)}}),
            ot, DmaRole::store);
      }
    }
    token += inner;
  }
}

}  // namespace

LowerFn gather_lowering(const std::string& op) {
  if (op == "aten.embedding.default") return &lower_embedding;
  return nullptr;
}

}  // namespace neuronc::codegen
