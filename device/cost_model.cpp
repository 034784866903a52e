// Per-instruction cost formulas (TRAINIUM.md §4.1, ISA226) and DMA / collective costs
// (§5.3, §8.4).
#include "device/cost_model.h"

#include <algorithm>
#include <cmath>

namespace neuronc::device {
namespace {

bool is16(DType t) {
  return t == DType::bf16 || t == DType::f16;
}

// Elements that are contiguous from the innermost level outward.
uint64_t contiguous_run(const MemRef& m) {
  uint64_t run = 1;
  for (int l = m.num_levels - 1; l >= 0; --l) {
    const AccessLevel& lv = m.levels[l];
    if (lv.count == 1) continue;
    if (static_cast<uint64_t>(lv.stride) != run) break;
    run *= lv.count;
  }
  return run;
}

bool innermost_contiguous(const MemRef& m) {
  for (int l = m.num_levels - 1; l >= 0; --l) {
    if (m.levels[l].count == 1) continue;
    return m.levels[l].stride == 1;
  }
  return true;
}

// ARCH2: an innermost stride above `limit` bytes (16) halves the interface bandwidth.
bool strided(const MemRef& m, int limit) {
  for (int l = m.num_levels - 1; l >= 0; --l) {
    if (m.levels[l].count == 1) continue;
    return static_cast<uint64_t>(std::abs(m.levels[l].stride)) * dtype_size(m.dtype) >
           static_cast<uint64_t>(limit);
  }
  return false;
}

bool any_strided(const Operands& o, int limit) {
  for (const auto& m : o.reads)
    if (m.memory != MemoryKind::hbm && m.free_size() > 1 && strided(m, limit)) return true;
  for (const auto& m : o.writes)
    if (m.memory != MemoryKind::hbm && m.free_size() > 1 && strided(m, limit)) return true;
  return false;
}

}  // namespace

int DmaWork::engines_used() const {
  int n = 0;
  for (uint32_t d : descriptors) n += d > 0;
  return n;
}

uint64_t instruction_free_size(const Operation& op) {
  return std::visit(
      [](const auto& x) -> uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, MatMul>) {
          return x.moving.free_size();
        } else if constexpr (std::is_same_v<T, Memset> || std::is_same_v<T, Iota>) {
          return x.dst.free_size();
        } else if constexpr (std::is_same_v<T, TensorTensor> ||
                             std::is_same_v<T, TensorTensorScan>) {
          return std::max(x.in0.free_size(), x.in1.free_size());
        } else if constexpr (std::is_same_v<T, Select>) {
          return x.on_true.free_size();
        } else if constexpr (std::is_same_v<T, Nop>) {
          return 0;
        } else {
          return x.src.free_size();
        }
      },
      op);
}

double CostModel::clock_ghz(Engine e) const {
  switch (e) {
    case Engine::tensor:
      return t_.tensor_clock_ghz;
    case Engine::vector:
      return t_.vector_clock_ghz;
    case Engine::scalar:
      return t_.scalar_clock_ghz;
    case Engine::gpsimd:
      return t_.gpsimd_clock_ghz;
    case Engine::sync:
      return t_.sync_clock_ghz;
  }
  return 1.0;
}

InstructionCost CostModel::cost(Engine e, const Operation& op) const {
  const double min_ii = t_.min_ii_cycles;
  const double n = static_cast<double>(instruction_free_size(op));
  const Operands o = operands(op);
  const double stride_factor =
      any_strided(o, t_.strided_access_bytes) ? 2.0 : 1.0;  // ARCH2 (§5.2), on the N-term
  const double ns = n * stride_factor;
  InstructionCost c;
  double latency_cycles = t_.engine_completion_latency_cycles;  // assumption (§5.2)

  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, MatMul>) {
          // ISA226: max(min(64, N_stat), N_mov); x4 for fp32 inputs (ARCH2).
          const double n_stat = static_cast<double>(x.stationary.free_size());
          const double n_mov = static_cast<double>(x.moving.free_size());
          double cyc = std::max(std::min<double>(t_.matmul_min_stationary_cycles, n_stat), n_mov);
          if (x.stationary.dtype == DType::f32 || x.moving.dtype == DType::f32)
            cyc *= t_.matmul_fp32_factor;
          c.ii_cycles = cyc;
          c.tensor_flops = 2.0 * x.moving.partition_count * n_stat * n_mov;
          latency_cycles = t_.tensor_completion_latency_cycles;
        } else if constexpr (std::is_same_v<T, Transpose>) {
          const double p = x.src.partition_count;
          if (e == Engine::tensor) {
            // ISA226: max(P, min(64, F)) (64: matmul_min_stationary_cycles); fp32 at the matmul
            // fp32 rate, halved by v3+ transpose mode (ARCH3).
            double cyc = std::max(p, std::min<double>(t_.matmul_min_stationary_cycles, n));
            if (x.src.dtype == DType::f32)
              cyc *= t_.core_generation >= 3 ? t_.matmul_fp32_factor / 2 : t_.matmul_fp32_factor;
            c.ii_cycles = cyc;
            c.tensor_flops = 2.0 * p * n * p;
            latency_cycles = t_.tensor_completion_latency_cycles;
          } else {
            c.ii_cycles = std::max(min_ii, ns);  // ISA226 VectorE transpose
          }
        } else if constexpr (std::is_same_v<T, Activation>) {
          // ISA226: max(MIN_II, N); activation_reduce adds MIN_II.
          c.ii_cycles = std::max(min_ii, ns) + (x.accumulate_dst ? min_ii : 0.0);
        } else if constexpr (std::is_same_v<T, TensorTensor>) {
          const bool split =
              (x.in0.memory == MemoryKind::psum) != (x.in1.memory == MemoryKind::psum);
          const bool all16 = is16(x.in0.dtype) && is16(x.in1.dtype) && is16(x.dst.dtype);
          const bool all_sbuf = x.in0.memory == MemoryKind::sbuf &&
                                x.in1.memory == MemoryKind::sbuf &&
                                x.dst.memory == MemoryKind::sbuf;
          const bool fast_op =
              x.op == AluOp::add || x.op == AluOp::subtract || x.op == AluOp::multiply;
          const bool contiguous = innermost_contiguous(x.in0) && innermost_contiguous(x.in1) &&
                                  innermost_contiguous(x.dst);
          double nterm = (split || (all16 && all_sbuf && contiguous && fast_op)) ? ns : 2 * ns;
          // ARCH3 perf mode: 2x with both inputs in SBUF and all operands 16-bit (v3+).
          if (e == Engine::vector && t_.vector_perf_mode_factor > 1 && all16 && all_sbuf)
            nterm /= 2;
          c.ii_cycles = std::max(min_ii, nterm);
          if (e == Engine::gpsimd) c.ii_cycles += t_.gpsimd_start_cycles;  // assumption
        } else if constexpr (std::is_same_v<T, TensorScalar> || std::is_same_v<T, TensorCopy>) {
          double nterm = ns;
          const bool io16 = is16(x.src.dtype) && is16(x.dst.dtype);
          if (e == Engine::vector && t_.vector_perf_mode_factor > 1 && io16) {
            // ARCH3 (§5.4): 4x all-SBUF contiguous, else 2x.
            const bool all_sbuf =
                x.src.memory == MemoryKind::sbuf && x.dst.memory == MemoryKind::sbuf;
            const bool contiguous = innermost_contiguous(x.src) && innermost_contiguous(x.dst);
            nterm /= (all_sbuf && contiguous) ? t_.vector_perf_mode_factor : 2;
          }
          if (e == Engine::scalar && t_.scalar_perf_mode_factor > 1 && io16)
            nterm /= t_.scalar_perf_mode_factor;  // ARCH4
          c.ii_cycles = std::max(min_ii, nterm);  // ISA226
        } else if constexpr (std::is_same_v<T, TensorReduce>) {
          // ISA226: N/2 for bf16 in and out with add or max, else N.
          const bool half = x.src.dtype == DType::bf16 && x.dst.dtype == DType::bf16 &&
                            (x.op == ReduceOp::sum || x.op == ReduceOp::max);
          c.ii_cycles = half ? ns / 2 : ns;
        } else if constexpr (std::is_same_v<T, Memset>) {
          const bool half = x.value == 0.0 && is16(x.dst.dtype);  // ISA226
          c.ii_cycles = std::max(min_ii, half ? ns / 2 : ns);
        } else if constexpr (std::is_same_v<T, Iota> || std::is_same_v<T, AffineSelect>) {
          c.ii_cycles = t_.gpsimd_start_cycles + ns;  // ISA226: 150 + N
        } else if constexpr (std::is_same_v<T, CopyPredicated>) {
          const bool split =
              (x.src.memory == MemoryKind::psum) != (x.predicate.memory == MemoryKind::psum);
          c.ii_cycles = std::max(min_ii, split ? ns : 2 * ns);  // ISA226
        } else if constexpr (std::is_same_v<T, Select>) {
          c.ii_cycles = std::max(min_ii, ns);  // ISA226 select_reduce
        } else if constexpr (std::is_same_v<T, LocalGather>) {
          // ISA226: 150 + (idx * e) / C, C = ((28 + t e) / (t e)) / min(4 / bytes, e), t = 4.
          const double ee = x.elements_per_index;
          const double tt = 4.0;
          const double bytes = dtype_size(x.src.dtype);
          const double cc = ((28.0 + tt * ee) / (tt * ee)) / std::min(4.0 / bytes, ee);
          c.ii_cycles = t_.gpsimd_start_cycles + (x.num_valid_indices * ee) / cc;
        } else if constexpr (std::is_same_v<T, DmaCopy> || std::is_same_v<T, Collective>) {
          c.ii_cycles = t_.dma_issue_cycles;  // assumption: trigger cost on the issuing engine
          latency_cycles = 0;
        } else if constexpr (std::is_same_v<T, TensorTensorScan>) {
          c.ii_cycles = std::max(min_ii, 2 * ns);  // ISA226: max(MIN_II, 2N)
        } else if constexpr (std::is_same_v<T, Nop>) {
          c.ii_cycles = 1;  // assumption
          latency_cycles = 0;
        }
      },
      op);
  c.ii_ns = cycles_to_ns(e, c.ii_cycles);
  c.latency_ns = cycles_to_ns(e, latency_cycles);
  return c;
}

double CostModel::dependent_issue_ns(Engine e, double prev_ii_cycles) const {
  switch (e) {
    case Engine::scalar:
      return cycles_to_ns(e, std::max<double>(prev_ii_cycles, t_.scalar_dependency_cycles));
    case Engine::vector:
    case Engine::gpsimd:
      return cycles_to_ns(e, prev_ii_cycles + t_.vector_dependency_extra_cycles);
    default:
      return cycles_to_ns(e, prev_ii_cycles);
  }
}

double CostModel::semaphore_latency_ns(Engine waiting) const {
  return cycles_to_ns(waiting, t_.semaphore_latency_cycles);
}

DmaWork CostModel::dma_work(const DmaCopy& d) const {
  DmaWork w;
  const uint32_t ssz = dtype_size(d.src.dtype);
  const uint32_t dsz = dtype_size(d.dst.dtype);
  const uint64_t elems = d.src.free_size();
  const uint64_t run =
      std::max<uint64_t>(1, std::min(contiguous_run(d.src), contiguous_run(d.dst)));
  const uint64_t runs_per_row = (elems + run - 1) / run;
  const uint64_t row_bytes = elems * std::max(ssz, dsz);
  const uint64_t desc_bytes = run * std::max(ssz, dsz);
  // An indirect DMA moves one table row per on-chip partition (§2.1, DGE): the destination's
  // for a gather, the source's for a scatter.
  const int rows = d.row_index && !d.scatter ? d.dst.partition_count : d.src.partition_count;
  const int engines = t_.dma_engines_per_core;
  const bool both_hbm = d.src.memory == MemoryKind::hbm && d.dst.memory == MemoryKind::hbm;
  const uint64_t last_bytes = row_bytes - (runs_per_row - 1) * desc_bytes;
  // §5.3: an engine whose HBM side is one contiguous region (whole rows back to back) streams
  // it as one transfer; otherwise each descriptor is a separate HBM access.
  const auto rows_back_to_back = [&](const MemRef& m) {
    return m.memory != MemoryKind::hbm ||
           (contiguous_run(m) == elems &&
            (rows == 1 || static_cast<uint64_t>(m.partition_stride) == elems));
  };
  // Gathered rows are separate HBM accesses whatever their indices.
  const bool streamed =
      !both_hbm && !d.row_index && rows_back_to_back(d.src) && rows_back_to_back(d.dst);
  const double desc_weight = 1.0 / dma_transfer_efficiency(desc_bytes);
  const double last_weight = 1.0 / dma_transfer_efficiency(last_bytes);
  int next_round_robin = 0;  // HBM<->HBM: descriptor i goes to engine i % engines
  // DMA: each engine serves 8 SBUF partition lanes, so the engine follows the on-chip side's
  // absolute partition (rows into partitions 64.. use engines 8..); HBM<->HBM round-robin
  // (assumption).
  // The partition a descriptor lands in is found from its element index, because the two sides
  // may split the same elements into rows differently (16 HBM rows of 8 x 1228 elements into
  // 128 SBUF partitions of 1228).
  const MemRef* on_chip = d.dst.memory != MemoryKind::hbm   ? &d.dst
                          : d.src.memory != MemoryKind::hbm ? &d.src
                                                            : nullptr;
  const uint64_t chip_row =
      on_chip && !d.row_index ? std::max<uint64_t>(1, on_chip->free_size()) : elems;
  const int lane0 = on_chip ? on_chip->partition_start : 0;
  const double full_weighted = static_cast<double>(desc_bytes) * desc_weight;
  const double last_weighted = static_cast<double>(last_bytes) * last_weight;
  // Descriptor k of row r starts at element r * elems + k * run, in lane (that / chip_row):
  // followed incrementally, with the engine worked out only when the lane changes.
  uint64_t lane = 0, in_lane = 0;  // of the current descriptor's first element
  int lane_engine = 0;
  auto engine_of_lane = [&] {
    return static_cast<int>((lane0 + lane) / t_.dma_partitions_per_engine) % engines;
  };
  for (int r = 0; r < rows; ++r) {
    const uint64_t start = uint64_t(r) * elems;
    lane = start / chip_row;
    in_lane = start % chip_row;
    lane_engine = engine_of_lane();
    for (uint64_t k = 0; k < runs_per_row; ++k) {
      const int eng = both_hbm ? next_round_robin : lane_engine;
      if (++next_round_robin == engines) next_round_robin = 0;
      const bool last = k + 1 == runs_per_row;
      w.bytes[eng] += last ? last_bytes : desc_bytes;
      w.rate_weighted_bytes[eng] += last ? last_weighted : full_weighted;
      w.descriptors[eng] += 1;
      in_lane += run;
      if (in_lane >= chip_row) {
        lane += in_lane / chip_row;
        in_lane %= chip_row;
        lane_engine = engine_of_lane();
      }
    }
  }
  if (streamed)
    for (int e = 0; e < engines; ++e)
      if (w.bytes[e] > 0)
        w.rate_weighted_bytes[e] = w.bytes[e] / dma_transfer_efficiency(w.bytes[e]);
  w.total_bytes = row_bytes * rows;
  const uint64_t src_bytes = elems * ssz * rows;
  const uint64_t dst_bytes = elems * dsz * rows;
  if (d.src.memory == MemoryKind::hbm) w.hbm_read_bytes = src_bytes;
  if (d.dst.memory == MemoryKind::hbm) w.hbm_write_bytes = dst_bytes;
  if (d.src.memory == MemoryKind::sbuf) w.sbuf_read_bytes = src_bytes;
  if (d.dst.memory == MemoryKind::sbuf) w.sbuf_write_bytes = dst_bytes;
  w.cast = d.src.dtype != d.dst.dtype;
  return w;
}

double CostModel::dma_engine_rate(const DmaWork& w) const {
  const double rate = std::min(t_.dma_engine_bytes_per_ns, t_.dma_engine_peak_bytes_per_ns);
  return w.cast ? rate * t_.dma_cast_factor : rate;
}

double CostModel::dma_start_delay_ns(const DmaCopy& dma) const {
  return t_.dma_trigger_latency_ns + (dma.row_index ? t_.dma_indirect_setup_ns : 0.0);
}

double CostModel::swdge_ns(const DmaCopy& dma, const DmaWork& w) const {
  if (!dma.row_index) return 0;
  uint64_t descriptors = 0;
  for (uint32_t d : w.descriptors) descriptors += d;
  return cycles_to_ns(Engine::gpsimd,
                      static_cast<double>(descriptors) * t_.swdge_descriptor_cycles);
}

double CostModel::dma_engine_ns(double rate_weighted_bytes, uint32_t descriptors,
                                double bytes_per_ns) const {
  if (descriptors == 0) return 0;
  return descriptors * t_.dma_descriptor_ns + rate_weighted_bytes / bytes_per_ns +
         t_.dma_semaphore_write_ns;
}

// §5.3: transfers of up to `dma_small_transfer_bytes` move at the fitted small rate, transfers
// of `dma_full_rate_transfer_bytes` and more at the DMABW rate; between the two the rate is
// interpolated linearly in log(size) (assumption).
double CostModel::dma_transfer_efficiency(uint64_t contiguous_hbm_bytes) const {
  const double full = t_.dma_engine_bytes_per_ns;
  const double small = std::min(full, t_.dma_small_transfer_bytes_per_ns);
  const double lo = t_.dma_small_transfer_bytes, hi = t_.dma_full_rate_transfer_bytes;
  const double b = static_cast<double>(contiguous_hbm_bytes);
  if (b >= hi || small >= full) return 1.0;
  if (b <= lo) return small / full;
  const double f = std::log(b / lo) / std::log(hi / lo);
  return (small + f * (full - small)) / full;
}

double CostModel::collective_ns(const Collective& c, int cores) const {
  const int per_chip = std::max(1, t_.cores_per_chip);
  return collective_ns(c, cores, (std::max(cores, 1) + per_chip - 1) / per_chip);
}

CollectiveAlgorithm CostModel::collective_algorithm(uint64_t bytes, int ranks, int chips) const {
  if (bytes < t_.collective_mesh_max_bytes) return CollectiveAlgorithm::mesh;
  if (bytes < t_.collective_rdh_max_bytes) return CollectiveAlgorithm::rdh;
  // KangaRing: NeuronCore-v3 and later, every rank of a chip in the group (CC).
  if (t_.core_generation >= 3 && chips > 1 && ranks >= 2 * chips)
    return CollectiveAlgorithm::kangaring;
  return CollectiveAlgorithm::ring;
}

double CostModel::collective_ns(const Collective& c, int ranks, int chips) const {
  // docs/DEVICE_MODEL.md "Collectives": one operation inside a program costs a fixed latency, the
  // per-hop latency of each step of the runtime's algorithm for its size, and nccom-test's bus
  // bytes over the fitted bus bandwidth (on one chip, or across chips).
  if (ranks <= 1) return t_.collective_op_latency_ns;
  const double n = ranks;
  const double src_bytes =
      static_cast<double>(c.src.free_size()) * c.src.partition_count * dtype_size(c.src.dtype);
  // nccom-test's size(B): the all-reduce and reduce-scatter input, the gathered all-gather
  // output; and its bus-bandwidth factor.
  const bool gather = c.kind == CollectiveKind::all_gather;
  const double size = gather ? n * src_bytes : src_bytes;
  const int halves = c.kind == CollectiveKind::all_reduce ? 2 : 1;
  const double bus_bytes = halves * (n - 1) / n * size;
  double steps_per_half = 1;
  switch (collective_algorithm(static_cast<uint64_t>(size), ranks, chips)) {
    case CollectiveAlgorithm::mesh:
      steps_per_half = 1;
      break;
    case CollectiveAlgorithm::rdh:
      steps_per_half = std::ceil(std::log2(n));
      break;
    case CollectiveAlgorithm::kangaring:
      steps_per_half = std::ceil(n / 2);
      break;
    case CollectiveAlgorithm::ring:
      steps_per_half = n - 1;
      break;
  }
  // GB/s == B/ns.
  const double bus = chips > 1 ? t_.collective_interchip_bus_gbps : t_.collective_onchip_bus_gbps;
  return t_.collective_op_latency_ns + halves * steps_per_half * t_.collective_hop_latency_ns +
         bus_bytes / bus;
}

const char* collective_algorithm_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::mesh:
      return "mesh";
    case CollectiveAlgorithm::rdh:
      return "rdh";
    case CollectiveAlgorithm::kangaring:
      return "kangaring";
    case CollectiveAlgorithm::ring:
      return "ring";
  }
  return "ring";
}

const char* issue_mode_name(IssueMode m) {
  return m == IssueMode::synchronous ? "synchronous" : "asynchronous";
}

ExecutionOverhead CostModel::execution_overhead(const ExecutionTraffic& traffic,
                                                IssueMode mode) const {
  ExecutionOverhead o;
  const double per_call =
      mode == IssueMode::synchronous ? t_.execution_call_ns : t_.execution_call_async_ns;
  o.call_ns = per_call * traffic.calls;
  o.transfer_ns =
      static_cast<double>(traffic.bytes_in + traffic.bytes_out) / t_.host_link_bytes_per_ns;
  o.switch_ns = t_.program_switch_ns * traffic.program_switches;
  o.multi_core_ns = t_.multi_core_start_ns * traffic.multi_core_calls;
  return o;
}

std::vector<Assumption> CostModel::assumptions() const {
  return {
      {"semaphore_latency_cycles", static_cast<double>(t_.semaphore_latency_cycles), "cycles",
       "cross-engine semaphore latency is not public; 64 cycles of the waiting engine "
       "(TRAINIUM.md §1)"},
      {"tensor_completion_latency_cycles", static_cast<double>(t_.tensor_completion_latency_cycles),
       "cycles", "PE array fill + drain 2 x 128 (§5.2); only exposed on dependency chains"},
      {"engine_completion_latency_cycles", static_cast<double>(t_.engine_completion_latency_cycles),
       "cycles", "Vector/Scalar/GpSimd pipeline depth taken as MIN_II (§5.2)"},
      {"scalar_dependency_cycles", static_cast<double>(t_.scalar_dependency_cycles), "cycles",
       "ScalarE read-after-write on its own previous output: PERF chain II 264 / 266 cycles"},
      {"vector_dependency_extra_cycles", static_cast<double>(t_.vector_dependency_extra_cycles),
       "cycles", "VectorE/GpSimdE static overhead when reading the previous output (ARCH2, PERF)"},
      {"dma_descriptor_ns", t_.dma_descriptor_ns, "ns",
       "per-descriptor DMA cost, not public; fitted to the DMA and matmul anchors "
       "(docs/DEVICE_MODEL.md)"},
      {"dma_trigger_latency_ns", t_.dma_trigger_latency_ns, "ns",
       "trigger-to-first-byte latency (DMABW ~1.3 us); fitted (docs/DEVICE_MODEL.md)"},
      {"dma_small_transfer_bytes_per_ns", t_.dma_small_transfer_bytes_per_ns, "B/ns",
       t_.dma_small_transfer_bytes_per_ns < t_.dma_engine_bytes_per_ns
           ? "per-engine rate of strided rows and transfers up to 4 KiB, fitted to the MM "
             "tutorial anchors"
           : "no published small-transfer anchor: the large-transfer (DMABW) rate"},
      {"dma_full_rate_transfer_bytes", static_cast<double>(t_.dma_full_rate_transfer_bytes), "B",
       "contiguous HBM bytes per engine transfer from which the DMABW rate holds (PERF: > 32 "
       "KiB); rate log-linear in size below it, down to the small rate at 4 KiB"},
      {"dma_indirect_setup_ns", t_.dma_indirect_setup_ns, "ns",
       "from an indirect DMA's descriptors written by software DGE to its transfer's start: not "
       "published; the hardware DGE's ~600 ns per DMA (DGE) kept as its order, though hardware "
       "DGE itself cannot do indirect DMAs"},
      {"swdge_descriptor_cycles", static_cast<double>(t_.swdge_descriptor_cycles), "cycles",
       "GpSimd cycles per descriptor of an indirect DMA (software DGE, DGE: it consumes GpSimd "
       "cycles and competes with GpSimd work): not published, one MIN_II per descriptor"},
      {"dma_issue_cycles", static_cast<double>(t_.dma_issue_cycles), "cycles",
       "cost of a DMA trigger on the issuing engine, taken as MIN_II"},
      {"dma_partitions_per_engine", static_cast<double>(t_.dma_partitions_per_engine), "partitions",
       "a tile is split 8 partitions per DMA engine (DMA, 128 / 16)"},
      {"hbm_gbps_per_core", t_.hbm_gbps_per_core, "GB/s",
       "one HBM pool per chip shared by its cores (§1); lower published figure (§2.3)"},
      {"collective_op_latency_ns", t_.collective_op_latency_ns, "ns",
       t_.core_generation == 2
           ? "fixed cost of one collective inside a program: fitted to nccom-test's trn1.32xlarge "
             "32-rank all-gather (SDK 2.24), 1 KiB row (docs/DEVICE_MODEL.md, Collectives)"
           : "fixed cost of one collective inside a program: fitted to nccom-test's SDK 2.28 "
             "8-rank all-gather, 1 KiB row, taken as trn2's (trn3: trn2's; docs/DEVICE_MODEL.md, "
             "Collectives)"},
      {"collective_hop_latency_ns", t_.collective_hop_latency_ns, "ns",
       "per step of the runtime's algorithm: ring / KangaRing per-hop latency 1-2 us (CC, trn2); "
       "midpoint"},
      {"collective_onchip_bus_gbps", t_.collective_onchip_bus_gbps, "GB/s",
       t_.core_generation == 2
           ? "bus bandwidth with every rank on one chip: fitted to nccom-test's 2-rank all-reduce "
             "on one chip at 1 GiB (SDK 2.10 page)"
           : "bus bandwidth with every rank on one chip: no figure published, the inter-chip fit"},
      {"collective_interchip_bus_gbps", t_.collective_interchip_bus_gbps, "GB/s",
       t_.core_generation == 2
           ? "bus bandwidth across chips: fitted to nccom-test's trn1.32xlarge 32-rank all-gather "
             "at 512 KiB; larger messages extrapolated"
           : "bus bandwidth across chips: fitted to nccom-test's 16-rank KangaRing all-reduce at "
             "512 MiB (SDK 2.28, trn2; trn3: trn2's)"},
      {"collective_mesh_max_bytes", static_cast<double>(t_.collective_mesh_max_bytes), "bytes",
       "mesh (1 step per half) below 1 MB, RDH (log2 N per half) to 56 MB, ring (N - 1) or "
       "KangaRing (N / 2, v3+) above: the runtime's trn2 thresholds (CC), taken for every target"},
      {"collective_rdh_max_bytes", static_cast<double>(t_.collective_rdh_max_bytes), "bytes",
       "upper end of recursive doubling-halving (CC, trn2: 56 MB), taken for every target"},
      {"execution_call_ns", t_.execution_call_ns, "ns",
       "per device call issued synchronously: program start, runtime call and framework; fitted "
       "to the six trn1 encoders' P50 (BENCH latency_data_encoder.csv) minus device and PCIe time "
       "(docs/DEVICE_MODEL.md, End to end); trn2 / trn3 take trn1's (assumption)"},
      {"execution_call_async_ns", t_.execution_call_async_ns, "ns",
       "per device call issued asynchronously (the host prepares it while the device runs the one "
       "before): assumption, no single-core figure is published"},
      {"host_link_bytes_per_ns", t_.host_link_bytes_per_ns, "B/ns",
       "PCIe copies of a call's input and output bytes: assumption, half a PCIe Gen4 x16 link's "
       "32 GB/s; no host-link rate is published for trn1 or trn2"},
      {"program_switch_ns", t_.program_switch_ns, "ns",
       "extra when a call runs another program than the one before (prefill <-> decode): "
       "assumption 0; the runtime release notes give only a reduction (2.21: up to 500 us)"},
      {"multi_core_start_ns", t_.multi_core_start_ns, "ns",
       "start of a program run over several cores (barrier between ranks, skew): fitted to NxD "
       "Inference's Llama 4-layer TP 32 test, asynchronous prefill and decode P50 minus device "
       "time (docs/DEVICE_MODEL.md, End to end)"},
      {"psum_accumulation_order", 0, "", "fp32 accumulation in increasing K (§7)"},
      {"f8e4m3_format", 240, "max", "NKI float8_e4m3 follows ml_dtypes float8_e4m3 (§7)"},
  };
}

}  // namespace neuronc::device
