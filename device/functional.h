// Functional semantics of each instruction on real bytes (internal to the simulator). Inputs
// have passed verify_instruction, so shapes and bounds are trusted here. Run-time rules that
// depend on state (PSUM accumulation groups, local_gather indices) are checked here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "device/isa.h"
#include "device/numerics.h"
#include "device/status.h"
#include "device/target.h"

namespace neuronc::device {

// On-chip memories of one NeuronCore. Not thread-safe. SBUF and PSUM live in blocks of their
// own (kernels::zeroed_bytes: huge pages for SBUF): a matmul or DMA reads or writes one run in
// each of 128 partitions, every one a page apart, and on 4 KiB pages each is a TLB miss. On the
// host, partition p starts at p * pitch, one cache line past the partition's size: at the size
// itself (192 KiB, 16 KiB) every partition's run would map to the same few cache sets, and an
// instruction's 128 runs would evict each other.
struct CoreMemory {
  static constexpr uint64_t kPartitionPad = 64;
  std::shared_ptr<std::byte> sbuf_block, psum_block;
  uint64_t sbuf_pitch = 0, psum_pitch = 0;  // partition bytes + kPartitionPad
  std::span<std::byte> sbuf;                // partitions x sbuf_pitch, in sbuf_block
  std::span<std::byte> psum;                // partitions x psum_pitch, in psum_block
  // Per 4-byte PSUM word: 1 when the last write came from a matmul (an open accumulation
  // group may continue), 0 otherwise (TRAINIUM.md §3.4).
  std::vector<uint8_t> psum_from_matmul;
};

struct ExecContext {
  const Target* target = nullptr;
  std::byte* hbm = nullptr;
  uint64_t hbm_size = 0;
  CoreMemory* core = nullptr;
  Rounding rounding = Rounding::nearest_even;
  uint64_t seed = 0;      // stochastic rounding: mixed with `sequence` and the partition
  uint64_t sequence = 0;  // unique per executed instruction
  bool parallel = true;   // allow oneTBB inside large instructions
};

Status execute(const ExecContext& ctx, Engine engine, const Operation& op);

// Collective across cores: `srcs[c]`/`dsts[c]` are core c's operands (all in HBM).
Status execute_collective(const ExecContext& ctx, const std::vector<Collective>& per_core);

}  // namespace neuronc::device
