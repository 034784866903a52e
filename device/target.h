// Parameter sets of the three NeuronCore generations the device model supports: trn1
// (NeuronCore-v2, also inf2), trn2 (v3) and trn3 (v4). Every number is from TRAINIUM.md §2
// (the source key is in the comment) or marked `assumption`. Targets are immutable globals:
// safe to read from any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "device/status.h"

namespace neuronc::device {

enum class TargetKind : uint8_t { trn1, trn2, trn3 };

// The most DMA engines any target's core has (Target::dma_engines_per_core): what per-engine
// arrays (DmaWork, the simulator's engines) are sized by.
inline constexpr int kMaxDmaEnginesPerCore = 16;

struct Target {
  TargetKind kind;
  std::string_view name;          // "trn1", "trn2", "trn3"
  std::string_view core_version;  // "NeuronCore-v2", ...
  int core_generation;            // 2, 3, 4

  // --- Clocks (GHz) ---------------------------------------------------------------------
  double tensor_clock_ghz;  // ARCH2-4: 2.8 / 2.4 / 2.4
  double vector_clock_ghz;  // ARCH2-4: 1.12 / 0.96 / 1.2
  double scalar_clock_ghz;  // ARCH2-4: 1.4 / 1.2 / 1.2
  double gpsimd_clock_ghz;  // ARCH2-4: 1.4 / 1.2 / 1.2
  double sync_clock_ghz;    // assumption: SyncE runs at the ScalarE clock

  // --- TensorE --------------------------------------------------------------------------
  int pe_rows;                       // ARCH2-4: 128 (contraction, partitions)
  int pe_cols;                       // ARCH2-4: 128 (stationary free size)
  int matmul_max_moving;             // ARCH2/TILE: 512 fp32 per PSUM bank (v4: 4096, §3.4)
  int matmul_min_stationary_cycles;  // ISA226: max(min(64, N_stat), N_mov)
  int matmul_fp32_factor;            // ARCH2, ISA226: fp32 inputs 4x
  bool has_fp8_double_row;           // ARCH3 (v3); v4 at the v3 rate: assumption (§2.3)

  // --- VectorE / ScalarE / GpSimdE ------------------------------------------------------
  int lanes;                           // ARCH2: 128 lanes (one per partition)
  int vector_perf_mode_factor;         // ARCH3 §5.4: 4x bf16/fp16 SBUF contiguous on v3+; 1 on v2
  int scalar_perf_mode_factor;         // ARCH4 §5.4: 2x bf16/fp16 on v4; 1 before
  int min_ii_cycles;                   // ISA226: MIN_II ~ 64
  int gpsimd_start_cycles;             // ISA226: GPSIMD_START ~ 150
  int gpsimd_cores;                    // ARCH2: 8 cores, 16 partitions each
  int scalar_dependency_cycles;        // PERF: dependent 1-element chain II 264 (v2) / 266 (v3)
  int vector_dependency_extra_cycles;  // ARCH2, PERF: +~100 cycles static overhead
  int dynamic_copy_min_cycles;         // ISA226: tensor_copy_dynamic_* max(600, N)
  int strided_access_bytes;            // ARCH2: an innermost stride above this many bytes
                                       // halves an engine's SBUF / PSUM interface rate
  int vector_transpose_block;          // NKI arch guide: VectorE transposes 32 x 32 inside
                                       // each group of 32 partitions (one reshape bank)

  // --- SBUF / PSUM ----------------------------------------------------------------------
  int partitions;                     // ARCH2: 128
  uint32_t sbuf_partition_bytes;      // ARCH2-4: 192 / 224 / 256 KiB
  uint32_t sbuf_partition_pitch;      // assumption: power-of-two address pitch (DRV hint)
  uint32_t psum_partition_bytes;      // ARCH2: 16 KiB
  uint32_t psum_bank_bytes;           // ARCH2: 2 KiB (512 fp32), 8 banks
  int psum_banks;                     // ARCH2: 8
  bool matmul_may_span_banks;         // ARCH4: v4 matmul may span all 8 banks
  bool psum_bf16_accumulate;          // ARCH4: v4 bf16 PSUM destination
  uint32_t max_free_elems_sbuf;       // ARCH2: 64K elements per instruction in SBUF
  uint32_t max_free_elems_psum;       // ARCH2: 4K elements per instruction in PSUM
  int access_pattern_levels;          // ARCH2: 4 free-dimension levels
  bool exclusive_vector_gpsimd_sbuf;  // ARCH2: v2 VectorE/GpSimdE cannot share SBUF
  bool exclusive_vector_scalar_psum;  // ARCH2: v2 VectorE/ScalarE cannot share PSUM

  // --- HBM ------------------------------------------------------------------------------
  int cores_per_chip;           // ARCH2-4: 2 / 8 / 8
  uint64_t hbm_bytes_per_core;  // CHIP derived: 16 / 12 / 18 GiB
  double hbm_gbps_per_chip;     // §2.3 default: 820 GB/s, 2.9 TB/s, 4.7 TB/s
  double hbm_gbps_per_core;     // derived: chip / cores: 410 / 362.5 / 587.5

  // --- DMA ------------------------------------------------------------------------------
  int dma_engines_per_core;        // DMA, DRV: 16
  int dma_queues_per_engine;       // DMA, DRV: 16
  int dma_partitions_per_engine;   // DMA: a tile is split 8 partitions per engine (128/16)
  double dma_engine_bytes_per_ns;  // DMABW achievable on large transfers: 17 / 23 / 33 B/ns
  // Transfer-size curve (TRAINIUM.md §5.3): an engine's rate depends on the HBM bytes it reads or
  // writes contiguously in one transfer (its rows when they lie back to back in HBM, else one
  // row). Up to `dma_small_transfer_bytes` it moves at `dma_small_transfer_bytes_per_ns`, from
  // `dma_full_rate_transfer_bytes` at `dma_engine_bytes_per_ns`, log-linear in size between
  // (assumption: the curve's shape).
  double dma_small_transfer_bytes_per_ns;  // trn1: fitted to MM's strided rows; v3/v4: flat
  uint32_t dma_small_transfer_bytes;       // MM: 256 B - 4 KiB strided rows all run at that rate
  uint32_t dma_full_rate_transfer_bytes;   // PERF: trn1/inf2 transfers > 32 KiB for ideal rate
  double dma_engine_peak_bytes_per_ns;     // DMA theoretical cap: 27.2 / 27.2 / 38.4 GB/s
  double dma_descriptor_ns;       // assumption: per-descriptor cost fitted to §6.1 anchors
  double dma_trigger_latency_ns;  // assumption (DMABW ~1.3 us semaphore-to-start), fitted
  // An indirect (gather / scatter) DMA's descriptors are generated by software DGE on GpSimd,
  // the only DGE mode that supports indirect DMAs on every generation (DGE): GpSimd is busy
  // `swdge_descriptor_cycles` per descriptor, then the transfer starts `dma_indirect_setup_ns`
  // after the descriptors are written. Neither figure is published [assumption].
  double dma_indirect_setup_ns;   // assumption: hardware DGE's ~600 ns per DMA kept as the handoff
  int swdge_descriptor_cycles;    // assumption: one MIN_II of GpSimd per descriptor
  double dma_semaphore_write_ns;  // assumption: final 4-byte semaphore write per engine
  double dma_cast_factor;         // assumption: a casting DMA moves data at this fraction
  int dma_issue_cycles;           // assumption: issuing engine cycles per dma trigger
  int dma_semaphore_increment;    // DMA: a transfer signals +16 (one write per engine)

  // --- Semaphores and pipeline latencies --------------------------------------------------
  int semaphores_per_core;               // DRV: 256 (v4 not public: assumption 256)
  int semaphore_latency_cycles;          // assumption: 64 cycles of the waiting engine
  int tensor_completion_latency_cycles;  // assumption: 2 x 128 (array fill + drain)
  int engine_completion_latency_cycles;  // assumption: MIN_II for Vector/Scalar/GpSimd

  // --- Collectives (§8.3-8.5; docs/DEVICE_MODEL.md "Collectives") --------------------------
  // One collective operation inside a program costs
  //   collective_op_latency_ns + steps x collective_hop_latency_ns + factor x S / bus bandwidth,
  // with S nccom-test's size (the all-reduce buffer, the gathered all-gather output, the
  // reduce-scatter input), factor nccom-test's bus-bandwidth factor (2(N-1)/N all-reduce,
  // (N-1)/N all-gather and reduce-scatter) and steps those of the algorithm the runtime picks for
  // S (mesh 1 per half below `collective_mesh_max_bytes`, recursive doubling-halving
  // ceil(log2 N) per half below `collective_rdh_max_bytes`, ring N - 1 per half above).
  double collective_op_latency_ns;       // fitted: trn1 32-rank all-gather, trn2 8-rank
  double collective_hop_latency_ns;      // CC: 1-2 us per hop; 1.5 us
  double collective_onchip_bus_gbps;     // bus bandwidth, every rank on one chip
  double collective_interchip_bus_gbps;  // bus bandwidth, ranks on several chips
  uint64_t collective_mesh_max_bytes;    // CC: < 1 MB
  uint64_t collective_rdh_max_bytes;     // CC: 1-56 MB

  // --- One execution, outside the device time (docs/DEVICE_MODEL.md "End to end") ------------
  // What a runtime call of a loaded program pays beside the device's own time, which (as AWS's
  // own device time) starts with the first instruction and ends with the last. Values, sources
  // and fits: docs/DEVICE_MODEL.md "End to end".
  double execution_call_ns;        // program start + runtime call + framework, synchronous issue:
                                   // fitted to the six trn1 encoders (BENCH)
  double execution_call_async_ns;  // the same under asynchronous issue, where the host prepares
                                   // a call while the device runs the one before: assumption
  double host_link_bytes_per_ns;   // PCIe host <-> device copies of a call's inputs and outputs:
                                   // assumption (no published host-link rate)
  double program_switch_ns;        // extra when a call runs another program than the previous
                                   // one: assumption (no published absolute figure)
  double multi_core_start_ns;      // the start of a program run over several cores (the
                                   // barrier between ranks and their skew): fitted to NxD
                                   // Inference's 4-layer TP 32 test, asynchronous

  // --- Derived helpers ---------------------------------------------------------------------
  // Dense BF16 TensorE peak in FLOP/ns: rows x cols x 2 x clock (§2.3 rule).
  double tensor_peak_flops_per_ns() const { return 2.0 * pe_rows * pe_cols * tensor_clock_ghz; }
  // Bytes per ns one core's DMA engines move at most: every engine at the large-transfer rate
  // (DMABW), capped at the theoretical rate. Below the core's HBM share on trn1 and trn3, where
  // it, not the HBM share, bounds what one core can move.
  double dma_peak_bytes_per_ns() const {
    return dma_engines_per_core * std::min(dma_engine_bytes_per_ns, dma_engine_peak_bytes_per_ns);
  }
  uint32_t psum_bank_elems_f32() const { return psum_bank_bytes / 4; }
};

const Target& target(TargetKind kind);

// "trn1" | "trn2" | "trn3" (also accepts "inf2" as an alias of trn1). Unknown names give an
// error listing the valid ones.
Result<TargetKind> parse_target(std::string_view name);

std::string_view target_name(TargetKind kind);

// The tensor-parallel degrees (NeuronCores one model is split over) the target's instances run:
// trn1 1, 2 (trn1.2xlarge), 8, 16, 32 (trn1.32xlarge, TRAINIUM.md §6.2); trn2 1 to 64
// (trn2.48xlarge); trn3 as trn2 (assumption: no trn3 instance is published).
bool valid_tensor_parallel_degree(const Target& t, int degree);
std::string tensor_parallel_degrees_text(const Target& t);  // "1, 2, 8, 16 or 32"

}  // namespace neuronc::device
