// Segment payload codec: zstd compression at a fixed level (deterministic output) and checked
// decompression that refuses a frame whose declared or actual size differs from the segment
// table's raw size. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "artifact_format/status.h"

namespace neuronc::artifact {

std::vector<std::byte> zstd_compress(std::span<const std::byte> raw, int level);

// Decompresses a frame that must hold exactly `raw_size` bytes. The frame header is checked
// before anything is allocated.
Result<std::vector<std::byte>> zstd_decompress(std::span<const std::byte> stored,
                                               uint64_t raw_size);

}  // namespace neuronc::artifact
