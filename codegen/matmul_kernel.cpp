// Matmul family (linear, addmm, mm, bmm, baddbmm, matmul) on TensorE.
//
// C[M, N] = alpha * A[M, K] @ B[K, N] + beta * bias, per batch index. TensorE contracts over the
// partitions: stationary A^T tiles [K<=128, M<=128], moving B tiles [K<=128, N<=512], PSUM
// accumulation across the K tiles in one bank, then the epilogue (bias add, scaling) evacuates
// PSUM to SBUF on VectorE/ScalarE and a DMA stores the tile.
//
// Operand layout: an operand whose free dimension is contiguous in HBM loads directly; one
// whose contraction dimension is contiguous (row-major A, or B given as a transposed view)
// loads naturally and is transposed on TensorE (identity matmul) through PSUM. Weights feeding
// only matmuls are stored transposed by the driver, so they always load directly.
//
// Loop nest per batch: m-blocks of A^T tiles that fit SBUF are prepared once; for each n-tile
// the B tiles (all of K) are loaded into one of two slots (double buffering: the next n-tile's
// loads overlap this one's matmuls), then each m-tile of the block runs its K accumulation and
// epilogue.
#include <functional>

#include "codegen/lowering.h"

namespace neuronc::codegen {
namespace {

// K ring (see lower_matmul): at least this many K chunks per slot, this many slots, for at most
// this many n-tiles (PSUM banks accumulating at once).
constexpr int64_t kRingGroupChunks = 4;
constexpr int kRingSlots = 4;
constexpr int64_t kRingMaxTiles = 2;
// K interleaving groups enough rows per partition that a weight DMA's per-descriptor cost is
// at most this fraction of its data time (TRAINIUM.md §5.3: `dma_descriptor_ns` per
// descriptor); measured on BERT (trn1): 8 KiB runs beat 2-4 KiB runs and 16 KiB ones, whose
// coarser transfers delay the first matmuls.
constexpr double kMaxDescriptorOverhead = 0.05;

using device::DType;
using device::Engine;
using device::MemRef;

struct Problem {
  std::vector<int64_t> batch;
  int64_t M = 1, K = 1, N = 1;
  HbmView a, b, c;              // [batch..., M, K], [batch..., K, N], [batch..., M, N]
  std::optional<HbmView> bias;  // broadcast to [batch..., M, N]
  double alpha = 1, beta = 1;
};

std::vector<int64_t> concat(std::vector<int64_t> a, std::initializer_list<int64_t> b) {
  a.insert(a.end(), b);
  return a;
}

Problem make_problem(const ir::Node& n, const PartitionContext& ctx, const HbmView& out) {
  const std::string& op = n.op();
  Problem p;
  if (op == "aten.linear.default") {
    HbmView x = ctx.operand_view(n.input(0));
    const HbmView& w = ctx.operand_view(n.input(1));  // [N, K]
    p.K = x.shape.back();
    p.N = w.shape[0];
    std::vector<int64_t> lead(x.shape.begin(), x.shape.end() - 1);
    int64_t m = 1;
    for (int64_t d : lead) m *= d;
    if (auto flat = x.reshape({m, p.K})) {
      p.a = *flat;
      p.M = m;
    } else {
      p.batch.assign(lead.begin(), lead.end() - 1);
      p.M = lead.back();
      p.a = x;
    }
    p.b = w.permute({1, 0}).expand(concat(p.batch, {p.K, p.N}));
    p.c = *out.reshape(concat(p.batch, {p.M, p.N}));
    if (n.inputs().size() > 2 && n.input(2))
      p.bias = ctx.view(n.input(2)).expand(concat(p.batch, {p.M, p.N}));
    return p;
  }
  if (op == "aten.addmm.default" || op == "aten.baddbmm.default") {
    const bool batched = op == "aten.baddbmm.default";
    p.a = ctx.operand_view(n.input(1));
    p.b = ctx.operand_view(n.input(2));
    if (batched) p.batch = {p.a.shape[0]};
    p.M = p.a.shape[p.a.rank() - 2];
    p.K = p.a.shape.back();
    p.N = p.b.shape.back();
    p.c = out;
    p.bias = ctx.view(n.input(0)).expand(concat(p.batch, {p.M, p.N}));
    p.alpha = scalar_attr(n, "alpha", 1);
    p.beta = scalar_attr(n, "beta", 1);
    if (p.beta == 0) p.bias.reset();
    return p;
  }
  // mm, bmm, matmul: torch.matmul semantics.
  HbmView a = ctx.operand_view(n.input(0));
  HbmView b = ctx.operand_view(n.input(1));
  if (a.rank() == 1) a = *a.reshape({1, a.shape[0]});
  if (b.rank() == 1) b = *b.reshape({b.shape[0], 1});
  p.M = a.shape[a.rank() - 2];
  p.K = a.shape.back();
  p.N = b.shape.back();
  std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2);
  std::vector<int64_t> bb(b.shape.begin(), b.shape.end() - 2);
  const size_t r = std::max(ba.size(), bb.size());
  p.batch.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i + ba.size() >= r ? ba[i + ba.size() - r] : 1;
    const int64_t y = i + bb.size() >= r ? bb[i + bb.size() - r] : 1;
    p.batch[i] = std::max(x, y);
  }
  p.a = a.expand(concat(p.batch, {p.M, p.K}));
  p.b = b.expand(concat(p.batch, {p.K, p.N}));
  p.c = *out.reshape(concat(p.batch, {p.M, p.N}));
  return p;
}

// Operand dtype in SBUF: the IR operands' (a fused cast's source converts on load); fp32 when
// either is fp32 or not a float.
DType operand_dtype(const ir::Node& n) {
  const bool batched_bias = n.op() == "aten.addmm.default" || n.op() == "aten.baddbmm.default";
  const DType ta = device_dtype(n.input(batched_bias ? 1 : 0)->dtype());
  const DType tb = device_dtype(n.input(batched_bias ? 2 : 1)->dtype());
  const bool fp32 = ta == DType::f32 || tb == DType::f32 || !device::dtype_is_float(ta) ||
                    !device::dtype_is_float(tb);
  return fp32 ? DType::f32 : ta;
}

// The SBUF shares of a problem: n-tile width, m-tiles per A^T block, and whether B loads once
// (one n-block, one m-block, one batch: a third of a partition) instead of double-buffering
// blocks of a sixth. Shares of the partition are 32 and 48 KiB of trn1's 192 KiB for one
// n-tile of B and for the A^T tiles of an m-block.
struct Tiling {
  int64_t nt, m_block;
  bool loaded_once;
};
Tiling tiling(const Problem& p, const device::Target& t, uint32_t es) {
  const int64_t P = t.partitions;
  const int64_t maxN = std::min<int64_t>(t.matmul_max_moving, t.psum_bank_elems_f32());
  const int64_t nK = ceil_div(p.K, P), nM = ceil_div(p.M, P);
  const int64_t part = t.sbuf_partition_bytes;
  int64_t nt = std::min<int64_t>(maxN, p.N);
  while (nt > 32 && nK * nt * es > part / 6) nt = std::max<int64_t>(32, nt / 2);
  const int64_t a_tile_bytes = nK * std::min(P, p.M) * es;
  const int64_t m_block = std::max<int64_t>(1, std::min(nM, (part / 4) / a_tile_bytes));
  int64_t batch_count = 1;
  for (int64_t d : p.batch) batch_count *= d;
  // B loaded once stays for every m-block (weights stationary, A streams): the A^T tiles then
  // double-buffer in halves of their share when there are several m-blocks.
  const bool loaded_once = batch_count == 1 && nK * p.N * es <= part / 3;
  if (loaded_once && m_block < nM)
    return {nt, std::max<int64_t>(1, (part / 8) / a_tile_bytes), true};
  return {nt, m_block, loaded_once};
}

void lower_matmul(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  // Fused epilogue nodes, in order: [unary activation or float cast] [add(residual)
  // [activation]]. `staged` is the value the unfused matmul kernel would store (the add sees
  // exactly its rounding); `result` the value the kernel writes.
  std::optional<device::ActivationFunction> act, post_act;
  const ir::Value* result = n.output();
  const ir::Value* staged = n.output();
  const ir::Value* residual = nullptr;
  const ir::Node* norm = nullptr;  // a layer norm over the rows of the result (last)
  bool narrow = false;             // the activation's result is stored in a narrower dtype
  for (const ir::Node* f : fused_nodes(kb)) {
    if (f->op() == "aten.layer_norm.default") {
      norm = f;
    } else if (f->op() == "aten.add.Tensor") {
      staged = result;
      residual = f->input(0) == result ? f->input(1) : f->input(0);
    } else if (residual) {
      post_act = epilogue_activation(*f);
    } else if (act && *act != device::ActivationFunction::identity &&
               f->op() == "aten._to_copy.default") {
      narrow = true;  // a cast after the activation: its result is stored in the cast's dtype
    } else {
      act = epilogue_activation(*f);
    }
    result = f->output();
  }
  Problem p = make_problem(n, ctx, ctx.view(result));
  // The residual in the problem's [batch..., M, N] layout (the driver checked it reshapes).
  std::optional<HbmView> res;
  if (residual) {
    res = ctx.view(residual).reshape(concat(p.batch, {p.M, p.N}));
    if (!res) fail(n, "internal: the fused residual's view has no [batch, M, N] layout");
  }
  const DType sdt = device_dtype(staged->dtype());
  // relu commutes with the rounding of the sum (it runs in place on the stored dtype); any
  // other activation reads the fp32 sum, as the unfused element-wise kernel does.
  const bool sum_in_f32 = post_act && *post_act != device::ActivationFunction::relu;
  const device::Target& t = kb.target();
  const int64_t P = t.partitions;
  const DType mdt = operand_dtype(n);
  const uint32_t es = device::dtype_size(mdt);
  const int64_t nK = ceil_div(p.K, P);
  const int64_t nM = ceil_div(p.M, P);
  const int rb = static_cast<int>(p.batch.size());
  const int64_t sa_m = p.a.strides[rb], sa_k = p.a.strides[rb + 1];
  const int64_t sb_k = p.b.strides[rb], sb_n = p.b.strides[rb + 1];
  const bool a_transpose = sa_m != 1 && sa_k == 1 && p.M > 1;
  const bool b_transpose = sb_n != 1 && sb_k == 1 && p.N > 1;

  // Tile sizes within the SBUF budget.
  const Tiling tl = tiling(p, t, es);
  const int64_t nt = tl.nt, m_block = tl.m_block;
  const int64_t a_tile_bytes = nK * std::min(P, p.M) * es;
  int64_t batch_count = 1;
  for (int64_t d : p.batch) batch_count *= d;
  // B loads in blocks of whole n-tiles: one DMA per K chunk covers a block, so a weight whose
  // rows lie back to back in HBM streams as one large transfer per DMA engine (TRAINIUM.md §5.3)
  // instead of one strided row per n-tile. A block loaded once (one n-block, one m-block, one
  // batch) gets one slot of a third of a partition; otherwise blocks double-buffer in slots of a
  // sixth. Transposed B operands keep one n-tile per block (they stage per tile).
  const int64_t part_bytes = t.sbuf_partition_bytes;
  const bool loaded_once = tl.loaded_once;
  const int b_slots = loaded_once ? 1 : 2;
  const int64_t b_budget = loaded_once ? part_bytes / 3 : part_bytes / 6;
  int64_t nb = nt;
  if (!b_transpose)
    nb = std::min(ceil_div(p.N, nt), std::max<int64_t>(1, b_budget / (nK * nt * es))) * nt;
  nb = std::min(nb, p.N);
  // K interleaving: when B's block is whole rows back to back in HBM, groups of T K-chunks load
  // as one DMA in which partition p receives the T consecutive rows p*T .. p*T + T-1 of the
  // group, so each DMA engine's 8 partitions are one contiguous run of 8*T rows (full rate from
  // `dma_full_rate_transfer_bytes`, TRAINIUM.md §5.3) instead of 8 rows, and each partition's
  // T rows one descriptor (kMaxDescriptorOverhead). K-chunk j of a group
  // then holds rows {p*T + j}; A^T uses the same rows (a strided transpose source or partition
  // stride), so the contraction is the same sum in another order.
  int64_t T = 1;
  {
    const uint64_t row_bytes = static_cast<uint64_t>(nb) * device::dtype_size(p.b.dtype);
    const uint64_t engine_rows = static_cast<uint64_t>(t.dma_partitions_per_engine);
    const bool whole_rows = !b_transpose && sb_n == 1 && nb == p.N && sb_k == p.N;
    // A partition's run is one descriptor: at least 1 / kMaxDescriptorOverhead descriptor
    // times of data at the DMABW rate, so the per-descriptor cost stays a few percent.
    const double want = t.dma_descriptor_ns * t.dma_engine_bytes_per_ns / kMaxDescriptorOverhead;
    // The smallest T that meets both; else the smallest that reaches the full rate.
    const auto full_rate = [&](int64_t c) {
      return engine_rows * row_bytes * c >= t.dma_full_rate_transfer_bytes;
    };
    const auto enough = [&](int64_t c) {
      return full_rate(c) && static_cast<double>(row_bytes * c) >= want;
    };
    for (const auto& ok :
         {std::function<bool(int64_t)>(enough), std::function<bool(int64_t)>(full_rate)}) {
      if (!whole_rows || ok(1) || T > 1) break;
      for (int64_t c = 2; c <= 8 && T == 1; ++c)
        if (p.K % (P * c) == 0 && ok(c)) T = c;
    }
  }
  // K ring: a B loaded once whose K is long and whose n-tiles fit a few PSUM banks (BERT-large's
  // FFN down projection, K = 4096, N = 1024) streams through a ring of slots of G K-chunks, the
  // matmuls of every n-tile accumulating group by group, so the kernel holds 3 groups of B
  // instead of all of it (24 instead of 64 KiB per partition), leaving SBUF for the next
  // kernel's weights to stream in beside it, and its matmuls start on the first group.
  const int64_t n_tiles = ceil_div(p.N, nt);
  int64_t G = T;
  while (G < kRingGroupChunks) G += T;
  const bool kring = loaded_once && !b_transpose && nM == 1 && n_tiles <= kRingMaxTiles &&
                     p.K % P == 0 && nK % G == 0 && nK / G > kRingSlots &&
                     nK * p.N * es > part_bytes / 4;
  const int b_ring_slots = kring ? kRingSlots : b_slots;
  const int64_t b_slot_chunks = kring ? G : nK;

  // First K row of chunk kc and the row step between its partitions.
  auto chunk_rows = [&](int64_t kc) -> std::pair<int64_t, int64_t> {
    if (T == 1) return {kc * P, 1};
    return {(kc / T) * T * P + kc % T, T};
  };

  // SBUF layout.
  // A^T slots: one m-block's, twice when B stays across several m-blocks (the next block's
  // A^T loads while this one multiplies).
  const bool at_double = loaded_once && m_block < nM;
  std::vector<uint32_t> at_slots(static_cast<size_t>(m_block * (at_double ? 2 : 1)));
  for (auto& o : at_slots) o = kb.alloc(a_tile_bytes, "matmul A^T");
  // A's staging rows are double-buffered when there are several A tiles and the rows are
  // small (up to a sixteenth of a partition): the next tile's rows load while this one's
  // transposes run; with one slot each load waits for the previous tile's transposes.
  uint32_t a_stage[2] = {0, 0}, b_stage = 0;
  int a_stage_next = 0;
  if (a_transpose) {
    const int64_t bytes = p.K * device::dtype_size(p.a.dtype);
    a_stage[0] = kb.alloc(bytes, "matmul A staging");
    const bool two = nM * batch_count > 1 && 2 * bytes <= part_bytes / 16;
    a_stage[1] = two ? kb.alloc(bytes, "matmul A staging") : a_stage[0];
  }
  if (b_transpose) b_stage = kb.alloc(p.K * device::dtype_size(p.b.dtype), "matmul B staging");
  // A bias that is one row broadcast over M (linear, addmm with a vector bias) and has the
  // operand dtype joins the PSUM accumulation as a last K = 1 matmul against a ones column:
  // acc + 1 * b rounds exactly like the epilogue's fp32 add, and the row loads once per block
  // instead of once per output tile broadcast to every partition.
  const bool bias_in_psum = p.bias && p.alpha == 1 && p.beta == 1 && p.bias->strides[rb] == 0 &&
                            (p.bias->strides[rb + 1] != 0 || p.N == 1) &&
                            (p.bias->dtype == mdt || mdt == DType::f32);
  // A narrowed activation result must come from one ScalarE pass over PSUM (a bias added on
  // VectorE would round to the narrow dtype before the activation); the driver only fuses a
  // narrowing store into a linear whose bias has the operands' dtype.
  if (narrow && p.bias && !bias_in_psum)
    fail(n, "internal: a narrowing store needs the bias accumulated in PSUM");
  // Output tiles of one m-tile gather into a block row [mt, nb] stored by one DMA, so a result
  // whose rows lie back to back streams (TRAINIUM.md §5.3).
  const uint32_t cs = device::dtype_size(p.c.dtype);
  uint32_t bt_off[2] = {0, 0}, out_off[2], bias_off[2] = {0, 0}, tmp_off[2], brow_off[2] = {0, 0};
  uint32_t ones_off = 0;
  uint32_t ring_off[kRingSlots] = {};
  uint32_t* const b_off = kring ? ring_off : bt_off;
  for (int s = 0; s < b_ring_slots; ++s) b_off[s] = kb.alloc(b_slot_chunks * nb * es, "matmul B");
  if (bias_in_psum) {
    ones_off = kb.alloc(P * es, "matmul bias ones");
    for (int s = 0; s < b_slots; ++s) brow_off[s] = kb.alloc(nb * es, "matmul bias row");
  }
  for (int s = 0; s < 2; ++s) {
    out_off[s] = kb.alloc(nb * cs, "matmul output");
    if (p.bias && !bias_in_psum) bias_off[s] = kb.alloc(nt * 4, "matmul bias");
    tmp_off[s] = (p.alpha != 1 || p.beta != 1) ? kb.alloc(nt * 4, "matmul epilogue") : 0;
  }
  uint32_t res_off[2] = {0, 0}, staged_off[2] = {0, 0}, sum_off[2] = {0, 0};
  if (res) {
    for (int s = 0; s < 2; ++s) {
      res_off[s] = kb.alloc(nt * device::dtype_size(res->dtype), "matmul residual");
      staged_off[s] = kb.alloc(nt * device::dtype_size(sdt), "matmul staged");
      if (sum_in_f32) sum_off[s] = kb.alloc(nt * 4, "matmul residual sum");
    }
  }

  // Layer-norm epilogue (checked by matmul_layer_norm_fits: M <= 128, or B loaded once so each
  // m-tile's n-tiles are computed one after another): an m-tile's whole rows [mt, N] gather in
  // `row_off` across the n-tiles, then the row norm runs on them and one DMA stores the
  // normalised rows (two slots, so one m-tile's norm overlaps the next one's matmuls); gamma
  // and beta load once, first, as one row each broadcast over the partitions on TensorE
  // (load_broadcast_row).
  uint32_t row_off[2] = {0, 0}, norm_work[2] = {0, 0}, norm_out[2] = {0, 0};
  uint32_t norm_cols[2][3] = {};
  std::optional<MemRef> gamma_tile, beta_tile;
  const int norm_slots = nM > 1 ? 2 : 1;
  if (norm) {
    const int64_t mt = std::min(P, p.M);
    for (int s = 0; s < norm_slots; ++s) {
      row_off[s] = kb.alloc(p.N * cs, "matmul rows for the layer norm");
      norm_work[s] = kb.alloc(p.N * 4, "layer norm work");
      norm_out[s] = kb.alloc(p.N * cs, "layer norm output");
      for (uint32_t& c : norm_cols[s]) c = kb.alloc(4, "layer norm column");
    }
    auto load_param = [&](const ir::Value* v) {
      const HbmView& pv = ctx.view(v);
      return load_broadcast_row(kb, pv,
                                {{static_cast<int32_t>(pv.strides[0]), static_cast<uint32_t>(p.N)}},
                                mt, "layer norm weight");
    };
    if (norm->inputs().size() > 1 && norm->input(1)) gamma_tile = load_param(norm->input(1));
    if (norm->inputs().size() > 2 && norm->input(2)) beta_tile = load_param(norm->input(2));
  }

  int copy_engine = 0;
  auto evacuate = [&](const MemRef& dst, const MemRef& src) {
    device::TensorCopy c;
    c.dst = dst;
    c.src = src;
    kb.emit((copy_engine++ % 2) ? Engine::scalar : Engine::vector, c);
  };
  // Transposes src [rows, cols<=128] (SBUF) into dst [cols, rows] (SBUF) through PSUM.
  auto transpose = [&](const MemRef& dst, const MemRef& src) {
    const uint32_t bank = kb.psum_bank();
    MemRef ps = KernelBuilder::ps(bank, src.free_size(), src.partition_count);
    device::Transpose tr;
    tr.dst = ps;
    tr.src = src;
    kb.emit(Engine::tensor, tr);
    evacuate(dst, ps);
  };

  if (bias_in_psum) {
    device::Memset ones;
    ones.dst = KernelBuilder::sb(ones_off, 1, mdt, P);
    ones.value = 1.0;
    kb.emit(Engine::vector, ones);
  }
  // Loads `rows` rows of a row-major operand (rows `s_row` apart, K contiguous at `s_k`) into
  // `stage` and transposes each K chunk through PSUM into dst(kc, kt) (contraction on the
  // partitions).
  auto stage_transposed = [&](const HbmView& v, int64_t base, int64_t rows, int64_t s_row,
                              int64_t s_k, uint32_t stage_off, auto&& dst) {
    MemRef stage = KernelBuilder::sb(stage_off, rows, v.dtype, p.K);
    kb.dma(stage,
           KernelBuilder::hbm(v, base, rows, s_row,
                              {{static_cast<int32_t>(s_k), static_cast<uint32_t>(p.K)}}),
           DmaRole::load);
    for (int64_t kc = 0; kc < nK; ++kc) {
      const auto [k0, step] = chunk_rows(kc);
      const int64_t kt = std::min(P, p.K - kc * P);
      MemRef src = stage;
      src.offset += k0 * device::dtype_size(v.dtype);
      src.levels[0].count = static_cast<uint32_t>(kt);
      src.levels[0].stride = static_cast<int32_t>(step);
      transpose(dst(kc, kt), src);
    }
  };
  // B block [kt, nbc] for every K chunk (and the bias row) into slot `slot`.
  auto load_b = [&](int64_t nb0, int64_t nbc, int slot, int64_t b_base, int64_t bias_base) {
    const uint32_t bslot = bt_off[slot];
    // B block [kt, nbc] for every K chunk.
    if (b_transpose) {
      for (int64_t s0 = 0; s0 < nbc; s0 += P) {
        const int64_t st = std::min(P, nbc - s0);
        stage_transposed(p.b, b_base + (nb0 + s0) * sb_n, st, sb_n, sb_k, b_stage,
                         [&](int64_t kc, int64_t kt) {
                           return KernelBuilder::sb(bslot + (kc * nbc + s0) * es, kt, mdt, st);
                         });
      }
    } else if (T > 1) {
      for (int64_t kc = 0; kc < nK; kc += T)
        kb.dma(KernelBuilder::sb(bslot + kc * nbc * es, P, mdt, T * nbc),
               KernelBuilder::hbm(p.b, b_base + kc * P * sb_k + nb0 * sb_n, P, T * sb_k,
                                  {{static_cast<int32_t>(sb_k), static_cast<uint32_t>(T)},
                                   {static_cast<int32_t>(sb_n), static_cast<uint32_t>(nbc)}}),
               DmaRole::load);
    } else {
      for (int64_t kc = 0; kc < nK; ++kc) {
        const int64_t k0 = kc * P, kt = std::min(P, p.K - k0);
        kb.dma(KernelBuilder::sb(bslot + kc * nbc * es, kt, mdt, nbc),
               KernelBuilder::hbm(p.b, b_base + k0 * sb_k + nb0 * sb_n, kt, sb_k,
                                  {{static_cast<int32_t>(sb_n), static_cast<uint32_t>(nbc)}}),
               DmaRole::load);
      }
    }
    MemRef brow;
    if (bias_in_psum) {
      const int64_t sbn = p.bias->strides[rb + 1];
      brow = KernelBuilder::sb(brow_off[slot], 1, mdt, nbc);
      kb.dma(brow,
             KernelBuilder::hbm(*p.bias, bias_base + nb0 * sbn, 1, 0,
                                {{static_cast<int32_t>(sbn), static_cast<uint32_t>(nbc)}}),
             DmaRole::load);
    }
    return brow;
  };
  // K-ring group g: chunks [g*G, g*G + G) of the whole rows, T chunks per DMA.
  auto load_group = [&](int64_t g, int64_t b_base) {
    const uint32_t slot = ring_off[g % kRingSlots];
    for (int64_t kc = g * G; kc < (g + 1) * G; kc += T)
      kb.dma(KernelBuilder::sb(slot + (kc - g * G) * p.N * es, P, mdt, T * p.N),
             KernelBuilder::hbm(p.b, b_base + kc * P * sb_k, P, T * sb_k,
                                {{static_cast<int32_t>(sb_k), static_cast<uint32_t>(T)},
                                 {static_cast<int32_t>(sb_n), static_cast<uint32_t>(p.N)}}),
             DmaRole::load);
  };
  // A block loaded once (weights) is requested before the activations: its DMAs wait for
  // nothing the previous kernel writes, so they stream while that kernel still computes.
  const bool b_first = loaded_once && !b_transpose;
  std::vector<int64_t> bidx(p.batch.size(), 0);
  int block_iter = 0, out_iter = 0, tile_iter = 0;
  for (int64_t bi = 0; bi < batch_count; ++bi) {
    int64_t a_base = 0, b_base = 0, c_base = 0, bias_base = 0, res_base = 0;
    for (int d = 0; d < rb; ++d) {
      a_base += bidx[d] * p.a.strides[d];
      b_base += bidx[d] * p.b.strides[d];
      c_base += bidx[d] * p.c.strides[d];
      if (res) res_base += bidx[d] * res->strides[d];
      if (p.bias) bias_base += bidx[d] * p.bias->strides[d];
    }
    MemRef first_brow;
    for (int64_t mb0 = 0; mb0 < nM; mb0 += m_block) {
      const int64_t mb_count = std::min(m_block, nM - mb0);
      const uint32_t* at_off = at_slots.data() + (at_double ? ((mb0 / m_block) % 2) * m_block : 0);
      if (mb0 > 0) {
        // B (loaded once) is still in its slot.
      } else if (kring) {
        for (int64_t g = 0; g < kRingSlots; ++g) load_group(g, b_base);
        if (bias_in_psum) {
          const int64_t sbn = p.bias->strides[rb + 1];
          first_brow = KernelBuilder::sb(brow_off[0], 1, mdt, p.N);
          kb.dma(first_brow,
                 KernelBuilder::hbm(*p.bias, bias_base, 1, 0,
                                    {{static_cast<int32_t>(sbn), static_cast<uint32_t>(p.N)}}),
                 DmaRole::load);
        }
      } else if (b_first) {
        first_brow = load_b(0, p.N, 0, b_base, bias_base);
      }
      // A^T tiles of the block.
      for (int64_t mi = 0; mi < mb_count; ++mi) {
        const int64_t m0 = (mb0 + mi) * P, mt = std::min(P, p.M - m0);
        if (a_transpose) {
          stage_transposed(p.a, a_base + m0 * sa_m, mt, sa_m, sa_k, a_stage[a_stage_next++ % 2],
                           [&](int64_t kc, int64_t kt) {
                             return KernelBuilder::sb(at_off[mi] + kc * mt * es, kt, mdt, mt);
                           });
        } else {
          for (int64_t kc = 0; kc < nK; ++kc) {
            const auto [k0, step] = chunk_rows(kc);
            const int64_t kt = std::min(P, p.K - kc * P);
            kb.dma(KernelBuilder::sb(at_off[mi] + kc * mt * es, kt, mdt, mt),
                   KernelBuilder::hbm(p.a, a_base + m0 * sa_m + k0 * sa_k, kt, step * sa_k,
                                      {{static_cast<int32_t>(sa_m), static_cast<uint32_t>(mt)}}),
                   DmaRole::load);
          }
        }
      }
      for (int64_t nb0 = 0; nb0 < p.N; nb0 += nb, ++block_iter) {
        const int64_t nbc = std::min(nb, p.N - nb0);
        const uint32_t bslot = bt_off[block_iter % b_slots];
        const MemRef brow =
            b_first ? first_brow : load_b(nb0, nbc, block_iter % b_slots, b_base, bias_base);
        // K ring (one m-tile): residual tiles first, then every n-tile accumulates group by
        // group while later groups stream into the slots the earlier ones leave.
        std::vector<MemRef> ring_acc, ring_res;
        if (kring) {
          const int64_t mt = std::min(P, p.M);
          for (int64_t j = 0; j < n_tiles; ++j) {
            const int64_t n0 = j * nt, ntc = std::min(nt, p.N - n0);
            if (res) {
              const int64_t srm = res->strides[rb], srn = res->strides[rb + 1];
              ring_res.push_back(
                  KernelBuilder::sb(res_off[(tile_iter + j) % 2], mt, res->dtype, ntc));
              kb.dma(ring_res.back(),
                     KernelBuilder::hbm(*res, res_base + n0 * srn, mt, srm,
                                        {{static_cast<int32_t>(srn), static_cast<uint32_t>(ntc)}}),
                     DmaRole::load);
            }
            ring_acc.push_back(KernelBuilder::ps(kb.psum_bank(), mt, ntc));
          }
          for (int64_t g = 0; g < nK / G; ++g) {
            if (g >= kRingSlots) load_group(g, b_base);
            const uint32_t slot = ring_off[g % kRingSlots];
            for (int64_t j = 0; j < n_tiles; ++j) {
              const int64_t n0 = j * nt, ntc = std::min(nt, p.N - n0);
              for (int64_t kc = g * G; kc < (g + 1) * G; ++kc) {
                device::MatMul mm;
                mm.dst = ring_acc[static_cast<size_t>(j)];
                mm.stationary = KernelBuilder::sb(at_off[0] + kc * mt * es, P, mdt, mt);
                mm.moving = KernelBuilder::sb(slot + ((kc - g * G) * p.N + n0) * es, P, mdt, ntc);
                mm.accumulate = kc > 0;
                kb.emit(Engine::tensor, mm);
              }
            }
          }
        }
        for (int64_t mi = 0; mi < mb_count; ++mi, ++out_iter) {
          const int64_t m0 = (mb0 + mi) * P, mt = std::min(P, p.M - m0);
          const uint32_t oblock = out_off[out_iter % 2];
          for (int64_t n0 = nb0; n0 < nb0 + nbc; n0 += nt, ++tile_iter) {
            const int64_t ntc = std::min(nt, nb0 + nbc - n0);
            const uint32_t bcol = bslot + (n0 - nb0) * es;  // this n-tile inside the block
            const int os = tile_iter % 2;
            // The residual tile loads before the tile's matmuls (its DMA overlaps TensorE).
            MemRef res_tile;
            const size_t ring_j = static_cast<size_t>((n0 - nb0) / nt);
            if (kring) {
              if (res) res_tile = ring_res[ring_j];
            } else if (res) {
              const int64_t srm = res->strides[rb], srn = res->strides[rb + 1];
              res_tile = KernelBuilder::sb(res_off[os], mt, res->dtype, ntc);
              kb.dma(res_tile,
                     KernelBuilder::hbm(*res, res_base + m0 * srm + n0 * srn, mt, srm,
                                        {{static_cast<int32_t>(srn), static_cast<uint32_t>(ntc)}}),
                     DmaRole::load);
            }
            const MemRef acc =
                kring ? ring_acc[ring_j] : KernelBuilder::ps(kb.psum_bank(), mt, ntc);
            for (int64_t kc = 0; kc < (kring ? 0 : nK); ++kc) {
              const int64_t kt = std::min(P, p.K - kc * P);
              device::MatMul mm;
              mm.dst = acc;
              mm.stationary = KernelBuilder::sb(at_off[mi] + kc * mt * es, kt, mdt, mt);
              mm.moving = KernelBuilder::sb(bcol + kc * nbc * es, kt, mdt, ntc);
              mm.accumulate = kc > 0;
              kb.emit(Engine::tensor, mm);
            }
            if (bias_in_psum) {
              device::MatMul mb;
              mb.dst = acc;
              mb.stationary = KernelBuilder::sb(ones_off, 1, mdt, mt);
              mb.moving = KernelBuilder::sb(brow.offset + (n0 - nb0) * es, 1, mdt, ntc);
              mb.accumulate = true;
              kb.emit(Engine::tensor, mb);
            }
            kb.add_flops(2.0 * mt * ntc * p.K);
            // Epilogue.
            const MemRef out_tile =
                norm ? KernelBuilder::sb(row_off[mi % norm_slots] + n0 * cs, mt, p.c.dtype, ntc)
                     : KernelBuilder::sb(oblock + (n0 - nb0) * cs, mt, p.c.dtype, ntc);
            // Without a residual the epilogue writes the output tile itself.
            const MemRef staged_tile =
                res ? KernelBuilder::sb(staged_off[os], mt, sdt, ntc) : out_tile;
            if (p.bias && !bias_in_psum) {
              const int64_t sbm = p.bias->strides[rb], sbn = p.bias->strides[rb + 1];
              const bool col = sbn == 0 && ntc > 1;
              MemRef bt = KernelBuilder::sb(bias_off[os], mt, p.bias->dtype, col ? 1 : ntc);
              std::vector<device::AccessLevel> lv;
              if (!col) lv.push_back({static_cast<int32_t>(sbn), static_cast<uint32_t>(ntc)});
              kb.dma(bt, KernelBuilder::hbm(*p.bias, bias_base + m0 * sbm + n0 * sbn, mt, sbm, lv),
                     DmaRole::load);
              MemRef sum_dst = (p.alpha != 1) ? KernelBuilder::sb(tmp_off[os], mt, DType::f32, ntc)
                                              : staged_tile;
              if (col) {
                device::TensorScalar ts;  // acc * (1) + beta/alpha*bias handled below
                ts.dst = sum_dst;
                ts.src = acc;
                ts.op0 = device::AluOp::add;
                ts.operand0 = bt;
                if (p.beta != 1) {
                  kb.tensor_scalar(bt, bt, device::AluOp::multiply,
                                   static_cast<float>(p.beta / p.alpha));
                }
                kb.emit(Engine::vector, ts);
              } else {
                if (p.beta != p.alpha) {
                  kb.tensor_scalar(bt, bt, device::AluOp::multiply,
                                   static_cast<float>(p.beta / p.alpha));
                }
                device::TensorTensor tt;
                tt.dst = sum_dst;
                tt.in0 = acc;
                tt.in1 = bt;
                tt.op = device::AluOp::add;
                kb.emit(Engine::vector, tt);
              }
              if (p.alpha != 1) {
                device::Activation act;
                act.dst = staged_tile;
                act.src = sum_dst;
                act.scale = static_cast<float>(p.alpha);
                kb.emit(Engine::scalar, act);
              }
            } else if (p.alpha != 1 ||
                       (act && (!p.bias || *act != device::ActivationFunction::identity))) {
              // Evacuate PSUM through ScalarE with the scale and activation in one instruction
              // (a bias accumulated in PSUM is already in `acc`).
              device::Activation a;
              a.dst = staged_tile;
              a.src = acc;
              a.scale = static_cast<float>(p.alpha);
              if (act) a.function = *act;
              kb.emit(Engine::scalar, a);
            } else {
              evacuate(staged_tile, acc);
            }
            if (act && p.bias && !bias_in_psum) {
              device::Activation a;
              a.dst = staged_tile;
              a.src = staged_tile;
              a.function = *act;
              kb.emit(Engine::scalar, a);
            }
            if (res) {
              // The add of the unfused graph: staged + residual in fp32, then the activation.
              kb.residual_add(
                  sum_in_f32 ? KernelBuilder::sb(sum_off[os], mt, DType::f32, ntc) : out_tile,
                  staged_tile, res_tile, out_tile, post_act);
            }
          }
          if (norm) {
            // The m-tile's rows are complete (B has one n-block): normalise and store them.
            const int ns = static_cast<int>(mi % norm_slots);
            std::array<MemRef, 3> cols;
            for (int i = 0; i < 3; ++i)
              cols[i] = KernelBuilder::sb(norm_cols[ns][i], mt, DType::f32, 1);
            const MemRef ot = KernelBuilder::sb(norm_out[ns], mt, p.c.dtype, p.N);
            // The broadcast weights cover the first m-tile's rows; a shorter last m-tile reads
            // its first partitions.
            auto rows_of = [&](std::optional<MemRef> w) {
              if (w) w->partition_count = static_cast<uint16_t>(mt);
              return w;
            };
            emit_row_norm(kb, true, KernelBuilder::sb(row_off[ns], mt, p.c.dtype, p.N),
                          KernelBuilder::sb(norm_work[ns], mt, DType::f32, p.N), ot, cols,
                          rows_of(gamma_tile), rows_of(beta_tile), scalar_attr(*norm, "eps", 1e-5));
            const int64_t sc_m = p.c.strides[rb], sc_n = p.c.strides[rb + 1];
            kb.dma(KernelBuilder::hbm(p.c, c_base + m0 * sc_m, mt, sc_m,
                                      {{static_cast<int32_t>(sc_n), static_cast<uint32_t>(p.N)}}),
                   ot, DmaRole::store);
            continue;
          }
          const int64_t sc_m = p.c.strides[rb], sc_n = p.c.strides[rb + 1];
          kb.dma(KernelBuilder::hbm(p.c, c_base + m0 * sc_m + nb0 * sc_n, mt, sc_m,
                                    {{static_cast<int32_t>(sc_n), static_cast<uint32_t>(nbc)}}),
                 KernelBuilder::sb(oblock, mt, p.c.dtype, nbc), DmaRole::store);
        }
      }
    }
    for (int d = rb - 1; d >= 0; --d) {
      if (++bidx[d] < p.batch[d]) break;
      bidx[d] = 0;
    }
  }
}

}  // namespace

bool matmul_residual_fits(const ir::Node& mm, const PartitionContext& ctx,
                          const HbmView& residual) {
  const Problem p =
      make_problem(mm, ctx, HbmView::contiguous(residual.dtype, 0, static_shape(mm.output())));
  return residual.reshape(concat(p.batch, {p.M, p.N})).has_value();
}

bool matmul_layer_norm_fits(const ir::Node& mm, const ir::Node& ln, const PartitionContext& ctx) {
  if (ln.op() != "aten.layer_norm.default" || ln.attr_ints("normalized_shape").size() != 1)
    return false;
  const ir::Value* x = ln.input(0);
  if (!x || x->dtype() != ln.output()->dtype() || !ir::is_floating(x->dtype())) return false;
  const Problem p =
      make_problem(mm, ctx, HbmView::contiguous(device_dtype(x->dtype()), 0, static_shape(x)));
  if (!p.batch.empty() || p.N != static_shape(x).back() || p.N > kLayerNormEpilogueMaxN)
    return false;
  // Several m-tiles: each m-tile's rows must be complete before the next one starts, which
  // holds when B loads once (one n-block).
  if (p.M > ctx.target.partitions &&
      !tiling(p, ctx.target, device::dtype_size(operand_dtype(mm))).loaded_once)
    return false;
  for (size_t i = 1; i < 3 && i < ln.inputs().size(); ++i)
    if (ln.input(i) && static_shape(ln.input(i)) != std::vector<int64_t>{p.N}) return false;
  return true;
}

const Lowering* matmul_lowering(const std::string& op) {
  static constexpr Lowering kMatmul{&lower_matmul, nullptr};
  if (op == "aten.linear.default" || op == "aten.addmm.default" || op == "aten.mm.default" ||
      op == "aten.bmm.default" || op == "aten.matmul.default" || op == "aten.baddbmm.default")
    return &kMatmul;
  return nullptr;
}

}  // namespace neuronc::codegen
