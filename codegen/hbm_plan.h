// HBM planning: where each buffer of a device partition lives in the partition's HBM arena.
//
// The arena is [inputs][outputs][constants][scratch], each buffer 64-byte aligned. Scratch
// buffers (intermediates) are placed greedily, largest first, at the lowest offset no buffer
// with an overlapping lifetime uses, so intermediates whose lifetimes do not overlap share
// bytes (first-fit by size over lifetime intervals).
#pragma once

#include <cstdint>
#include <vector>

#include "device/target.h"

namespace neuronc::codegen {

inline constexpr uint64_t kHbmAlign = 64;  // bytes; every buffer starts on this boundary

struct HbmBuffer {
  enum Region { input, output, constant, scratch } region = scratch;
  uint64_t bytes = 0;
  int first = 0;        // index of the kernel that writes it (inputs, constants: -1)
  int last = 0;         // index of the last kernel reading it (or any view of it)
  uint64_t offset = 0;  // set by plan_hbm
};

struct HbmPlan {
  uint64_t size = 0;              // arena bytes
  uint64_t scratch_base = 0;      // first scratch byte
  uint64_t scratch_end = 0;       // one past the last scratch byte
  uint64_t scratch_unshared = 0;  // scratch bytes without lifetime sharing
};

// Assigns every buffer's offset. Throws codegen::Error when the arena exceeds the HBM one
// NeuronCore of `t` has.
HbmPlan plan_hbm(std::vector<HbmBuffer>& buffers, const device::Target& t);

}  // namespace neuronc::codegen
