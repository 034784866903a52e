// Internal interface between the partition driver (compile_partition.cpp) and the per-family
// kernel lowerings (matmul_kernel.cpp, elementwise_kernel.cpp, ...). The driver resolves every
// IR value to an HBM view before lowering starts; lowerings only read the context, so kernels
// lower concurrently.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/hbm_view.h"
#include "codegen/kernel.h"
#include "codegen/view_lowering.h"
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
    std::vector<int64_t> permutation;  // see ConstantBinding::permutation
    int64_t row_interleave = 0;        // see ConstantBinding::row_interleave
    bool absent = false;               // see ConstantBinding::absent
    int64_t column_block = 0;          // see ConstantBinding::column_block
  };
  // ConstantBinding::row_interleave of the buffer holding `v` (0 for anything else).
  int64_t row_interleave(const ir::Value* v) const;
  // ConstantBinding::column_block of the buffer holding `v` (0 for anything else).
  int64_t column_block(const ir::Value* v) const;
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
// Why the family cannot lower node `n` for target `t`, or nullopt when it can.
using RefuseFn = std::optional<std::string> (*)(const ir::Node& n, const device::Target& t);

// One operator family's lowering. It is the single answer to both questions the compiler asks
// of a node: "can it run on this target's device?" (placement, `analyze`) and "lower it"
// (codegen), so the two cannot disagree: a lowering that fails on a node its `refuse` accepted is
// a compiler bug (tests/codegen/support_test.cpp sweeps families for such disagreements).
struct Lowering {
  LowerFn lower = nullptr;
  RefuseFn refuse = nullptr;  // null: the family lowers every node of its ops
  std::optional<std::string> refusal(const ir::Node& n, const device::Target& t) const {
    return refuse ? refuse(n, t) : std::nullopt;
  }
};

// Each returns the lowering for `op`, or null when the family does not handle it.
const Lowering* matmul_lowering(const std::string& op);
const Lowering* elementwise_lowering(const std::string& op);
const Lowering* row_lowering(const std::string& op);         // reductions, softmax, layer/rms norm
const Lowering* group_norm_lowering(const std::string& op);  // group_norm, native_group_norm
const Lowering* attention_lowering(const std::string& op);
const Lowering* gather_lowering(const std::string& op);  // embedding
const Lowering* conv_lowering(const std::string& op);
const Lowering* pool_lowering(const std::string& op);           // max / avg / adaptive-avg pooling
const Lowering* data_movement_lowering(const std::string& op);  // cat, gathers, copies
const Lowering* collective_lowering(const std::string& op);     // all_reduce, all_gather
const Lowering* topk_lowering(const std::string& op);           // topk along the last dim

// The column block (ConstantBinding::column_block) the matmul kernel of `linear` streams its
// weight in: the n-block of a weight that does not stay in SBUF whole (not loaded once) and whose
// n-blocks are narrower than its rows; 0 when whole rows load (or the node is no linear).
int64_t linear_weight_column_block(const ir::Node& linear, const device::Target& t);

// Whether the matmul-family node `mm` can fuse a residual add with `residual` (a view of the
// matmul's output shape): the view must reshape to the kernel's [batch..., M, N] problem layout,
// which flattens leading dims the operands allow.
bool matmul_residual_fits(const ir::Node& mm, const PartitionContext& ctx, const HbmView& residual);

// A [rows, n] SBUF tile whose every partition holds the same HBM row (`v` walked by `levels`, n
// elements): a norm's gamma / beta. Loads the row once and broadcasts it over the partitions
// on TensorE (a ones matmul, exact), instead of re-reading it per partition.
device::MemRef load_broadcast_row(KernelBuilder& kb, const HbmView& v,
                                  const std::vector<device::AccessLevel>& levels, int64_t rows,
                                  const char* what);

// Layer norm (or rms norm) of each row of `xt` [rows, R] into `ot`, through the fp32 `work`
// tile [rows, R] and three fp32 columns [rows, 1]; gamma / beta are [rows, R] tiles of the
// affine parameters. The one instruction sequence of every row-norm lowering (the row kernel,
// a matmul's layer-norm epilogue), so they round alike.
void emit_row_norm(KernelBuilder& kb, bool layer_norm, const device::MemRef& xt,
                   const device::MemRef& work, const device::MemRef& ot,
                   const std::array<device::MemRef, 3>& cols,
                   const std::optional<device::MemRef>& gamma,
                   const std::optional<device::MemRef>& beta, double eps);

// Whether the matmul-family node `mm` can apply layer norm `ln` (over the last dim of its
// result, which it reads) as its epilogue: no batch, a row of at most kLayerNormEpilogueMaxN
// elements, and one m-tile (M <= partitions) or a B loaded once, so each m-tile's whole rows
// stay in SBUF until normalised.
constexpr int64_t kLayerNormEpilogueMaxN = 2048;
bool matmul_layer_norm_fits(const ir::Node& mm, const ir::Node& ln, const PartitionContext& ctx);

// A layer norm whose normalised extent is too large for one SBUF row, lowered by the group-norm
// kernel (statistics over partitions x chunks, group_norm_kernel.cpp).
void lower_large_layer_norm(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx);
// A norm's epilogue: `m` multiplies the result of `n` (rms_norm or layer_norm over its last
// dim) by a 1-D weight along that dim, all of one float dtype (transformers' bf16 LlamaRMSNorm:
// weight * norm(x).to(bf16)). The norm kernel applies it to its rounded result before the store,
// the same roundings as the separate multiply. Returns the weight, or null when `m` is not such
// an epilogue of `n`.
const ir::Value* norm_epilogue_weight(const ir::Node& n, const ir::Node& m);
// The epilogue kernel formation fused into norm `n`'s kernel (`kb.fused`), or null. Fails on a
// fused node that is not such an epilogue.
const ir::Node* fused_norm_epilogue(const KernelBuilder& kb, const ir::Node& n);
// Whether lower_large_layer_norm can walk `n`'s input and `out` (its output, or its fused
// epilogue's): leading and normalised dims each with one stride.
bool large_layer_norm_walkable(const ir::Node& n, const ir::Value* out,
                               const PartitionContext& ctx);

// A 1-D or 2-D convolution seen as 2-D (a 1-D one has H = KH = Ho = 1).
struct ConvGeometry {
  int64_t B = 0, C = 0, H = 0, W = 0, O = 0, KH = 0, KW = 0, Ho = 0, Wo = 0, groups = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;  // stride, dilation, top/left pad
};
// Fills `g` from a convolution node; returns why it is not lowerable on `t`, or nullopt.
std::optional<std::string> conv_geometry(const ir::Node& n, const device::Target& t,
                                         ConvGeometry& g);
// Whether the convolution packs (channel, kernel row) pairs on the partitions (few input
// channels) instead of one input channel per partition.
bool conv_packs_rows(const ConvGeometry& g, int64_t partitions);
// The per-channel scale fused into a convolution's input load: `mul` (x * s, s one value per
// (batch, channel)) is a fused node of the convolution's kernel whose result is its input.
// Returns {x, s} when `n` is such a mul feeding `conv`, else {nullptr, nullptr}.
std::pair<const ir::Value*, const ir::Value*> channel_scale_operands(const ir::Node& n,
                                                                     const ir::Node& conv);

// A pooling node as 2-D planes over `rows` leading (batch x channel) rows.
struct PoolGeometry {
  enum Kind { max, avg } kind = max;
  bool adaptive = false, uneven = false;  // uneven: adaptive windows of different sizes
  int64_t rows = 1, H = 1, W = 1, Ho = 1, Wo = 1, KH = 1, KW = 1, sh = 1, sw = 1, dh = 1, dw = 1,
          pt = 0, pl = 0, Hp = 1, Wp = 1;
  double divisor = 0;  // avg divisor_override (0: KH * KW)
  // A padded plane over the tile budget is pooled in chunks of at most `chunk_rows` output rows,
  // each loading only the padded input rows its windows read (0: the whole plane fits one tile).
  int64_t chunk_rows = 0;
  // The kernel's plan: output rows cut into chunks of `band_rows`, `bands` of them side by side
  // on the partitions (when (batch, channel) rows are few), `passes` one after another.
  int64_t bands = 1, passes = 1, band_rows = 1;
};
// Fills `g` from a pooling node; returns why it is not lowerable on `t`, or nullopt.
std::optional<std::string> pool_geometry(const ir::Node& n, const device::Target& t,
                                         PoolGeometry& g);
// The one stride between the (batch, channel) rows of a pooling operand `v`, its dims before
// the last `spatial`, or nullopt when those dims do not collapse into one stride (a permuted
// view): the pooling kernel puts rows on partitions at that stride.
std::optional<int64_t> pool_row_stride(const HbmView& v, int64_t spatial);
// Whether `n` is a pooling node whose input view must have uniform rows, and how many spatial
// dims it pools (0 when `n` is not such a node).
int64_t pool_spatial_dims(const ir::Node& n);

// Row-major index in `shape` of element `k` of the same tensor stored permuted by `perm`
// (stored dim i = logical dim perm[i]), its first stored dim's rows interleaved by
// `row_interleave` (ConstantBinding::row_interleave; 0 = not).
int64_t stored_to_logical(int64_t k, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& perm, int64_t row_interleave = 0);
// Calls put(k, stored_to_logical(k, shape, perm, row_interleave)) for every stored element k,
// in order, with no division per element: an odometer over the stored dims, set once per
// interleaved row (a conv weight's 25M elements through stored_to_logical one by one took a
// fifth of ResNet-50's compile).
template <typename Put>
void for_each_stored(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm,
                     int64_t row_interleave, Put&& put) {
  const size_t r = shape.size();
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (r == 0 || n == 0) {
    if (n == 1) put(0, 0);
    return;
  }
  // Stored dim i: its extent and the logical stride of one step along it.
  std::vector<int64_t> logical_stride(r, 1), extent(r), step(r);
  for (size_t d = r - 1; d-- > 0;) logical_stride[d] = logical_stride[d + 1] * shape[d + 1];
  for (size_t i = 0; i < r; ++i) {
    const size_t d = perm.empty() ? i : static_cast<size_t>(perm[i]);
    extent[i] = shape[d];
    step[i] = logical_stride[d];
  }
  // The odometer: stored digits of permuted index q, and q's logical offset.
  std::vector<int64_t> digit(r);
  int64_t offset = 0;
  auto set = [&](int64_t q) {
    offset = 0;
    for (size_t i = r; i-- > 0;) {
      digit[i] = q % extent[i];
      q /= extent[i];
      offset += digit[i] * step[i];
    }
  };
  auto advance = [&] {
    for (size_t i = r; i-- > 0;) {
      offset += step[i];
      if (++digit[i] < extent[i]) return;
      offset -= extent[i] * step[i];
      digit[i] = 0;
    }
  };
  // Stored row s (of the first stored dim) holds permuted row ((s % chunks) * interleave +
  // s / chunks) when interleaved (stored_to_logical's mapping), else row s.
  const int64_t rows = extent[0], row_elems = n / rows;
  const int64_t chunks = row_interleave > 0 ? rows / row_interleave : 0;
  int64_t k = 0;
  for (int64_t s = 0; s < rows; ++s) {
    if (s == 0 || row_interleave > 0)
      set((row_interleave > 0 ? (s % chunks) * row_interleave + s / chunks : s) * row_elems);
    for (int64_t t = 0; t < row_elems; ++t, ++k) {
      put(k, offset);
      if (t + 1 < row_elems || row_interleave == 0) advance();
    }
  }
}
// Row-major index in the IR shape [N, K] of element `j` of its transpose stored in column
// blocks of `w` columns (ConstantBinding::column_block).
int64_t column_blocked_to_logical(int64_t j, int64_t N, int64_t K, int64_t w);
// Ops whose result codegen computes at compile time (arange, full, zeros_like, ...).
bool is_creation_op(const std::string& op);
// The lowering of `op` from any family, or null.
const Lowering* find_lowering(const std::string& op);

// Copies the elements of `src` (any strides) into `dst` (same numel, any strides), both read
// in row-major order of their own shapes, with HBM-to-HBM DMAs (casting when dtypes differ).
void copy_view(KernelBuilder& kb, const HbmView& dst, const HbmView& src);

// The ScalarE function when `n` is a unary activation that a matmul epilogue can apply
// (relu, gelu, silu, sigmoid, tanh), else nullopt.
std::optional<device::ActivationFunction> epilogue_activation(const ir::Node& n);

// Tiles of size b needed to cover a (a >= 0, b > 0).
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

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
