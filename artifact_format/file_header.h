// The fixed 64-byte little-endian header at offset 0 of every artifact (docs/ARTIFACT_FORMAT.md
// §header). Encoding and decoding go byte by byte, so they work on any host and any alignment.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "artifact_format/status.h"

namespace neuronc::artifact {

inline constexpr std::array<uint8_t, 8> kMagic = {0x89, 'N', 'C', 'A', '\r', '\n', 0x1a, '\n'};
inline constexpr uint32_t kHeaderSize = 64;
inline constexpr uint64_t kSegmentAlignment = 4096;

struct FileHeader {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  uint32_t header_size = kHeaderSize;
  uint64_t root_offset = 0;  // FlatBuffers root (file identifier "NCA1")
  uint64_t root_size = 0;
  uint64_t segments_offset = 0;  // start of the segment region, 4096-aligned
  uint64_t segments_size = 0;    // bytes of the segment region (file ends there)
  uint32_t root_crc32c = 0;
  uint32_t flags = 0;  // none defined in 1.0; must be 0
  uint32_t reserved = 0;
  uint32_t header_crc32c = 0;  // CRC32C of bytes [0, 60)
};

// Writes `h` with a freshly computed header CRC into `out`.
void encode_header(const FileHeader& h, std::span<std::byte, kHeaderSize> out);

// Decodes and checks size, magic, version compatibility and the header CRC (not the layout).
// `reader_minor` is the newest minor the caller understands (tests simulate newer readers).
Result<FileHeader> decode_header(std::span<const std::byte> file, uint16_t reader_minor = 0xffff);

}  // namespace neuronc::artifact
