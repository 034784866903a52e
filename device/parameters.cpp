// The kinds are docs/DEVICE_MODEL.md's, one letter per generation (trn1, trn2, trn3):
// P published, D derived, F fitted, A assumption. tests/device/target_test.cpp checks them
// against the document's table and that every Target member is listed.
#include "device/parameters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

namespace neuronc::device {
namespace {

// clang-format off
#define NEURONC_TARGET_PARAMETERS(X) \
  X(kind, "", "PPP") \
  X(name, "", "PPP") \
  X(core_version, "", "PPP") \
  X(core_generation, "", "DDD") \
  X(tensor_clock_ghz, "GHz", "PPP") \
  X(vector_clock_ghz, "GHz", "PPP") \
  X(scalar_clock_ghz, "GHz", "PPP") \
  X(gpsimd_clock_ghz, "GHz", "PPP") \
  X(sync_clock_ghz, "GHz", "AAA") \
  X(pe_rows, "", "PPP") \
  X(pe_cols, "", "PPP") \
  X(matmul_max_moving, "", "PPD") \
  X(matmul_min_stationary_cycles, "cycles", "PPA") \
  X(matmul_fp32_factor, "x", "PPP") \
  X(has_fp8_double_row, "", "PPA") \
  X(lanes, "", "PPP") \
  X(vector_perf_mode_factor, "x", "PPA") \
  X(scalar_perf_mode_factor, "x", "PPP") \
  X(min_ii_cycles, "cycles", "PPA") \
  X(gpsimd_start_cycles, "cycles", "PPA") \
  X(gpsimd_cores, "", "PAA") \
  X(scalar_dependency_cycles, "cycles", "FFA") \
  X(vector_dependency_extra_cycles, "cycles", "PAA") \
  X(dynamic_copy_min_cycles, "cycles", "PPA") \
  X(strided_access_bytes, "bytes", "PAA") \
  X(vector_transpose_block, "", "PAA") \
  X(partitions, "", "PPP") \
  X(sbuf_partition_bytes, "bytes", "PPD") \
  X(sbuf_partition_pitch, "", "AAA") \
  X(psum_partition_bytes, "bytes", "PPP") \
  X(psum_bank_bytes, "bytes", "PPP") \
  X(psum_banks, "", "PPP") \
  X(matmul_may_span_banks, "", "PPP") \
  X(psum_bf16_accumulate, "", "PPP") \
  X(max_free_elems_sbuf, "", "PAA") \
  X(max_free_elems_psum, "", "PAA") \
  X(access_pattern_levels, "", "PAA") \
  X(exclusive_vector_gpsimd_sbuf, "", "PPA") \
  X(exclusive_vector_scalar_psum, "", "PPA") \
  X(cores_per_chip, "", "PPP") \
  X(hbm_bytes_per_core, "", "DDD") \
  X(hbm_gbps_per_chip, "", "PPP") \
  X(hbm_gbps_per_core, "", "DDD") \
  X(dma_engines_per_core, "", "PPP") \
  X(dma_queues_per_engine, "", "PPP") \
  X(dma_partitions_per_engine, "", "PPP") \
  X(dma_engine_bytes_per_ns, "B/ns", "PPP") \
  X(dma_small_transfer_bytes_per_ns, "B/ns", "FAA") \
  X(dma_small_transfer_bytes, "bytes", "FAA") \
  X(dma_full_rate_transfer_bytes, "bytes", "PAA") \
  X(dma_engine_peak_bytes_per_ns, "B/ns", "PPP") \
  X(dma_descriptor_ns, "ns", "AAA") \
  X(dma_trigger_latency_ns, "ns", "AAA") \
  X(dma_indirect_setup_ns, "ns", "AAA") \
  X(swdge_descriptor_cycles, "cycles", "AAA") \
  X(dma_semaphore_write_ns, "ns", "AAA") \
  X(dma_cast_factor, "x", "AAA") \
  X(dma_issue_cycles, "cycles", "AAA") \
  X(dma_semaphore_increment, "", "PPP") \
  X(semaphores_per_core, "", "PPA") \
  X(semaphore_latency_cycles, "cycles", "AAA") \
  X(tensor_completion_latency_cycles, "cycles", "AAA") \
  X(engine_completion_latency_cycles, "cycles", "AAA") \
  X(collective_op_latency_ns, "ns", "FFA") \
  X(collective_hop_latency_ns, "ns", "APA") \
  X(collective_onchip_bus_gbps, "GB/s", "FAA") \
  X(collective_interchip_bus_gbps, "GB/s", "FFA") \
  X(collective_mesh_max_bytes, "bytes", "APA") \
  X(collective_rdh_max_bytes, "bytes", "APA") \
  X(execution_call_ns, "ns", "FAA") \
  X(execution_call_async_ns, "ns", "AAA") \
  X(host_link_bytes_per_ns, "B/ns", "AAA") \
  X(program_switch_ns, "ns", "AAA") \
  X(multi_core_start_ns, "ns", "FAA")
// clang-format on

SourceKind kind_of(char c) {
  switch (c) {
    case 'P':
      return SourceKind::published;
    case 'D':
      return SourceKind::derived;
    case 'F':
      return SourceKind::fitted;
    default:
      return SourceKind::assumption;
  }
}

template <class T>
Parameter make(std::string_view name, const T& v, std::string_view unit, std::string_view kinds,
               int generation) {
  Parameter p;
  p.name = name;
  p.unit = unit;
  const size_t i = static_cast<size_t>(std::clamp(generation - 2, 0, 2));
  p.kind = kind_of(i < kinds.size() ? kinds[i] : 'A');
  if constexpr (std::is_same_v<T, std::string_view>) {
    p.value = std::string(v);
    p.number = std::numeric_limits<double>::quiet_NaN();
  } else if constexpr (std::is_same_v<T, TargetKind>) {
    p.value = v == TargetKind::trn1 ? "trn1" : v == TargetKind::trn2 ? "trn2" : "trn3";
    p.number = std::numeric_limits<double>::quiet_NaN();
  } else if constexpr (std::is_same_v<T, bool>) {
    p.value = v ? "true" : "false";
    p.number = v ? 1 : 0;
  } else {
    p.number = static_cast<double>(v);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", p.number);
    p.value = buf;
  }
  return p;
}

}  // namespace

std::string_view source_kind_name(SourceKind k) {
  switch (k) {
    case SourceKind::published:
      return "published";
    case SourceKind::derived:
      return "derived";
    case SourceKind::fitted:
      return "fitted";
    case SourceKind::assumption:
      return "assumption";
  }
  return "assumption";
}

std::vector<Parameter> target_parameters(const Target& t) {
  std::vector<Parameter> out;
#define NEURONC_PARAMETER(member, unit, kinds) \
  out.push_back(make(#member, t.member, unit, kinds, t.core_generation));
  NEURONC_TARGET_PARAMETERS(NEURONC_PARAMETER)
#undef NEURONC_PARAMETER
  return out;
}

}  // namespace neuronc::device
