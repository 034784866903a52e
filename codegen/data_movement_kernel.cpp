// Data movement that needs bytes to move: cat/stack (each input DMA'd into its slice of the
// output, except inputs their producer already wrote there), views the strides cannot express
// (materialised into a contiguous buffer), and the driver's output copies. All are HBM-to-HBM DMAs
// whose access patterns do the permutation; view/permute/expand/slice/select never reach here (they
// are views, compile_partition.cpp).
#include <limits>
#include <optional>
#include <utility>

#include "codegen/lowering.h"
#include "codegen/view_lowering.h"

namespace neuronc::codegen {
namespace {

// Splits `sizes`/`strides` (one side of a copy, coalesced) into the DMA form: up to 5 dims
// (partition + 4 levels), looping over the rest.
struct Side {
  std::vector<int64_t> sizes, strides;
};

Side coalesced(const HbmView& v) {
  std::vector<int64_t> s = v.shape;
  std::vector<std::vector<int64_t>> st = {v.strides};
  coalesce(s, st);
  return {s, st[0]};
}

// Element rows of a transposing copy stage through SBUF: a direct DMA would move one element
// per descriptor (TRAINIUM.md §5.3: each costs dma_descriptor_ns), 20 ns for 4 bytes.
constexpr int64_t kTransposeWidth = 1024;  // elements of the destination's contiguous dim per tile

// Finds the dims of a same-shape copy (coalesced) along which the destination (`x`) and the
// source (`y`) are contiguous, when they differ and both are long enough for the transpose to
// pay; the copy is then a batch of 2-D transposes.
std::optional<std::pair<size_t, size_t>> transposed_dims(
    const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides,
    device::DType dst_dt, device::DType src_dt, int64_t kBlock) {
  if (dst_dt != src_dt || device::dtype_size(dst_dt) > 4) return std::nullopt;
  std::optional<size_t> x, y;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (strides[0][i] == 1 && !x) x = i;
    if (strides[1][i] == 1 && !y) y = i;
  }
  if (!x || !y || *x == *y || sizes[*x] < kBlock / 2 || sizes[*y] < kBlock / 2) return std::nullopt;
  // The load steps 32 rows of the source per block in an int32 access level.
  if (kBlock * strides[1][*x] > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return std::pair{*x, *y};
}

// dst[b, y, x] = src[b, y, x] where dst is contiguous along x and src along y. Per tile of
// 128 y by up to kTransposeWidth x: the source loads in runs of 32 along y into four partition
// groups, each 32 x 32 block is transposed on VectorE inside its group (raw bytes, exact for
// every dtype), and the tile stores 128 rows of contiguous x.
void transpose_through_sbuf(KernelBuilder& kb, const HbmView& dst, const HbmView& src,
                            const std::vector<int64_t>& sizes,
                            const std::vector<std::vector<int64_t>>& strides, size_t x, size_t y) {
  const device::DType dt = dst.dtype;
  const int64_t es = device::dtype_size(dt);
  const int64_t kBlock = kb.target().vector_transpose_block;
  const int64_t P = kb.target().partitions;
  const int64_t X = sizes[x], Y = sizes[y];
  const int64_t W = std::min<int64_t>((X + kBlock - 1) / kBlock * kBlock, kTransposeWidth);
  const int64_t ds_y = strides[0][y], ss_x = strides[1][x];
  uint32_t in_off[2], out_off[2];
  for (int s = 0; s < 2; ++s) {
    in_off[s] = kb.alloc(static_cast<uint64_t>(W * es), "transposing copy input");
    out_off[s] = kb.alloc(static_cast<uint64_t>(W * es), "transposing copy output");
  }
  auto sbuf = [&](uint32_t off, int64_t p0, int64_t pc, std::vector<device::AccessLevel> lv) {
    device::MemRef m =
        device::sbuf(static_cast<uint16_t>(p0), static_cast<uint16_t>(pc), off, dt, 1);
    m.num_levels = static_cast<uint8_t>(lv.size());
    for (size_t i = 0; i < lv.size(); ++i) m.levels[i] = lv[i];
    return m;
  };
  // Batch dims: every dim but x and y.
  std::vector<size_t> batch;
  int64_t nbatch = 1;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (i != x && i != y) batch.push_back(i), nbatch *= sizes[i];
  int slot = 0;
  for (int64_t b = 0; b < nbatch; ++b) {
    int64_t doff = 0, soff = 0, rem = b;
    for (size_t k = batch.size(); k-- > 0;) {
      const int64_t i = rem % sizes[batch[k]];
      rem /= sizes[batch[k]];
      doff += i * strides[0][batch[k]];
      soff += i * strides[1][batch[k]];
    }
    for (int64_t y0 = 0; y0 < Y; y0 += P) {
      for (int64_t x0 = 0; x0 < X; x0 += W, slot ^= 1) {
        const int64_t ry = std::min(P, Y - y0), xw = std::min(W, X - x0);
        const int64_t full = xw / kBlock, tail = xw % kBlock;
        // Loads: group g holds y in [y0 + 32g, +32); partition 32g + xi, free 32j + yi holds
        // x = x0 + 32j + xi.
        for (int64_t g = 0; g * kBlock < ry; ++g) {
          const int64_t cy = std::min(kBlock, ry - g * kBlock);
          const int64_t yb = y0 + g * kBlock;
          auto load = [&](int64_t j0, int64_t nj, int64_t cx) {
            std::vector<device::AccessLevel> lv;
            if (nj > 1)
              lv.push_back({static_cast<int32_t>(kBlock * ss_x), static_cast<uint32_t>(nj)});
            lv.push_back({1, static_cast<uint32_t>(cy)});
            std::vector<device::AccessLevel> sl;
            if (nj > 1) sl.push_back({static_cast<int32_t>(kBlock), static_cast<uint32_t>(nj)});
            sl.push_back({1, static_cast<uint32_t>(cy)});
            kb.dma(sbuf(in_off[slot] + static_cast<uint32_t>(j0 * kBlock * es), g * kBlock, cx, sl),
                   KernelBuilder::hbm(src, soff + (x0 + j0 * kBlock) * ss_x + yb, cx, ss_x, lv),
                   DmaRole::load);
          };
          if (full > 0) load(0, full, kBlock);
          if (tail > 0) load(full, 1, tail);
          for (int64_t j = 0; j * kBlock < xw; ++j) {
            const int64_t cx = std::min(kBlock, xw - j * kBlock);
            const uint32_t col = static_cast<uint32_t>(j * kBlock * es);
            device::Transpose tr;
            tr.src = sbuf(in_off[slot] + col, g * kBlock, cx, {{1, static_cast<uint32_t>(cy)}});
            tr.dst = sbuf(out_off[slot] + col, g * kBlock, cy, {{1, static_cast<uint32_t>(cx)}});
            kb.emit(device::Engine::vector, tr);
          }
        }
        kb.dma(KernelBuilder::hbm(dst, doff + y0 * ds_y + x0, ry, ds_y,
                                  {{1, static_cast<uint32_t>(xw)}}),
               KernelBuilder::sb(out_off[slot], ry, dt, xw), DmaRole::store);
      }
    }
  }
}

}  // namespace

void copy_view(KernelBuilder& kb, const HbmView& dst_in, const HbmView& src_in) {
  // Both sides are read in row-major order of their own shapes: when one side can be viewed
  // with the other's shape (a contiguous destination always can), the copy becomes a
  // same-shape copy, which splits over partitions without the 65535-row limit below.
  HbmView dst = dst_in, src = src_in;
  if (dst.shape != src.shape) {
    if (auto r = dst.reshape(src.shape))
      dst = *r;
    else if (auto r2 = src.reshape(dst.shape))
      src = *r2;
  }
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
  Side s, d;
  if (dst.shape == src.shape) {
    sizes = dst.shape;
    strides = {dst.strides, src.strides};
    coalesce(sizes, strides);
    if (auto xy = transposed_dims(sizes, strides, dst.dtype, src.dtype,
                                  kb.target().vector_transpose_block)) {
      transpose_through_sbuf(kb, dst, src, sizes, strides, xy->first, xy->second);
      return;
    }
    // Spread a long contiguous run over several descriptors (DMA engines run in parallel).
    if (sizes.size() == 1 && strides[0][0] == 1 && strides[1][0] == 1 && sizes[0] >= 4096) {
      for (int64_t a : {128, 64, 32, 16}) {
        if (sizes[0] % a) continue;
        const int64_t b = sizes[0] / a;
        sizes = {a, b};
        strides = {{b, 1}, {b, 1}};
        break;
      }
    }
    d = {sizes, strides[0]};
    s = {sizes, strides[1]};
  } else {
    d = coalesced(dst);
    s = coalesced(src);
    if (d.sizes.size() > 5 || s.sizes.size() > 5)
      throw Error("copy of a view with more than 5 non-mergeable dimensions (shape rank " +
                  std::to_string(src.rank()) + ") is not supported");
  }
  // Loop over leading dims beyond 5 (same-shape case only) and over partition chunks of 65535.
  const size_t nd = d.sizes.size();
  const size_t lead = nd > 5 ? nd - 5 : 0;
  std::vector<int64_t> idx(lead, 0);
  while (true) {
    int64_t doff = 0, soff = 0;
    for (size_t i = 0; i < lead; ++i) {
      doff += idx[i] * d.strides[i];
      soff += idx[i] * s.strides[i];
    }
    auto ref = [&](const HbmView& v, const Side& side, int64_t off, int64_t p0, int64_t pc) {
      std::vector<device::AccessLevel> lv;
      const size_t first = side.sizes.size() > 5 ? side.sizes.size() - 5 : 0;
      for (size_t i = first + 1; i < side.sizes.size(); ++i)
        lv.push_back({static_cast<int32_t>(side.strides[i]), static_cast<uint32_t>(side.sizes[i])});
      return KernelBuilder::hbm(v, off + p0 * side.strides[first], pc, side.strides[first], lv);
    };
    const size_t df = d.sizes.size() > 5 ? d.sizes.size() - 5 : 0;
    const size_t sf = s.sizes.size() > 5 ? s.sizes.size() - 5 : 0;
    if (d.sizes == s.sizes) {
      for (int64_t p0 = 0; p0 < d.sizes[df]; p0 += 65535) {
        const int64_t pc = std::min<int64_t>(65535, d.sizes[df] - p0);
        kb.dma(ref(dst, d, doff, p0, pc), ref(src, s, soff, p0, pc), DmaRole::load);
      }
    } else {
      if (d.sizes[df] > 65535 || s.sizes[sf] > 65535)
        throw Error("copy with more than 65535 rows between differently shaped views");
      kb.dma(ref(dst, d, doff, 0, d.sizes[df]), ref(src, s, soff, 0, s.sizes[sf]), DmaRole::load);
    }
    size_t i = lead;
    while (i > 0 && ++idx[i - 1] == d.sizes[i - 1]) idx[--i] = 0;
    if (i == 0) break;
  }
}

namespace {

void lower_cat(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const HbmView& out = ctx.view(n.output());
  int64_t dim = n.attr("dim") ? n.attr_int("dim") : 0;
  const bool stack = n.op() == "aten.stack.default";
  if (dim < 0) dim += out.rank();
  const int out_buffer = ctx.info(n.output()).buffer;
  int64_t start = 0;
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    const HbmView& in = ctx.view(n.input(i));
    if (in.numel() == 0) continue;
    // Written in place by its producer (compile_partition.cpp, concatenation in place): the
    // input already is its slice of the output (same buffer, same elements).
    if (!stack && ctx.info(n.input(i)).buffer == out_buffer && in.rank() == out.rank()) {
      const HbmView slot = out.slice(dim, start, start + in.shape[dim], 1);
      if (in.offset == slot.offset && in.shape == slot.shape && in.strides == slot.strides) {
        start += in.shape[dim];
        continue;
      }
    }
    if (stack) {
      copy_view(kb, out.select(dim, static_cast<int64_t>(i)), in);
    } else {
      const int64_t len = in.shape[dim];
      copy_view(kb, out.slice(dim, start, start + len, 1),
                in.expand(out.slice(dim, start, start + len, 1).shape));
      start += len;
    }
  }
}

// gather / index_select with a compile-time index: the source offset of every output element
// is known, so the gather is a list of strided HBM-to-HBM DMAs (one per run of output elements
// whose sources are equally spaced).
void lower_static_gather(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const std::string& op = n.op();
  const HbmView& self = ctx.view(n.input(0));
  const HbmView& out = ctx.view(n.output());
  const std::vector<int64_t> oshape = out.shape;
  const int64_t count = out.numel();
  // Index tensors (compile-time), one per indexed dimension of `self`.
  std::vector<std::vector<double>> index;
  std::vector<std::vector<int64_t>> ishape;
  for (size_t i = 1; i < n.inputs().size(); ++i) {
    const ir::Value* v = n.input(i);
    if (!v) fail(n, "index with a None (slice) entry is not lowered");
    auto vals = ctx.constant_values(v);
    if (!vals)
      fail(n, "the index '" + v->name() +
                  "' is only known at run time; codegen lowers gather/index_select/index with "
                  "compile-time indices only (data-dependent gathers need an indirect DMA)");
    index.push_back(std::move(*vals));
    ishape.push_back(static_shape(v));
  }
  int64_t dim = 0;
  if (op != "aten.index.Tensor") {
    dim = n.attr_int("dim");
    if (dim < 0) dim += self.rank();
  }
  std::vector<int64_t> src(static_cast<size_t>(count));
  std::vector<int64_t> idx(oshape.size(), 0);
  auto checked = [&](int64_t sel, int64_t d) {
    if (sel < 0) sel += self.shape[d];
    if (sel < 0 || sel >= self.shape[d])
      fail(n, "index " + std::to_string(sel) + " is out of range for dimension " +
                  std::to_string(d) + " of size " + std::to_string(self.shape[d]));
    return sel;
  };
  for (int64_t e = 0; e < count; ++e) {
    int64_t rem = e;
    for (int64_t d = static_cast<int64_t>(oshape.size()) - 1; d >= 0; --d) {
      idx[d] = rem % oshape[d];
      rem /= oshape[d];
    }
    int64_t off = 0;
    if (op == "aten.index.Tensor") {
      // out = [broadcast(index shapes)..., self.shape[k:]...]
      const size_t k = index.size();
      const size_t br = oshape.size() - (static_cast<size_t>(self.rank()) - k);
      for (size_t j = 0; j < k; ++j) {
        const auto& is = ishape[j];
        int64_t pos = 0, st = 1;
        for (int64_t d = static_cast<int64_t>(is.size()) - 1; d >= 0; --d) {
          const int64_t od = static_cast<int64_t>(br) - static_cast<int64_t>(is.size()) + d;
          pos += (is[d] == 1 ? 0 : idx[od]) * st;
          st *= is[d];
        }
        off +=
            checked(static_cast<int64_t>(index[j][pos]), static_cast<int64_t>(j)) * self.strides[j];
      }
      for (size_t d = k; d < static_cast<size_t>(self.rank()); ++d)
        off += idx[br + d - k] * self.strides[d];
    } else {
      const int64_t sel = op == "aten.index_select.default"
                              ? static_cast<int64_t>(index[0][idx[dim]])
                              : static_cast<int64_t>(index[0][e]);  // gather: index ~ out
      for (size_t d = 0; d < oshape.size(); ++d)
        off += (static_cast<int64_t>(d) == dim ? checked(sel, dim) : idx[d]) * self.strides[d];
    }
    src[e] = off;
  }
  for (int64_t e = 0; e < count;) {
    int64_t len = 1;
    const int64_t stride = e + 1 < count ? src[e + 1] - src[e] : 1;
    while (e + len < count && src[e + len] - src[e + len - 1] == stride) ++len;
    kb.dma(KernelBuilder::hbm(out, e, 1, 0, {{1, static_cast<uint32_t>(len)}}),
           KernelBuilder::hbm(
               self, src[e], 1, 0,
               {{static_cast<int32_t>(len > 1 ? stride : 1), static_cast<uint32_t>(len)}}),
           DmaRole::load);
    e += len;
  }
}

// A view node given a buffer of its own: its result's elements in row-major order. That is the
// view of the operand when one exists (a permuted view a pooling kernel cannot read), else the
// operand's own order (a reshape the strides do not allow).
void lower_materialize(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  const std::optional<std::vector<HbmView>> views = lower_view(n, ctx.view(n.input(0)));
  copy_view(kb, ctx.view(n.output()), views ? views->front() : ctx.view(n.input(0)));
}

// A gather whose indices are compile-time constants is a set of copies; indices computed at
// run time are not lowered.
std::optional<std::string> refuse_static_gather(const ir::Node& n, const device::Target&) {
  for (size_t i = 1; i < n.inputs().size(); ++i) {
    const ir::Value* v = n.inputs()[i];
    if (!v) return std::string("index with a None (whole-dim) entry is not lowered");
    if (!(!v->producer() && v->payload() && !v->payload()->absent))
      return "indices '" + v->name() + "' are only known at run time (data-dependent gather)";
  }
  return std::nullopt;
}

}  // namespace

const Lowering* data_movement_lowering(const std::string& op) {
  static constexpr Lowering kCat{&lower_cat, nullptr};
  static constexpr Lowering kMaterialize{&lower_materialize, nullptr};
  static constexpr Lowering kStaticGather{&lower_static_gather, &refuse_static_gather};
  if (op == "aten.cat.default" || op == "aten.stack.default") return &kCat;
  if (op == "<materialize>") return &kMaterialize;
  if (op == "aten.gather.default" || op == "aten.index_select.default" || op == "aten.index.Tensor")
    return &kStaticGather;
  return nullptr;
}

}  // namespace neuronc::codegen
