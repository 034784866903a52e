// aten.topk over the last dim on the device: k rounds of "find the largest, note it, remove it",
// all in SBUF, so the values come out sorted and, of equal values, the lower index first (the
// host kernel's stable order). The LLM sampler's top-k over the vocab and a mixture-of-experts
// router's top-k over its experts both lower here.
//
// Two layouts, by the length V of a row:
//   rows   (V <= kRowsModeMax) up to 128 rows on the partitions, each row along the free axis:
//          per round a VectorE max over the free axis, the first index holding it (a compare, a
//          select of the column index, a min), and that element replaced by the sentinel.
//   wide   (longer rows: a vocabulary) one row at a time, spread over the partitions as
//          [P, ceil(V / P)]: per round the same on every partition, then the partitions' results
//          meet through a TensorE transpose to one partition, are reduced there and broadcast
//          back with a ones matmul (x * 1 is exact, and so is a one-term PSUM sum).
// Column indices are held in fp32 (exact below 2^24). An element outside the row (the wide
// layout's padding) or already taken is the sentinel -3.0e38; -inf inputs are clamped to
// -2.9e38 first, so they rank below every number and above the sentinel, and come back out as
// -inf, and no -inf reaches TensorE (whose NC-v2 transpose would spread it as NaN).
#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

using device::AluOp;
using device::DType;
using device::Engine;
using device::MemRef;
using device::ReduceOp;

constexpr int64_t kMaxK = 64;
constexpr int64_t kRowsModeMax = 4096;
constexpr int64_t kMaxIndex = int64_t{1} << 24;  // fp32 holds every index below it exactly
constexpr float kSentinel = -3.0e38f;
constexpr float kClamp = -2.9e38f;
constexpr float kNoIndex = static_cast<float>(kMaxIndex);

struct Shape {
  int64_t rows = 1, V = 1, k = 1;
};

Shape shape_of(const ir::Node& n) {
  const std::vector<int64_t> s = static_shape(n.input(0));
  Shape out;
  out.V = s.empty() ? 1 : s.back();
  for (size_t i = 0; i + 1 < s.size(); ++i) out.rows *= s[i];
  out.k = static_cast<int64_t>(scalar_attr(n, "k", 1));
  return out;
}

// Per-partition SBUF bytes: the row (fp32), its column indices (fp32), a work tile, and the k
// values and indices of the rows in flight.
uint64_t sbuf_bytes(int64_t free, int64_t k) {
  return 3 * KernelBuilder::aligned(static_cast<uint64_t>(free) * 4) +
         4 * KernelBuilder::aligned(static_cast<uint64_t>(k) * 4) + 8 * 64;
}

int64_t wide_columns(int64_t V, int64_t partitions) {
  return ceil_div(V, partitions);
}

std::optional<std::string> refuse_topk(const ir::Node& n, const device::Target& t) {
  const ir::Value* x = n.input(0);
  for (const ir::Dim& d : x->shape())
    if (d.is_symbolic()) return std::nullopt;  // placed by the common symbolic-dim check
  const int64_t r = static_cast<int64_t>(x->shape().size());
  if (r == 0) return "topk of a 0-d tensor runs on the host";
  const int64_t dim = static_cast<int64_t>(scalar_attr(n, "dim", -1));
  if ((dim % r + r) % r != r - 1)
    return "topk along dim " + std::to_string(dim) + " (the device kernel selects along the last)";
  if (scalar_attr(n, "largest", 1) == 0) return "topk with largest=False runs on the host";
  if (!ir::is_floating(x->dtype()))
    return "topk of " + std::string(ir::dtype_name(x->dtype())) + " runs on the host";
  const Shape s = shape_of(n);
  if (s.k < 1 || s.k > kMaxK)
    return "topk with k = " + std::to_string(s.k) + " (the device kernel takes 1 to " +
           std::to_string(kMaxK) + ")";
  if (s.V >= kMaxIndex)
    return "topk over " + std::to_string(s.V) +
           " elements (column indices are exact in fp32 below " + std::to_string(kMaxIndex) + ")";
  const int64_t free = s.V <= kRowsModeMax ? s.V : wide_columns(s.V, t.partitions);
  const uint64_t need = sbuf_bytes(free, s.k);
  if (need > t.sbuf_partition_bytes)
    return "topk over rows of " + std::to_string(s.V) + " needs " + std::to_string(need) +
           " SBUF bytes per partition but " + std::string(t.name) + " has " +
           std::to_string(t.sbuf_partition_bytes);
  return std::nullopt;
}

class TopK {
 public:
  TopK(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx)
      : kb_(kb),
        x_(ctx.view(n.input(0))),
        vals_(ctx.view(n.outputs()[0])),
        idx_(ctx.view(n.outputs()[1])),
        s_(shape_of(n)) {}

  void lower() {
    // Rows of x and of both results: the leading dims, coalesced.
    std::vector<int64_t> sizes;
    std::vector<std::vector<int64_t>> strides(3);
    for (size_t d = 0; d + 1 < x_.shape.size(); ++d) {
      sizes.push_back(x_.shape[d]);
      strides[0].push_back(x_.strides[d]);
      strides[1].push_back(vals_.strides[d]);
      strides[2].push_back(idx_.strides[d]);
    }
    coalesce(sizes, strides);
    const int64_t P = kb_.target().partitions;
    if (s_.V <= kRowsModeMax)
      rows_mode(row_tiles(sizes, strides, P, 0));
    else
      wide_mode(row_tiles(sizes, strides, 1, 0));
  }

 private:
  int64_t last_stride(const HbmView& v) const { return v.strides.back(); }

  MemRef sb(uint32_t off, int64_t partitions, DType dt, int64_t free) const {
    return KernelBuilder::sb(off, partitions, dt, free);
  }
  // Column j of a [partitions, k] tile.
  static MemRef column(const MemRef& tile, int64_t j) {
    MemRef c = tile;
    c.offset += static_cast<uint64_t>(j) * device::dtype_size(tile.dtype);
    c.levels[0] = {1, 1};
    return c;
  }

  // The loaded row(s) in fp32 with -inf (and anything below kClamp) raised to kClamp.
  void clamp(const MemRef& x) { kb_.tensor_scalar(x, x, AluOp::max, kClamp); }

  // values / indices of `rows` rows from the fp32 staging tiles, results stored at the tile.
  void store(const MemRef& v32, const MemRef& i32f, const RowTile& t, uint32_t vout_b,
             uint32_t iout_b) {
    const int64_t rows = t.rows;
    // A value at the clamp came in as -inf (or below -2.9e38): it goes out as -inf.
    const MemRef low = sb(work_b_, rows, DType::f32, s_.k);
    kb_.tensor_scalar(low, v32, AluOp::is_gt, kClamp);
    select(v32, low, v32, -std::numeric_limits<float>::infinity());
    const MemRef vout = sb(vout_b, rows, vals_.dtype, s_.k);
    const MemRef iout = sb(iout_b, rows, idx_.dtype, s_.k);
    copy(vout, v32);
    copy(iout, i32f);
    kb_.dma(KernelBuilder::hbm(
                vals_, t.offset[1], t.chunk, t.split_stride[1],
                {{static_cast<int32_t>(last_stride(vals_)), static_cast<uint32_t>(s_.k)}}),
            vout, DmaRole::store);
    kb_.dma(KernelBuilder::hbm(
                idx_, t.offset[2], t.chunk, t.split_stride[2],
                {{static_cast<int32_t>(last_stride(idx_)), static_cast<uint32_t>(s_.k)}}),
            iout, DmaRole::store);
  }

  // The SBUF every layout takes, for `free` elements of a row per partition.
  struct Buffers {
    uint32_t x, iota, v, i, vout, iout;
  };
  Buffers alloc_buffers(int64_t free) {
    const int64_t k = s_.k;
    Buffers b;
    b.x = kb_.alloc(free * 4, "topk row");
    b.iota = kb_.alloc(free * 4, "topk column index");
    work_b_ = kb_.alloc(std::max<int64_t>(free, k) * 4, "topk work");
    b.v = kb_.alloc(k * 4, "topk values");
    b.i = kb_.alloc(k * 4, "topk indices");
    b.vout = kb_.alloc(k * device::dtype_size(vals_.dtype), "topk values out");
    b.iout = kb_.alloc(k * device::dtype_size(idx_.dtype), "topk indices out");
    return b;
  }
  // Column indices in fp32 at `off` ([partitions, free]): element (p, c) is p * per_partition + c
  // (an int32 iota through the work tile, then a cast).
  void column_indices(uint32_t off, int64_t partitions, int64_t free, int64_t per_partition) {
    device::Iota io;
    io.dst = sb(work_b_, partitions, DType::i32, free);
    io.channel_multiplier = static_cast<int32_t>(per_partition);
    io.pattern = {1, 0, 0, 0};
    kb_.emit(Engine::gpsimd, io);
    copy(sb(off, partitions, DType::f32, free), io.dst);
  }

  // Up to 128 rows per tile, one per partition.
  void rows_mode(const std::vector<RowTile>& tiles) {
    const int64_t V = s_.V, k = s_.k;
    int64_t max_rows = 1;
    for (const RowTile& t : tiles) max_rows = std::max(max_rows, t.rows);
    const Buffers buf = alloc_buffers(V);
    const uint32_t x_b = buf.x, iota_b = buf.iota, v_b = buf.v, i_b = buf.i;
    const uint32_t vout_b = buf.vout, iout_b = buf.iout;
    const uint32_t m_b = kb_.alloc(4, "topk max");
    const uint32_t j_b = kb_.alloc(4, "topk argmax");
    column_indices(iota_b, max_rows, V, 0);  // 0 .. V-1 on every partition

    for (const RowTile& t : tiles) {
      const int64_t rows = t.rows;
      const MemRef x = sb(x_b, rows, DType::f32, V);
      const MemRef iota = sb(iota_b, rows, DType::f32, V);
      const MemRef work = sb(work_b_, rows, DType::f32, V);
      const MemRef m = sb(m_b, rows, DType::f32, 1);
      const MemRef j = sb(j_b, rows, DType::f32, 1);
      const MemRef vals = sb(v_b, rows, DType::f32, k);
      const MemRef idx = sb(i_b, rows, DType::f32, k);
      kb_.dma(
          x,
          KernelBuilder::hbm(x_, t.offset[0], t.chunk, t.split_stride[0],
                             {{static_cast<int32_t>(last_stride(x_)), static_cast<uint32_t>(V)}}),
          DmaRole::load);
      clamp(x);
      for (int64_t r = 0; r < k; ++r) {
        kb_.tensor_reduce(m, x, ReduceOp::max);
        first_index_of(j, x, iota, work, m);
        copy(column(vals, r), m);
        copy(column(idx, r), j);
        if (r + 1 < k) take(x, iota, work, j);
      }
      store(vals, idx, t, vout_b, iout_b);
    }
  }

  // One row at a time over [P, C] partitions x columns.
  void wide_mode(const std::vector<RowTile>& tiles) {
    const int64_t V = s_.V, k = s_.k;
    const int64_t C = wide_columns(V, kb_.target().partitions);
    const int64_t full = V / C, rest = V % C;
    const int64_t P = full + (rest ? 1 : 0);
    const Buffers buf = alloc_buffers(C);
    const uint32_t x_b = buf.x, iota_b = buf.iota, v_b = buf.v, i_b = buf.i;
    const uint32_t vout_b = buf.vout, iout_b = buf.iout;
    const uint32_t part_b = kb_.alloc(4, "topk partition result");
    const uint32_t one_b = kb_.alloc(4, "topk scalar");
    const uint32_t bc_b = kb_.alloc(4, "topk broadcast");
    const uint32_t ones_b = kb_.alloc(P * 4, "topk ones");

    const MemRef x = sb(x_b, P, DType::f32, C);
    const MemRef iota = sb(iota_b, P, DType::f32, C);
    const MemRef work = sb(work_b_, P, DType::f32, C);
    column_indices(iota_b, P, C, C);  // element (p, c) is column p * C + c of the row
    const MemRef ones = sb(ones_b, 1, DType::f32, P);
    device::Memset ms;
    ms.dst = ones;
    ms.value = 1.0;
    kb_.emit(Engine::vector, ms);

    const MemRef part = sb(part_b, P, DType::f32, 1);  // per partition
    const MemRef one = sb(one_b, 1, DType::f32, 1);    // the row's
    const MemRef bcast = sb(bc_b, P, DType::f32, 1);   // the row's, on every partition
    const MemRef vals = sb(v_b, 1, DType::f32, k);
    const MemRef idx = sb(i_b, 1, DType::f32, k);
    const int32_t xs = static_cast<int32_t>(last_stride(x_));

    // The row's partitions reduced to one value on partition 0 (TensorE transpose, then a
    // reduce on VectorE), then copied back to every partition (a ones matmul).
    auto across = [&](ReduceOp op) {
      device::Transpose tr;
      tr.dst = KernelBuilder::ps(kb_.psum_bank(), 1, P);
      tr.src = part;
      kb_.emit(Engine::tensor, tr);
      kb_.tensor_reduce(one, tr.dst, op);
    };
    auto broadcast = [&]() {
      device::MatMul mm;
      mm.dst = KernelBuilder::ps(kb_.psum_bank(), P, 1);
      mm.stationary = ones;
      mm.moving = one;
      kb_.emit(Engine::tensor, mm);
      copy(bcast, mm.dst);
    };

    for (const RowTile& t : tiles) {
      device::Memset pad;
      pad.dst = x;
      pad.value = kSentinel;
      kb_.emit(Engine::vector, pad);
      kb_.dma(sb(x_b, full, DType::f32, C),
              KernelBuilder::hbm(x_, t.offset[0], full, C * xs, {{xs, static_cast<uint32_t>(C)}}),
              DmaRole::load);
      if (rest) {
        MemRef tail = sb(x_b, 1, DType::f32, rest);
        tail.partition_start = static_cast<uint16_t>(full);
        kb_.dma(tail,
                KernelBuilder::hbm(x_, t.offset[0] + full * C * xs, 1, 0,
                                   {{xs, static_cast<uint32_t>(rest)}}),
                DmaRole::load);
      }
      clamp(x);
      for (int64_t r = 0; r < k; ++r) {
        kb_.tensor_reduce(part, x, ReduceOp::max);
        across(ReduceOp::max);
        copy(column(vals, r), one);
        broadcast();
        first_index_of(part, x, iota, work, bcast);
        across(ReduceOp::min);
        copy(column(idx, r), one);
        if (r + 1 < k) {
          broadcast();
          take(x, iota, work, bcast);
        }
      }
      store(vals, idx, t, vout_b, iout_b);
    }
  }

  void copy(const MemRef& dst, const MemRef& src) {
    device::TensorCopy c;
    c.dst = dst;
    c.src = src;
    kb_.emit(Engine::vector, c);
  }

  // dst = predicate != 0 ? on_true : on_false (VectorE).
  void select(const MemRef& dst, const MemRef& predicate, const MemRef& on_true, float on_false) {
    device::Select sel;
    sel.dst = dst;
    sel.predicate = predicate;
    sel.on_true = on_true;
    sel.on_false = on_false;
    kb_.emit(Engine::vector, sel);
  }

  // j = the smallest column index whose element equals m (per partition; kNoIndex if none).
  void first_index_of(const MemRef& j, const MemRef& x, const MemRef& iota, const MemRef& work,
                      const MemRef& m) {
    kb_.tensor_scalar(work, x, AluOp::is_equal, m);
    select(work, work, iota, kNoIndex);
    kb_.tensor_reduce(j, work, ReduceOp::min);
  }

  // The element at column index j becomes the sentinel.
  void take(const MemRef& x, const MemRef& iota, const MemRef& work, const MemRef& j) {
    kb_.tensor_scalar(work, iota, AluOp::not_equal, j);
    select(x, work, x, kSentinel);
  }

  KernelBuilder& kb_;
  const HbmView& x_;
  const HbmView& vals_;
  const HbmView& idx_;
  Shape s_;
  uint32_t work_b_ = 0;
};

void lower_topk(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  if (auto why = refuse_topk(n, kb.target())) fail(n, *why);
  TopK(kb, n, ctx).lower();
}

}  // namespace

const Lowering* topk_lowering(const std::string& op) {
  static constexpr Lowering kTopK{&lower_topk, &refuse_topk};
  return op == "aten.topk.default" ? &kTopK : nullptr;
}

}  // namespace neuronc::codegen
