// The three target parameter sets; see target.h and TRAINIUM.md §2 for sources.
#include "device/target.h"

namespace neuronc::device {
namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

Target common() {
  Target t{};
  t.pe_rows = 128;                      // ARCH2-4
  t.pe_cols = 128;                      // ARCH2-4
  t.matmul_max_moving = 512;            // ARCH2, TILE
  t.matmul_min_stationary_cycles = 64;  // ISA226
  t.matmul_fp32_factor = 4;             // ARCH2, ISA226
  t.has_fp8_double_row = false;
  t.lanes = 128;  // ARCH2
  t.vector_perf_mode_factor = 1;
  t.scalar_perf_mode_factor = 1;
  t.min_ii_cycles = 64;                    // ISA226 MIN_II
  t.gpsimd_start_cycles = 150;             // ISA226 GPSIMD_START
  t.gpsimd_cores = 8;                      // ARCH2
  t.scalar_dependency_cycles = 265;        // PERF: 264 (v2) / 266 (v3) cycles, §5.2
  t.vector_dependency_extra_cycles = 100;  // ARCH2, PERF
  t.dynamic_copy_min_cycles = 600;         // ISA226
  t.strided_access_bytes = 16;             // ARCH2 (NC-v2 rule, taken for v3 / v4)
  t.vector_transpose_block = 32;           // NKI arch guide, cross-partition movement
  t.partitions = 128;                      // ARCH2
  t.sbuf_partition_pitch = 256 * 1024;     // assumption (DRV maps a power-of-two window)
  t.psum_partition_bytes = 16 * 1024;      // ARCH2
  t.psum_bank_bytes = 2048;                // ARCH2, TILE
  t.psum_banks = 8;                        // ARCH2
  t.matmul_may_span_banks = false;
  t.psum_bf16_accumulate = false;
  t.max_free_elems_sbuf = 64 * 1024;  // ARCH2
  t.max_free_elems_psum = 4 * 1024;   // ARCH2
  t.access_pattern_levels = 4;        // ARCH2
  t.exclusive_vector_gpsimd_sbuf = false;
  t.exclusive_vector_scalar_psum = false;
  t.dma_engines_per_core = 16;               // DMA, DRV
  t.dma_queues_per_engine = 16;              // DMA, DRV
  t.dma_partitions_per_engine = 8;           // DMA: 128 partitions / 16 engines
  t.dma_descriptor_ns = 20.0;                // assumption: §5.3 default, see DEVICE_MODEL.md
  t.dma_small_transfer_bytes = 4096;         // MM: strided rows of 256 B - 4 KiB, one rate
  t.dma_full_rate_transfer_bytes = 32768;    // PERF: > 32 KiB per engine transfer is ideal
  t.dma_indirect_setup_ns = 600.0;           // assumption: DGE's hardware-DGE figure, see target.h
  t.swdge_descriptor_cycles = 64;            // assumption: one MIN_II per descriptor (software DGE)
  t.dma_trigger_latency_ns = 1300.0;         // assumption: DMABW ~1.3 us, see DEVICE_MODEL.md
  t.dma_semaphore_write_ns = 0.0;            // assumption: folded into the descriptor cost
  t.dma_cast_factor = 1.0;                   // assumption: casts at full rate
  t.dma_issue_cycles = 64;                   // assumption: one MIN_II on the issuing engine
  t.dma_semaphore_increment = 16;            // DMA: one 4-byte write from each of 16 engines
  t.semaphores_per_core = 256;               // DRV
  t.semaphore_latency_cycles = 64;           // assumption (TRAINIUM.md §1)
  t.tensor_completion_latency_cycles = 256;  // assumption: 2 x 128 fill + drain (§5.2)
  t.engine_completion_latency_cycles = 64;   // assumption: MIN_II (§5.2)
  t.collective_hop_latency_ns = 1500.0;      // CC: 1-2 us per hop (trn2; assumption elsewhere)
  t.collective_mesh_max_bytes = 1u << 20;    // CC (trn2; assumption for trn1 and trn3)
  t.collective_rdh_max_bytes = 56u << 20;    // CC (trn2; assumption for trn1 and trn3)
  // One execution outside the device (docs/DEVICE_MODEL.md "End to end"). Fitted on trn1; the
  // host's runtime and framework are not a NeuronCore generation's, so trn2 and trn3 take
  // trn1's values [assumption].
  t.execution_call_ns = 94950.0;    // fitted: six trn1 encoders (BENCH), fit half
  t.execution_call_async_ns = 0.0;  // assumption: the host's share hidden by the overlap
  t.host_link_bytes_per_ns = 16.0;  // assumption: half a PCIe Gen4 x16 link's 32 GB/s
  t.program_switch_ns = 0.0;        // assumption: only a reduction is published (2.21)
  t.multi_core_start_ns = 81300.0;  // fitted: NxD 4-layer TP 32 (bf16), asynchronous decode P50
  return t;
}

Target make_trn1() {
  Target t = common();
  t.kind = TargetKind::trn1;
  t.name = "trn1";
  t.core_version = "NeuronCore-v2";
  t.core_generation = 2;
  t.tensor_clock_ghz = 2.8;               // ARCH2
  t.vector_clock_ghz = 1.12;              // ARCH2
  t.scalar_clock_ghz = 1.4;               // ARCH2
  t.gpsimd_clock_ghz = 1.4;               // ARCH2
  t.sync_clock_ghz = 1.4;                 // assumption: ScalarE clock
  t.sbuf_partition_bytes = 192 * 1024;    // ARCH2: 24 MiB / 128
  t.exclusive_vector_gpsimd_sbuf = true;  // ARCH2
  t.exclusive_vector_scalar_psum = true;  // ARCH2
  t.cores_per_chip = 2;                   // ARCH2
  t.hbm_bytes_per_core = 16 * kGiB;       // CHIP: 32 GiB / 2
  t.hbm_gbps_per_chip = 820.0;            // ARCH2, §2.3 default
  t.hbm_gbps_per_core = 410.0;            // derived
  // DMABW: 17 B/ns per engine on large contiguous transfers. The BERT latencies (BENCH, §6.2)
  // need at least 228 GB/s per core on weight streams, which only such transfers give.
  t.dma_engine_bytes_per_ns = 17.0;
  // assumption, fitted: the NKI matmul tutorial kernels (MM, the only published trn1 DMA-bound
  // timings) sustain ~7.5 B/ns per engine on strided HBM rows of 256 B to 4 KiB. See
  // docs/DEVICE_MODEL.md.
  t.dma_small_transfer_bytes_per_ns = 7.5;
  t.dma_engine_peak_bytes_per_ns = 27.2;  // DMA
  // Collectives fitted to nccom-test's trn1 tables (docs/DEVICE_MODEL.md "Collectives"): the
  // trn1.32xlarge 32-rank all-gather (SDK 2.24) at 1 KiB and 512 KiB, and the 2-rank
  // all-reduce on one chip at 1 GiB.
  t.collective_op_latency_ns = 4627.0;      // fitted
  t.collective_interchip_bus_gbps = 29.82;  // fitted (mesh-sized messages, <= 512 KiB)
  t.collective_onchip_bus_gbps = 56.74;     // fitted
  return t;
}

Target make_trn2() {
  Target t = common();
  t.kind = TargetKind::trn2;
  t.name = "trn2";
  t.core_version = "NeuronCore-v3";
  t.core_generation = 3;
  t.tensor_clock_ghz = 2.4;                  // ARCH3
  t.vector_clock_ghz = 0.96;                 // ARCH3
  t.scalar_clock_ghz = 1.2;                  // ARCH3
  t.gpsimd_clock_ghz = 1.2;                  // ARCH3
  t.sync_clock_ghz = 1.2;                    // assumption: ScalarE clock
  t.has_fp8_double_row = true;               // ARCH3
  t.vector_perf_mode_factor = 4;             // ARCH3 (§5.4)
  t.sbuf_partition_bytes = 224 * 1024;       // ARCH3: 28 MiB / 128
  t.cores_per_chip = 8;                      // ARCH3
  t.hbm_bytes_per_core = 12 * kGiB;          // CHIP: 96 GiB / 8
  t.hbm_gbps_per_chip = 2900.0;              // CHIP, §2.3 default
  t.hbm_gbps_per_core = 362.5;               // derived
  t.dma_engine_bytes_per_ns = 23.0;          // DMABW
  t.dma_small_transfer_bytes_per_ns = 23.0;  // assumption: no small-row anchor, flat curve
  t.dma_engine_peak_bytes_per_ns = 27.2;     // DMA
  // Fitted to nccom-test's SDK 2.28 tables taken as trn2's (docs/DEVICE_MODEL.md
  // "Collectives"): the 8-rank all-gather at 1 KiB and the 16-rank KangaRing all-reduce at
  // 512 MiB. No on-chip figure is published: the inter-chip one [assumption].
  t.collective_op_latency_ns = 8491.0;       // fitted
  t.collective_interchip_bus_gbps = 104.24;  // fitted
  t.collective_onchip_bus_gbps = 104.24;     // assumption: the inter-chip fit
  return t;
}

Target make_trn3() {
  Target t = common();
  t.kind = TargetKind::trn3;
  t.name = "trn3";
  t.core_version = "NeuronCore-v4";
  t.core_generation = 4;
  t.tensor_clock_ghz = 2.4;                  // ARCH4
  t.vector_clock_ghz = 1.2;                  // ARCH4
  t.scalar_clock_ghz = 1.2;                  // ARCH4
  t.gpsimd_clock_ghz = 1.2;                  // ARCH4
  t.sync_clock_ghz = 1.2;                    // assumption: ScalarE clock
  t.has_fp8_double_row = true;               // assumption (§2.3): v3 rate kept on v4
  t.vector_perf_mode_factor = 4;             // ARCH3 modes kept on v4: assumption
  t.scalar_perf_mode_factor = 2;             // ARCH4
  t.matmul_max_moving = 4096;                // §3.4 derived: 16 KiB / 4 B across 8 banks
  t.matmul_may_span_banks = true;            // ARCH4
  t.psum_bf16_accumulate = true;             // ARCH4
  t.sbuf_partition_bytes = 256 * 1024;       // ARCH4: 32 MiB / 128
  t.cores_per_chip = 8;                      // ARCH4
  t.hbm_bytes_per_core = 18 * kGiB;          // CHIP: 144 GiB / 8
  t.hbm_gbps_per_chip = 4700.0;              // ARCH4, §2.3 default
  t.hbm_gbps_per_core = 587.5;               // derived
  t.dma_engine_bytes_per_ns = 33.0;          // DMABW
  t.dma_small_transfer_bytes_per_ns = 33.0;  // assumption: no small-row anchor, flat curve
  t.dma_engine_peak_bytes_per_ns = 38.4;     // DMA
  t.semaphores_per_core = 256;               // assumption: not public for v4
  // No trn3 collective figure is published: trn2's fitted values, not scaled up by trn3's
  // faster links [assumption].
  t.collective_op_latency_ns = 8491.0;       // assumption: trn2's
  t.collective_interchip_bus_gbps = 104.24;  // assumption: trn2's
  t.collective_onchip_bus_gbps = 104.24;     // assumption: trn2's
  return t;
}

}  // namespace

const Target& target(TargetKind kind) {
  static const Target kTrn1 = make_trn1();
  static const Target kTrn2 = make_trn2();
  static const Target kTrn3 = make_trn3();
  switch (kind) {
    case TargetKind::trn1:
      return kTrn1;
    case TargetKind::trn2:
      return kTrn2;
    case TargetKind::trn3:
      return kTrn3;
  }
  return kTrn1;
}

Result<TargetKind> parse_target(std::string_view name) {
  if (name == "trn1" || name == "inf2") return TargetKind::trn1;
  if (name == "trn2") return TargetKind::trn2;
  if (name == "trn3") return TargetKind::trn3;
  return invalid_argument("unknown target '" + std::string(name) +
                          "': expected one of trn1, trn2, trn3 (inf2 is an alias of trn1)");
}

bool valid_tensor_parallel_degree(const Target& t, int degree) {
  if (t.core_generation == 2)
    return degree == 1 || degree == 2 || degree == 8 || degree == 16 || degree == 32;
  return degree >= 1 && degree <= 64;
}

std::string tensor_parallel_degrees_text(const Target& t) {
  return t.core_generation == 2 ? "1, 2, 8, 16 or 32" : "1 to 64";
}

std::string_view target_name(TargetKind kind) {
  return target(kind).name;
}

}  // namespace neuronc::device
