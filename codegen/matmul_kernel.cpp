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

// K ring (see MatmulLowering::plan_k_ring): at least this many K chunks per slot, this many slots,
// for at most this many n-tiles (PSUM banks accumulating at once).
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

// Columns of B per block (whole n-tiles): a block loaded once gets a third of a partition,
// double-buffered blocks a sixth each; a transposed B keeps one n-tile per block (it stages per
// tile).
int64_t b_block_columns(const Problem& p, const Tiling& tl, const device::Target& t, uint32_t es,
                        bool b_transpose) {
  const int64_t part = t.sbuf_partition_bytes;
  const int64_t nK = ceil_div(p.K, t.partitions);
  const int64_t b_budget = tl.loaded_once ? part / 3 : part / 6;
  int64_t nb = tl.nt;
  if (!b_transpose)
    nb = std::min(ceil_div(p.N, tl.nt), std::max<int64_t>(1, b_budget / (nK * tl.nt * es))) * tl.nt;
  return std::min(nb, p.N);
}

// The fused epilogue of a matmul kernel: nodes in order [unary activation or float cast]
// [add(residual) [activation]] [layer norm].
struct Epilogue {
  std::optional<device::ActivationFunction> act, post_act;
  // `staged` is the value the unfused matmul kernel would store (the add sees exactly its
  // rounding); `result` the value the kernel writes.
  const ir::Value* result = nullptr;
  const ir::Value* staged = nullptr;
  const ir::Value* residual = nullptr;
  const ir::Node* norm = nullptr;  // a layer norm over the rows of the result (last)
  bool narrow = false;             // the activation's result is stored in a narrower dtype
};

Epilogue analyse_epilogue(const KernelBuilder& kb, const ir::Node& n) {
  Epilogue e;
  e.result = n.output();
  e.staged = n.output();
  for (const ir::Node* f : fused_nodes(kb)) {
    if (f->op() == "aten.layer_norm.default") {
      e.norm = f;
    } else if (f->op() == "aten.add.Tensor") {
      e.staged = e.result;
      e.residual = f->input(0) == e.result ? f->input(1) : f->input(0);
    } else if (e.residual) {
      e.post_act = epilogue_activation(*f);
    } else if (e.act && *e.act != device::ActivationFunction::identity &&
               f->op() == "aten._to_copy.default") {
      e.narrow = true;  // a cast after the activation: its result is stored in the cast's dtype
    } else {
      e.act = epilogue_activation(*f);
    }
    e.result = f->output();
  }
  return e;
}

// Offsets of one batch index's slices in the operands, result, bias and residual.
struct BatchBases {
  int64_t a = 0, b = 0, c = 0, bias = 0, res = 0;
};

// One output tile: rows [m0, m0 + mt) of the batch's C, columns [n0, n0 + ntc), in
// double-buffer slot `os`.
struct OutputTile {
  int64_t m0 = 0, mt = 0, n0 = 0, ntc = 0;
  int os = 0;
};

// The accumulators (and residual tiles) of the n-tiles of a K ring, filled group by group.
struct RingTiles {
  std::vector<MemRef> acc, res;
};

// One n-block of B in SBUF: columns [nb0, nb0 + nbc) at `bslot`, its bias row (a bias in
// PSUM), and the K ring's accumulators when the ring computed the block.
struct BBlock {
  int64_t nb0 = 0, nbc = 0;
  uint32_t bslot = 0;
  MemRef brow;
  RingTiles ring;
};

// lower_matmul as one object: the constructor plans (problem, tiling, K interleaving, K ring);
// run() allocates SBUF and emits the loop nest. The members are the plan and the SBUF layout;
// the methods are the phases, called in the order their instructions must appear.
class MatmulLowering {
 public:
  MatmulLowering(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx)
      : kb_(kb), n_(n), ctx_(ctx), ep_(analyse_epilogue(kb, n)), t_(kb.target()) {
    plan_problem();
    plan_tiling();
    plan_k_interleave();
    plan_k_ring();
  }

  void run() {
    allocate_sbuf();
    allocate_layer_norm();
    if (bias_in_psum_) {
      device::Memset ones;
      ones.dst = KernelBuilder::sb(ones_off_, 1, mdt_, P_);
      ones.value = 1.0;
      kb_.emit(Engine::vector, ones);
    }
    std::vector<int64_t> bidx(p_.batch.size(), 0);
    for (int64_t bi = 0; bi < batch_count_; ++bi) {
      BatchBases base;
      for (int d = 0; d < rb_; ++d) {
        base.a += bidx[d] * p_.a.strides[d];
        base.b += bidx[d] * p_.b.strides[d];
        base.c += bidx[d] * p_.c.strides[d];
        if (res_) base.res += bidx[d] * res_->strides[d];
        if (p_.bias) base.bias += bidx[d] * p_.bias->strides[d];
      }
      lower_batch(base);
      for (int d = rb_ - 1; d >= 0; --d) {
        if (++bidx[d] < p_.batch[d]) break;
        bidx[d] = 0;
      }
    }
  }

 private:
  // The problem in the result's layout, the SBUF operand dtype and the operands' layouts.
  void plan_problem() {
    p_ = make_problem(n_, ctx_, ctx_.view(ep_.result));
    // The residual in the problem's [batch..., M, N] layout (the driver checked it reshapes).
    if (ep_.residual) {
      res_ = ctx_.view(ep_.residual).reshape(concat(p_.batch, {p_.M, p_.N}));
      if (!res_) fail(n_, "internal: the fused residual's view has no [batch, M, N] layout");
    }
    sdt_ = device_dtype(ep_.staged->dtype());
    // relu commutes with the rounding of the sum (it runs in place on the stored dtype); any
    // other activation reads the fp32 sum, as the unfused element-wise kernel does.
    sum_in_f32_ = ep_.post_act && *ep_.post_act != device::ActivationFunction::relu;
    P_ = t_.partitions;
    mdt_ = operand_dtype(n_);
    es_ = device::dtype_size(mdt_);
    nK_ = ceil_div(p_.K, P_);
    nM_ = ceil_div(p_.M, P_);
    rb_ = static_cast<int>(p_.batch.size());
    sa_m_ = p_.a.strides[rb_], sa_k_ = p_.a.strides[rb_ + 1];
    sb_k_ = p_.b.strides[rb_], sb_n_ = p_.b.strides[rb_ + 1];
    a_transpose_ = sa_m_ != 1 && sa_k_ == 1 && p_.M > 1;
    b_transpose_ = sb_n_ != 1 && sb_k_ == 1 && p_.N > 1;
    if (n_.op() == "aten.linear.default") cb_ = ctx_.column_block(n_.input(1));
  }

  // Tile sizes within the SBUF budget.
  void plan_tiling() {
    const Tiling tl = tiling(p_, t_, es_);
    nt_ = tl.nt, m_block_ = tl.m_block;
    a_tile_bytes_ = nK_ * std::min(P_, p_.M) * es_;
    for (int64_t d : p_.batch) batch_count_ *= d;
    // B loads in blocks of whole n-tiles: one DMA per K chunk covers a block, so a weight whose
    // rows lie back to back in HBM streams as one large transfer per DMA engine (TRAINIUM.md
    // §5.3) instead of one strided row per n-tile. A block loaded once (one n-block, one
    // m-block, one batch) gets one slot of a third of a partition; otherwise blocks
    // double-buffer in slots of a sixth. Transposed B operands keep one n-tile per block (they
    // stage per tile).
    part_bytes_ = t_.sbuf_partition_bytes;
    loaded_once_ = tl.loaded_once;
    b_slots_ = loaded_once_ ? 1 : 2;
    nb_ = b_block_columns(p_, tl, t_, es_, b_transpose_);
    // A weight stored in column blocks (linear_weight_column_block) loads block by block.
    if (cb_ > 0 && (cb_ != nb_ || loaded_once_ || b_transpose_))
      fail(n_, "internal: the weight's column blocks of " + std::to_string(cb_) +
                   " columns are not the kernel's n-blocks of " + std::to_string(nb_));
  }

  // K interleaving: when B's block is whole rows back to back in HBM, groups of T K-chunks load
  // as one DMA in which partition p receives the T consecutive rows p*T .. p*T + T-1 of the
  // group, so each DMA engine's 8 partitions are one contiguous run of 8*T rows (full rate from
  // `dma_full_rate_transfer_bytes`, TRAINIUM.md §5.3) instead of 8 rows, and each partition's
  // T rows one descriptor (kMaxDescriptorOverhead). K-chunk j of a group
  // then holds rows {p*T + j}; A^T uses the same rows (a strided transpose source or partition
  // stride), so the contraction is the same sum in another order.
  void plan_k_interleave() {
    const uint64_t row_bytes = static_cast<uint64_t>(nb_) * device::dtype_size(p_.b.dtype);
    const uint64_t engine_rows = static_cast<uint64_t>(t_.dma_partitions_per_engine);
    // Rows back to back: a whole-row block of a row-major B, or any block of a column-blocked
    // weight (its rows are the block's width).
    const bool whole_rows =
        cb_ > 0 || (!b_transpose_ && sb_n_ == 1 && nb_ == p_.N && sb_k_ == p_.N);
    // A partition's run is one descriptor: at least 1 / kMaxDescriptorOverhead descriptor
    // times of data at the DMABW rate, so the per-descriptor cost stays a few percent.
    const double want = t_.dma_descriptor_ns * t_.dma_engine_bytes_per_ns / kMaxDescriptorOverhead;
    // The smallest T that meets both; else the smallest that reaches the full rate.
    const auto full_rate = [&](int64_t c) {
      return engine_rows * row_bytes * c >= t_.dma_full_rate_transfer_bytes;
    };
    const auto enough = [&](int64_t c) {
      return full_rate(c) && static_cast<double>(row_bytes * c) >= want;
    };
    for (const auto& ok :
         {std::function<bool(int64_t)>(enough), std::function<bool(int64_t)>(full_rate)}) {
      if (!whole_rows || ok(1) || T_ > 1) break;
      for (int64_t c = 2; c <= 8 && T_ == 1; ++c)
        if (p_.K % (P_ * c) == 0 && ok(c)) T_ = c;
    }
  }

  // K ring: a B loaded once whose K is long and whose n-tiles fit a few PSUM banks
  // (BERT-large's FFN down projection, K = 4096, N = 1024) streams through a ring of slots of G
  // K-chunks, the matmuls of every n-tile accumulating group by group, so the kernel holds 3
  // groups of B instead of all of it (24 instead of 64 KiB per partition), leaving SBUF for the
  // next kernel's weights to stream in beside it, and its matmuls start on the first group.
  void plan_k_ring() {
    n_tiles_ = ceil_div(p_.N, nt_);
    G_ = T_;
    while (G_ < kRingGroupChunks) G_ += T_;
    kring_ = loaded_once_ && !b_transpose_ && nM_ == 1 && n_tiles_ <= kRingMaxTiles &&
             p_.K % P_ == 0 && nK_ % G_ == 0 && nK_ / G_ > kRingSlots &&
             nK_ * p_.N * es_ > part_bytes_ / 4;
    // A block loaded once (weights) is requested before the activations: its DMAs wait for
    // nothing the previous kernel writes, so they stream while that kernel still computes.
    b_first_ = loaded_once_ && !b_transpose_;
  }

  // First K row of chunk kc and the row step between its partitions.
  std::pair<int64_t, int64_t> chunk_rows(int64_t kc) const {
    if (T_ == 1) return {kc * P_, 1};
    return {(kc / T_) * T_ * P_ + kc % T_, T_};
  }

  // SBUF layout.
  void allocate_sbuf() {
    // A^T slots: one m-block's, twice when B stays across several m-blocks (the next block's
    // A^T loads while this one multiplies).
    at_double_ = loaded_once_ && m_block_ < nM_;
    at_slots_.resize(static_cast<size_t>(m_block_ * (at_double_ ? 2 : 1)));
    for (auto& o : at_slots_) o = kb_.alloc(a_tile_bytes_, "matmul A^T");
    // A's staging rows are double-buffered when there are several A tiles and the rows are
    // small (up to a sixteenth of a partition): the next tile's rows load while this one's
    // transposes run; with one slot each load waits for the previous tile's transposes.
    if (a_transpose_) {
      const int64_t bytes = p_.K * device::dtype_size(p_.a.dtype);
      a_stage_[0] = kb_.alloc(bytes, "matmul A staging");
      const bool two = nM_ * batch_count_ > 1 && 2 * bytes <= part_bytes_ / 16;
      a_stage_[1] = two ? kb_.alloc(bytes, "matmul A staging") : a_stage_[0];
    }
    if (b_transpose_)
      b_stage_ = kb_.alloc(p_.K * device::dtype_size(p_.b.dtype), "matmul B staging");
    // A bias that is one row broadcast over M (linear, addmm with a vector bias) and has the
    // operand dtype joins the PSUM accumulation as a last K = 1 matmul against a ones column:
    // acc + 1 * b rounds exactly like the epilogue's fp32 add, and the row loads once per block
    // instead of once per output tile broadcast to every partition.
    bias_in_psum_ = p_.bias && p_.alpha == 1 && p_.beta == 1 && p_.bias->strides[rb_] == 0 &&
                    (p_.bias->strides[rb_ + 1] != 0 || p_.N == 1) &&
                    (p_.bias->dtype == mdt_ || mdt_ == DType::f32);
    // A narrowed activation result must come from one ScalarE pass over PSUM (a bias added on
    // VectorE would round to the narrow dtype before the activation); the driver only fuses a
    // narrowing store into a linear whose bias has the operands' dtype.
    if (ep_.narrow && p_.bias && !bias_in_psum_)
      fail(n_, "internal: a narrowing store needs the bias accumulated in PSUM");
    // Output tiles of one m-tile gather into a block row [mt, nb] stored by one DMA, so a
    // result whose rows lie back to back streams (TRAINIUM.md §5.3).
    cs_ = device::dtype_size(p_.c.dtype);
    uint32_t* const b_off = kring_ ? ring_off_ : bt_off_;
    const int b_ring_slots = kring_ ? kRingSlots : b_slots_;
    const int64_t b_slot_chunks = kring_ ? G_ : nK_;
    for (int s = 0; s < b_ring_slots; ++s)
      b_off[s] = kb_.alloc(b_slot_chunks * nb_ * es_, "matmul B");
    if (bias_in_psum_) {
      ones_off_ = kb_.alloc(P_ * es_, "matmul bias ones");
      for (int s = 0; s < b_slots_; ++s) brow_off_[s] = kb_.alloc(nb_ * es_, "matmul bias row");
    }
    for (int s = 0; s < 2; ++s) {
      out_off_[s] = kb_.alloc(nb_ * cs_, "matmul output");
      if (p_.bias && !bias_in_psum_) bias_off_[s] = kb_.alloc(nt_ * 4, "matmul bias");
      tmp_off_[s] = (p_.alpha != 1 || p_.beta != 1) ? kb_.alloc(nt_ * 4, "matmul epilogue") : 0;
    }
    if (res_) {
      for (int s = 0; s < 2; ++s) {
        res_off_[s] = kb_.alloc(nt_ * device::dtype_size(res_->dtype), "matmul residual");
        staged_off_[s] = kb_.alloc(nt_ * device::dtype_size(sdt_), "matmul staged");
        if (sum_in_f32_) sum_off_[s] = kb_.alloc(nt_ * 4, "matmul residual sum");
      }
    }
  }

  // Layer-norm epilogue (checked by matmul_layer_norm_fits: M <= 128, or B loaded once so each
  // m-tile's n-tiles are computed one after another): an m-tile's whole rows [mt, N] gather in
  // `row_off` across the n-tiles, then the row norm runs on them and one DMA stores the
  // normalised rows (two slots, so one m-tile's norm overlaps the next one's matmuls); gamma
  // and beta load once, first, as one row each broadcast over the partitions on TensorE
  // (load_broadcast_row).
  void allocate_layer_norm() {
    norm_slots_ = nM_ > 1 ? 2 : 1;
    if (!ep_.norm) return;
    const int64_t mt = std::min(P_, p_.M);
    for (int s = 0; s < norm_slots_; ++s) {
      row_off_[s] = kb_.alloc(p_.N * cs_, "matmul rows for the layer norm");
      norm_work_[s] = kb_.alloc(p_.N * 4, "layer norm work");
      norm_out_[s] = kb_.alloc(p_.N * cs_, "layer norm output");
      for (uint32_t& c : norm_cols_[s]) c = kb_.alloc(4, "layer norm column");
    }
    auto load_param = [&](const ir::Value* v) {
      const HbmView& pv = ctx_.view(v);
      return load_broadcast_row(
          kb_, pv, {{static_cast<int32_t>(pv.strides[0]), static_cast<uint32_t>(p_.N)}}, mt,
          "layer norm weight");
    };
    const ir::Node& norm = *ep_.norm;
    if (norm.inputs().size() > 1 && norm.input(1)) gamma_tile_ = load_param(norm.input(1));
    if (norm.inputs().size() > 2 && norm.input(2)) beta_tile_ = load_param(norm.input(2));
  }

  // PSUM to SBUF, alternating VectorE and ScalarE.
  void evacuate(const MemRef& dst, const MemRef& src) {
    device::TensorCopy c;
    c.dst = dst;
    c.src = src;
    kb_.emit((copy_engine_++ % 2) ? Engine::scalar : Engine::vector, c);
  }

  // Transposes src [rows, cols<=128] (SBUF) into dst [cols, rows] (SBUF) through PSUM.
  void transpose(const MemRef& dst, const MemRef& src) {
    const uint32_t bank = kb_.psum_bank();
    MemRef ps = KernelBuilder::ps(bank, src.free_size(), src.partition_count);
    device::Transpose tr;
    tr.dst = ps;
    tr.src = src;
    kb_.emit(Engine::tensor, tr);
    evacuate(dst, ps);
  }

  // Loads `rows` rows of a row-major operand (rows `s_row` apart, K contiguous at `s_k`) into
  // `stage` and transposes each K chunk through PSUM into dst(kc, kt) (contraction on the
  // partitions).
  template <typename DstFn>
  void stage_transposed(const HbmView& v, int64_t base, int64_t rows, int64_t s_row, int64_t s_k,
                        uint32_t stage_off, DstFn&& dst) {
    MemRef stage = KernelBuilder::sb(stage_off, rows, v.dtype, p_.K);
    kb_.dma(stage,
            KernelBuilder::hbm(v, base, rows, s_row,
                               {{static_cast<int32_t>(s_k), static_cast<uint32_t>(p_.K)}}),
            DmaRole::load);
    for (int64_t kc = 0; kc < nK_; ++kc) {
      const auto [k0, step] = chunk_rows(kc);
      const int64_t kt = std::min(P_, p_.K - kc * P_);
      MemRef src = stage;
      src.offset += k0 * device::dtype_size(v.dtype);
      src.levels[0].count = static_cast<uint32_t>(kt);
      src.levels[0].stride = static_cast<int32_t>(step);
      transpose(dst(kc, kt), src);
    }
  }

  // B block [kt, nbc] for every K chunk (and the bias row) into slot `slot`.
  MemRef load_b(int64_t nb0, int64_t nbc, int slot, const BatchBases& base) {
    const uint32_t bslot = bt_off_[slot];
    // B block [kt, nbc] for every K chunk.
    if (b_transpose_) {
      for (int64_t s0 = 0; s0 < nbc; s0 += P_) {
        const int64_t st = std::min(P_, nbc - s0);
        stage_transposed(p_.b, base.b + (nb0 + s0) * sb_n_, st, sb_n_, sb_k_, b_stage_,
                         [&](int64_t kc, int64_t kt) {
                           return KernelBuilder::sb(bslot + (kc * nbc + s0) * es_, kt, mdt_, st);
                         });
      }
    } else {
      // A column-blocked weight: block nb0 / cb_ starts after the full blocks before it (K rows
      // of cb_ each) and its rows are nbc wide.
      const int64_t origin = cb_ > 0 ? base.b + nb0 * p_.K : base.b + nb0 * sb_n_;
      const int64_t sk = cb_ > 0 ? nbc : sb_k_, sn = cb_ > 0 ? 1 : sb_n_;
      if (T_ > 1) {
        for (int64_t kc = 0; kc < nK_; kc += T_)
          kb_.dma(KernelBuilder::sb(bslot + kc * nbc * es_, P_, mdt_, T_ * nbc),
                  KernelBuilder::hbm(p_.b, origin + kc * P_ * sk, P_, T_ * sk,
                                     {{static_cast<int32_t>(sk), static_cast<uint32_t>(T_)},
                                      {static_cast<int32_t>(sn), static_cast<uint32_t>(nbc)}}),
                  DmaRole::load);
      } else {
        for (int64_t kc = 0; kc < nK_; ++kc) {
          const int64_t k0 = kc * P_, kt = std::min(P_, p_.K - k0);
          kb_.dma(KernelBuilder::sb(bslot + kc * nbc * es_, kt, mdt_, nbc),
                  KernelBuilder::hbm(p_.b, origin + k0 * sk, kt, sk,
                                     {{static_cast<int32_t>(sn), static_cast<uint32_t>(nbc)}}),
                  DmaRole::load);
        }
      }
    }
    MemRef brow;
    if (bias_in_psum_) {
      const int64_t sbn = p_.bias->strides[rb_ + 1];
      brow = KernelBuilder::sb(brow_off_[slot], 1, mdt_, nbc);
      kb_.dma(brow,
              KernelBuilder::hbm(*p_.bias, base.bias + nb0 * sbn, 1, 0,
                                 {{static_cast<int32_t>(sbn), static_cast<uint32_t>(nbc)}}),
              DmaRole::load);
    }
    return brow;
  }

  // K-ring group g: chunks [g*G, g*G + G) of the whole rows, T chunks per DMA.
  void load_group(int64_t g, int64_t b_base) {
    const uint32_t slot = ring_off_[g % kRingSlots];
    for (int64_t kc = g * G_; kc < (g + 1) * G_; kc += T_)
      kb_.dma(KernelBuilder::sb(slot + (kc - g * G_) * p_.N * es_, P_, mdt_, T_ * p_.N),
              KernelBuilder::hbm(p_.b, b_base + kc * P_ * sb_k_, P_, T_ * sb_k_,
                                 {{static_cast<int32_t>(sb_k_), static_cast<uint32_t>(T_)},
                                  {static_cast<int32_t>(sb_n_), static_cast<uint32_t>(p_.N)}}),
              DmaRole::load);
  }

  // B of the batch's first m-block when it loads once, before the activations: the K ring's
  // first groups (and the whole bias row), or the whole block. Returns the bias row.
  MemRef load_b_first(const BatchBases& base) {
    MemRef brow;
    if (kring_) {
      for (int64_t g = 0; g < kRingSlots; ++g) load_group(g, base.b);
      if (bias_in_psum_) {
        const int64_t sbn = p_.bias->strides[rb_ + 1];
        brow = KernelBuilder::sb(brow_off_[0], 1, mdt_, p_.N);
        kb_.dma(brow,
                KernelBuilder::hbm(*p_.bias, base.bias, 1, 0,
                                   {{static_cast<int32_t>(sbn), static_cast<uint32_t>(p_.N)}}),
                DmaRole::load);
      }
    } else if (b_first_) {
      brow = load_b(0, p_.N, 0, base);
    }
    return brow;
  }

  // The A^T tiles of m-block [mb0, mb0 + mb_count) into `at_off`.
  void load_a_block(const uint32_t* at_off, int64_t mb0, int64_t mb_count, int64_t a_base) {
    for (int64_t mi = 0; mi < mb_count; ++mi) {
      const int64_t m0 = (mb0 + mi) * P_, mt = std::min(P_, p_.M - m0);
      if (a_transpose_) {
        stage_transposed(p_.a, a_base + m0 * sa_m_, mt, sa_m_, sa_k_, a_stage_[a_stage_next_++ % 2],
                         [&](int64_t kc, int64_t kt) {
                           return KernelBuilder::sb(at_off[mi] + kc * mt * es_, kt, mdt_, mt);
                         });
      } else {
        for (int64_t kc = 0; kc < nK_; ++kc) {
          const auto [k0, step] = chunk_rows(kc);
          const int64_t kt = std::min(P_, p_.K - kc * P_);
          kb_.dma(KernelBuilder::sb(at_off[mi] + kc * mt * es_, kt, mdt_, mt),
                  KernelBuilder::hbm(p_.a, a_base + m0 * sa_m_ + k0 * sa_k_, kt, step * sa_k_,
                                     {{static_cast<int32_t>(sa_m_), static_cast<uint32_t>(mt)}}),
                  DmaRole::load);
        }
      }
    }
  }

  // One batch index: per m-block its A^T tiles, then per n-block of B its output tiles.
  void lower_batch(const BatchBases& base) {
    MemRef first_brow;
    for (int64_t mb0 = 0; mb0 < nM_; mb0 += m_block_) {
      const int64_t mb_count = std::min(m_block_, nM_ - mb0);
      const uint32_t* at_off =
          at_slots_.data() + (at_double_ ? ((mb0 / m_block_) % 2) * m_block_ : 0);
      // A later m-block finds B (loaded once) still in its slot.
      if (mb0 == 0) first_brow = load_b_first(base);
      load_a_block(at_off, mb0, mb_count, base.a);
      for (int64_t nb0 = 0; nb0 < p_.N; nb0 += nb_, ++block_iter_)
        lower_n_block(base, at_off, mb0, mb_count, nb0, first_brow);
    }
  }

  // K ring (one m-tile): residual tiles first, then every n-tile accumulates group by group
  // while later groups stream into the slots the earlier ones leave.
  RingTiles run_k_ring(const BatchBases& base, const uint32_t* at_off) {
    RingTiles ring;
    const int64_t mt = std::min(P_, p_.M);
    for (int64_t j = 0; j < n_tiles_; ++j) {
      const int64_t n0 = j * nt_, ntc = std::min(nt_, p_.N - n0);
      if (res_) {
        const int64_t srm = res_->strides[rb_], srn = res_->strides[rb_ + 1];
        ring.res.push_back(KernelBuilder::sb(res_off_[(tile_iter_ + j) % 2], mt, res_->dtype, ntc));
        kb_.dma(ring.res.back(),
                KernelBuilder::hbm(*res_, base.res + n0 * srn, mt, srm,
                                   {{static_cast<int32_t>(srn), static_cast<uint32_t>(ntc)}}),
                DmaRole::load);
      }
      ring.acc.push_back(KernelBuilder::ps(kb_.psum_bank(), mt, ntc));
    }
    for (int64_t g = 0; g < nK_ / G_; ++g) {
      if (g >= kRingSlots) load_group(g, base.b);
      const uint32_t slot = ring_off_[g % kRingSlots];
      for (int64_t j = 0; j < n_tiles_; ++j) {
        const int64_t n0 = j * nt_, ntc = std::min(nt_, p_.N - n0);
        for (int64_t kc = g * G_; kc < (g + 1) * G_; ++kc) {
          device::MatMul mm;
          mm.dst = ring.acc[static_cast<size_t>(j)];
          mm.stationary = KernelBuilder::sb(at_off[0] + kc * mt * es_, P_, mdt_, mt);
          mm.moving = KernelBuilder::sb(slot + ((kc - g * G_) * p_.N + n0) * es_, P_, mdt_, ntc);
          mm.accumulate = kc > 0;
          kb_.emit(Engine::tensor, mm);
        }
      }
    }
    return ring;
  }

  // The n-block [nb0, nb0 + nbc) of B against every m-tile of the block: the output tiles of
  // each m-tile, then its store (block row, or the normalised rows).
  void lower_n_block(const BatchBases& base, const uint32_t* at_off, int64_t mb0, int64_t mb_count,
                     int64_t nb0, const MemRef& first_brow) {
    BBlock blk;
    blk.nb0 = nb0;
    blk.nbc = std::min(nb_, p_.N - nb0);
    blk.bslot = bt_off_[block_iter_ % b_slots_];
    blk.brow = b_first_ ? first_brow : load_b(nb0, blk.nbc, block_iter_ % b_slots_, base);
    if (kring_) blk.ring = run_k_ring(base, at_off);
    for (int64_t mi = 0; mi < mb_count; ++mi, ++out_iter_) {
      const int64_t m0 = (mb0 + mi) * P_, mt = std::min(P_, p_.M - m0);
      const uint32_t oblock = out_off_[out_iter_ % 2];
      for (int64_t n0 = nb0; n0 < nb0 + blk.nbc; n0 += nt_, ++tile_iter_) {
        const OutputTile tile{m0, mt, n0, std::min(nt_, nb0 + blk.nbc - n0), tile_iter_ % 2};
        const MemRef out_tile =
            ep_.norm
                ? KernelBuilder::sb(row_off_[mi % norm_slots_] + n0 * cs_, mt, p_.c.dtype, tile.ntc)
                : KernelBuilder::sb(oblock + (n0 - nb0) * cs_, mt, p_.c.dtype, tile.ntc);
        emit_output_tile(base, blk, tile, at_off[mi], out_tile);
      }
      if (ep_.norm) {
        store_normalised_rows(static_cast<int>(mi % norm_slots_), m0, mt, base.c);
        continue;
      }
      const int64_t sc_m = p_.c.strides[rb_], sc_n = p_.c.strides[rb_ + 1];
      kb_.dma(KernelBuilder::hbm(p_.c, base.c + m0 * sc_m + nb0 * sc_n, mt, sc_m,
                                 {{static_cast<int32_t>(sc_n), static_cast<uint32_t>(blk.nbc)}}),
              KernelBuilder::sb(oblock, mt, p_.c.dtype, blk.nbc), DmaRole::store);
    }
  }

  // One output tile: its residual tile, its K accumulation (unless the K ring did it), the
  // bias row, then the epilogue into `out_tile`.
  void emit_output_tile(const BatchBases& base, const BBlock& blk, const OutputTile& tile,
                        uint32_t at_tile, const MemRef& out_tile) {
    const uint32_t bcol = blk.bslot + (tile.n0 - blk.nb0) * es_;  // this n-tile in the block
    const size_t ring_j = static_cast<size_t>((tile.n0 - blk.nb0) / nt_);
    const int64_t mt = tile.mt, ntc = tile.ntc;
    // The residual tile loads before the tile's matmuls (its DMA overlaps TensorE).
    MemRef res_tile;
    if (kring_) {
      if (res_) res_tile = blk.ring.res[ring_j];
    } else if (res_) {
      const int64_t srm = res_->strides[rb_], srn = res_->strides[rb_ + 1];
      res_tile = KernelBuilder::sb(res_off_[tile.os], mt, res_->dtype, ntc);
      kb_.dma(res_tile,
              KernelBuilder::hbm(*res_, base.res + tile.m0 * srm + tile.n0 * srn, mt, srm,
                                 {{static_cast<int32_t>(srn), static_cast<uint32_t>(ntc)}}),
              DmaRole::load);
    }
    const MemRef acc = kring_ ? blk.ring.acc[ring_j] : KernelBuilder::ps(kb_.psum_bank(), mt, ntc);
    for (int64_t kc = 0; kc < (kring_ ? 0 : nK_); ++kc) {
      const int64_t kt = std::min(P_, p_.K - kc * P_);
      device::MatMul mm;
      mm.dst = acc;
      mm.stationary = KernelBuilder::sb(at_tile + kc * mt * es_, kt, mdt_, mt);
      mm.moving = KernelBuilder::sb(bcol + kc * blk.nbc * es_, kt, mdt_, ntc);
      mm.accumulate = kc > 0;
      kb_.emit(Engine::tensor, mm);
    }
    if (bias_in_psum_) {
      device::MatMul mb;
      mb.dst = acc;
      mb.stationary = KernelBuilder::sb(ones_off_, 1, mdt_, mt);
      mb.moving = KernelBuilder::sb(blk.brow.offset + (tile.n0 - blk.nb0) * es_, 1, mdt_, ntc);
      mb.accumulate = true;
      kb_.emit(Engine::tensor, mb);
    }
    kb_.add_flops(2.0 * mt * ntc * p_.K);
    // Without a residual the epilogue writes the output tile itself.
    const MemRef staged_tile =
        res_ ? KernelBuilder::sb(staged_off_[tile.os], mt, sdt_, ntc) : out_tile;
    emit_epilogue(tile, acc, staged_tile, base.bias);
    if (res_) {
      // The add of the unfused graph: staged + residual in fp32, then the activation.
      kb_.residual_add(
          sum_in_f32_ ? KernelBuilder::sb(sum_off_[tile.os], mt, DType::f32, ntc) : out_tile,
          staged_tile, res_tile, out_tile, ep_.post_act);
    }
  }

  // PSUM `acc` to `staged_tile`: alpha * acc + beta * bias and the activation.
  void emit_epilogue(const OutputTile& tile, const MemRef& acc, const MemRef& staged_tile,
                     int64_t bias_base) {
    const int64_t mt = tile.mt, ntc = tile.ntc;
    const std::optional<device::ActivationFunction>& act = ep_.act;
    if (p_.bias && !bias_in_psum_) {
      const int64_t sbm = p_.bias->strides[rb_], sbn = p_.bias->strides[rb_ + 1];
      const bool col = sbn == 0 && ntc > 1;
      MemRef bt = KernelBuilder::sb(bias_off_[tile.os], mt, p_.bias->dtype, col ? 1 : ntc);
      std::vector<device::AccessLevel> lv;
      if (!col) lv.push_back({static_cast<int32_t>(sbn), static_cast<uint32_t>(ntc)});
      kb_.dma(bt,
              KernelBuilder::hbm(*p_.bias, bias_base + tile.m0 * sbm + tile.n0 * sbn, mt, sbm, lv),
              DmaRole::load);
      MemRef sum_dst =
          (p_.alpha != 1) ? KernelBuilder::sb(tmp_off_[tile.os], mt, DType::f32, ntc) : staged_tile;
      if (col) {
        device::TensorScalar ts;  // acc * (1) + beta/alpha*bias handled below
        ts.dst = sum_dst;
        ts.src = acc;
        ts.op0 = device::AluOp::add;
        ts.operand0 = bt;
        if (p_.beta != 1) {
          kb_.tensor_scalar(bt, bt, device::AluOp::multiply,
                            static_cast<float>(p_.beta / p_.alpha));
        }
        kb_.emit(Engine::vector, ts);
      } else {
        if (p_.beta != p_.alpha) {
          kb_.tensor_scalar(bt, bt, device::AluOp::multiply,
                            static_cast<float>(p_.beta / p_.alpha));
        }
        device::TensorTensor tt;
        tt.dst = sum_dst;
        tt.in0 = acc;
        tt.in1 = bt;
        tt.op = device::AluOp::add;
        kb_.emit(Engine::vector, tt);
      }
      if (p_.alpha != 1) {
        device::Activation a;
        a.dst = staged_tile;
        a.src = sum_dst;
        a.scale = static_cast<float>(p_.alpha);
        kb_.emit(Engine::scalar, a);
      }
    } else if (p_.alpha != 1 ||
               (act && (!p_.bias || *act != device::ActivationFunction::identity))) {
      // Evacuate PSUM through ScalarE with the scale and activation in one instruction
      // (a bias accumulated in PSUM is already in `acc`).
      device::Activation a;
      a.dst = staged_tile;
      a.src = acc;
      a.scale = static_cast<float>(p_.alpha);
      if (act) a.function = *act;
      kb_.emit(Engine::scalar, a);
    } else {
      evacuate(staged_tile, acc);
    }
    if (act && p_.bias && !bias_in_psum_) {
      device::Activation a;
      a.dst = staged_tile;
      a.src = staged_tile;
      a.function = *act;
      kb_.emit(Engine::scalar, a);
    }
  }

  // The m-tile's rows are complete (B has one n-block): normalise and store them.
  void store_normalised_rows(int ns, int64_t m0, int64_t mt, int64_t c_base) {
    std::array<MemRef, 3> cols;
    for (int i = 0; i < 3; ++i) cols[i] = KernelBuilder::sb(norm_cols_[ns][i], mt, DType::f32, 1);
    const MemRef ot = KernelBuilder::sb(norm_out_[ns], mt, p_.c.dtype, p_.N);
    // The broadcast weights cover the first m-tile's rows; a shorter last m-tile reads
    // its first partitions.
    auto rows_of = [&](std::optional<MemRef> w) {
      if (w) w->partition_count = static_cast<uint16_t>(mt);
      return w;
    };
    emit_row_norm(kb_, true, KernelBuilder::sb(row_off_[ns], mt, p_.c.dtype, p_.N),
                  KernelBuilder::sb(norm_work_[ns], mt, DType::f32, p_.N), ot, cols,
                  rows_of(gamma_tile_), rows_of(beta_tile_), scalar_attr(*ep_.norm, "eps", 1e-5));
    const int64_t sc_m = p_.c.strides[rb_], sc_n = p_.c.strides[rb_ + 1];
    kb_.dma(KernelBuilder::hbm(p_.c, c_base + m0 * sc_m, mt, sc_m,
                               {{static_cast<int32_t>(sc_n), static_cast<uint32_t>(p_.N)}}),
            ot, DmaRole::store);
  }

  KernelBuilder& kb_;
  const ir::Node& n_;
  const PartitionContext& ctx_;
  const Epilogue ep_;
  const device::Target& t_;

  // The problem and its layouts.
  Problem p_;
  std::optional<HbmView> res_;  // the fused residual as [batch..., M, N]
  DType sdt_ = DType::f32;      // dtype of the staged value
  bool sum_in_f32_ = false;     // the residual sum is kept in fp32 before the activation
  int64_t P_ = 0;
  DType mdt_ = DType::f32;  // operand dtype in SBUF
  uint32_t es_ = 0, cs_ = 0;
  int64_t nK_ = 0, nM_ = 0;
  int rb_ = 0;  // batch rank
  int64_t sa_m_ = 0, sa_k_ = 0, sb_k_ = 0, sb_n_ = 0;
  bool a_transpose_ = false, b_transpose_ = false;

  // Tiling.
  int64_t nt_ = 0, m_block_ = 0, a_tile_bytes_ = 0, batch_count_ = 1, part_bytes_ = 0;
  bool loaded_once_ = false;
  int b_slots_ = 1;
  int64_t nb_ = 0;        // n-block width
  int64_t cb_ = 0;        // B's column block (ConstantBinding::column_block), 0: strided B
  int64_t T_ = 1;         // K interleave: chunks per DMA group
  int64_t n_tiles_ = 0;   // n-tiles of the whole N
  int64_t G_ = 1;         // K-ring chunks per slot
  bool kring_ = false;    // B streams through the K ring
  bool b_first_ = false;  // B loads once, before the activations
  bool bias_in_psum_ = false;

  // SBUF layout.
  bool at_double_ = false;
  std::vector<uint32_t> at_slots_;
  uint32_t a_stage_[2] = {0, 0}, b_stage_ = 0;
  uint32_t bt_off_[2] = {0, 0}, out_off_[2] = {0, 0}, bias_off_[2] = {0, 0}, tmp_off_[2] = {0, 0},
           brow_off_[2] = {0, 0};
  uint32_t ones_off_ = 0;
  uint32_t ring_off_[kRingSlots] = {};
  uint32_t res_off_[2] = {0, 0}, staged_off_[2] = {0, 0}, sum_off_[2] = {0, 0};
  int norm_slots_ = 1;
  uint32_t row_off_[2] = {0, 0}, norm_work_[2] = {0, 0}, norm_out_[2] = {0, 0};
  uint32_t norm_cols_[2][3] = {};
  std::optional<MemRef> gamma_tile_, beta_tile_;

  // Rotation counters of the loop nest.
  int a_stage_next_ = 0, copy_engine_ = 0;
  int block_iter_ = 0, out_iter_ = 0, tile_iter_ = 0;
};

void lower_matmul(KernelBuilder& kb, const ir::Node& n, const PartitionContext& ctx) {
  MatmulLowering(kb, n, ctx).run();
}

}  // namespace

int64_t linear_weight_column_block(const ir::Node& n, const device::Target& t) {
  if (n.op() != "aten.linear.default" || n.inputs().size() < 2 || !n.input(0) || !n.input(1))
    return 0;
  // Contiguous runs pay only where the DMA model rates short rows below long runs (trn1's
  // fitted small-transfer rate; trn2 and trn3 have no small-row anchor and a flat curve).
  if (t.dma_small_transfer_bytes_per_ns >= t.dma_engine_bytes_per_ns) return 0;
  const ir::Value* x = n.input(0);
  const ir::Value* w = n.input(1);
  if (w->shape().size() != 2 || x->shape().empty()) return 0;
  for (const ir::Value* v : {x, w})
    for (const ir::Dim& d : v->shape())
      if (d.is_symbolic()) return 0;
  Problem p;
  p.N = w->shape()[0].value();
  p.K = w->shape()[1].value();
  p.M = 1;
  for (size_t i = 0; i + 1 < x->shape().size(); ++i) p.M *= x->shape()[i].value();
  if (p.N <= 0 || p.K <= 0 || p.M <= 0) return 0;
  const uint32_t es = device::dtype_size(operand_dtype(n));
  const Tiling tl = tiling(p, t, es);
  if (tl.loaded_once) return 0;
  const int64_t nb = b_block_columns(p, tl, t, es, /*b_transpose=*/false);
  return nb < p.N ? nb : 0;
}

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
