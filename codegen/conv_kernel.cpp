// 2-D convolution (conv2d / convolution, groups = 1) as an implicit GEMM on TensorE: channels
// on the partitions, one matmul per (input-channel chunk, kernel row, kernel column)
// accumulated in one PSUM bank:
//   out[o, y, x] += sum_c W[o, c, kh, kw] * xpad[c, y*sh + kh*dh, x*sw + kw*dw]
// The moving operand is a strided window of the zero-padded input tile in SBUF (a two-level
// access pattern, no im2col copy); the stationary operand is a strided view of the weights
// loaded once as [C, O, KH*KW]. Output channels land on partitions, so the bias is a
// per-partition operand fused into the ScalarE evacuation, and the tile stores as NCHW rows.
#include <algorithm>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::DType;
using device::Engine;
using device::MemRef;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

std::vector<int64_t> pair_attr(const ir::Node& n, const char* name, int64_t dflt) {
  if (!n.attr(name)) return {dflt, dflt};
  std::vector<int64_t> v = n.attr_ints(name);
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

void lower_conv2d(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& x = ctx.view(n.input(0));
  const HbmView& w = ctx.view(n.input(1));
  const HbmView& out = ctx.view(n.output());
  const bool has_bias = n.inputs().size() > 2 && n.input(2);
  if (x.rank() != 4 || w.rank() != 4) fail(n, "only 2-D convolutions (NCHW) are lowered");
  if (n.attr("groups") && n.attr_int("groups") != 1)
    fail(n, "grouped convolution (groups = " + std::to_string(n.attr_int("groups")) +
                ") is not lowered yet");
  if (n.attr("transposed") && n.attr_bool("transposed"))
    fail(n, "transposed convolution is not lowered yet");
  const auto stride = pair_attr(n, "stride", 1), pad = pair_attr(n, "padding", 0),
             dil = pair_attr(n, "dilation", 1);
  const int64_t B = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t O = w.shape[0], KH = w.shape[2], KW = w.shape[3];
  const int64_t Ho = out.shape[2], Wo = out.shape[3];
  const int64_t Hp = H + 2 * pad[0], Wp = W + 2 * pad[1];
  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  const DType mdt = (x.dtype == DType::f32 || w.dtype == DType::f32) ? DType::f32 : x.dtype;
  const uint32_t es = device::dtype_size(mdt);
  const int64_t nC = ceil_div(C, P), nO = ceil_div(O, P);
  const int64_t KK = KH * KW;
  const int64_t maxN = t.psum_bank_elems_f32();
  if (Wo > maxN) fail(n, "output width " + std::to_string(Wo) + " exceeds 512");
  if (stride[0] * Wp > 32767 || stride[1] > 32767)
    fail(n, "stride too large for an access pattern");

  std::vector<uint32_t> xpad(static_cast<size_t>(nC)), wt(static_cast<size_t>(nC));
  for (int64_t cc = 0; cc < nC; ++cc) {
    xpad[cc] = kb.alloc(Hp * Wp * es, "convolution input tile");
    wt[cc] = kb.alloc(O * KK * es, "convolution weights");
  }
  const int64_t rows_per = std::max<int64_t>(1, std::min(Ho, maxN / Wo));
  uint32_t o_sb[2] = {kb.alloc(rows_per * Wo * device::dtype_size(out.dtype), "convolution out"),
                      kb.alloc(rows_per * Wo * device::dtype_size(out.dtype), "convolution out")};
  const uint32_t bias_sb = has_bias ? kb.alloc(4 * nO, "convolution bias") : 0;

  // Weights [c, o, kh*kw] per channel chunk; bias per output chunk.
  for (int64_t cc = 0; cc < nC; ++cc) {
    const int64_t c0 = cc * P, cn = std::min(P, C - c0);
    kb.dma(KernelBuilder::sb(wt[cc], cn, mdt, O * KK),
           KernelBuilder::hbm(w, c0 * w.strides[1], cn, w.strides[1],
                              {{static_cast<int32_t>(w.strides[0]), static_cast<uint32_t>(O)},
                               {static_cast<int32_t>(w.strides[2]), static_cast<uint32_t>(KH)},
                               {static_cast<int32_t>(w.strides[3]), static_cast<uint32_t>(KW)}}),
           DmaRole::load);
  }
  std::optional<HbmView> bias;
  if (has_bias) {
    bias = ctx.view(n.input(2));
    for (int64_t oc = 0; oc < nO; ++oc) {
      const int64_t o0 = oc * P, on = std::min(P, O - o0);
      kb.dma(KernelBuilder::sb(bias_sb + 4 * oc, on, DType::f32, 1),
             KernelBuilder::hbm(*bias, o0 * bias->strides[0], on, bias->strides[0], {}),
             DmaRole::load);
    }
  }
  int iter = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t cc = 0; cc < nC; ++cc) {
      const int64_t c0 = cc * P, cn = std::min(P, C - c0);
      MemRef tile = KernelBuilder::sb(xpad[cc], cn, mdt, Hp * Wp);
      if (pad[0] || pad[1]) {
        device::Memset ms;
        ms.dst = tile;
        kb.emit(Engine::vector, ms);
      }
      MemRef interior = tile;
      interior.offset += (pad[0] * Wp + pad[1]) * es;
      interior.num_levels = 2;
      interior.levels[0] = {static_cast<int32_t>(Wp), static_cast<uint32_t>(H)};
      interior.levels[1] = {1, static_cast<uint32_t>(W)};
      kb.dma(interior,
             KernelBuilder::hbm(x, b * x.strides[0] + c0 * x.strides[1], cn, x.strides[1],
                                {{static_cast<int32_t>(x.strides[2]), static_cast<uint32_t>(H)},
                                 {static_cast<int32_t>(x.strides[3]), static_cast<uint32_t>(W)}}),
             DmaRole::load);
    }
    for (int64_t oc = 0; oc < nO; ++oc) {
      const int64_t o0 = oc * P, on = std::min(P, O - o0);
      for (int64_t y0 = 0; y0 < Ho; y0 += rows_per, ++iter) {
        const int64_t rc = std::min(rows_per, Ho - y0);
        const MemRef acc = KernelBuilder::ps(kb.psum_bank(), on, rc * Wo);
        bool first = true;
        for (int64_t cc = 0; cc < nC; ++cc) {
          const int64_t cn = std::min(P, C - cc * P);
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              device::MatMul mm;
              mm.dst = acc;
              MemRef st = KernelBuilder::sb(wt[cc] + (o0 * KK + kh * KW + kw) * es, cn, mdt, on);
              st.levels[0].stride = static_cast<int32_t>(KK);
              mm.stationary = st;
              MemRef mv = KernelBuilder::sb(xpad[cc], cn, mdt, 1);
              mv.offset += ((y0 * stride[0] + kh * dil[0]) * Wp + kw * dil[1]) * es;
              mv.num_levels = 2;
              mv.levels[0] = {static_cast<int32_t>(stride[0] * Wp), static_cast<uint32_t>(rc)};
              mv.levels[1] = {static_cast<int32_t>(stride[1]), static_cast<uint32_t>(Wo)};
              mm.moving = mv;
              mm.accumulate = !first;
              first = false;
              kb.emit(Engine::tensor, mm);
            }
        }
        kb.add_flops(2.0 * on * rc * Wo * C * KK);
        const MemRef ot = KernelBuilder::sb(o_sb[iter % 2], on, out.dtype, rc * Wo);
        device::Activation a;
        a.dst = ot;
        a.src = acc;
        if (has_bias) a.bias = KernelBuilder::sb(bias_sb + 4 * oc, on, DType::f32, 1);
        kb.emit(Engine::scalar, a);
        kb.dma(KernelBuilder::hbm(out, b * out.strides[0] + o0 * out.strides[1] + y0 * Wo, on,
                                  out.strides[1], {{1, static_cast<uint32_t>(rc * Wo)}}),
               ot, DmaRole::store);
      }
    }
  }
}

}  // namespace

LowerFn conv_lowering(const std::string& op) {
  if (op == "aten.conv2d.default" || op == "aten.convolution.default") return &lower_conv2d;
  return nullptr;
}

}  // namespace neuronc::codegen
