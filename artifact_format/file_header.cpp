// Header encoding (file_header.h).
#include "artifact_format/file_header.h"

#include <cstring>
#include <string>

#include "artifact_format/artifact.h"
#include "artifact_format/crc32c.h"

namespace neuronc::artifact {
namespace {

template <typename T>
void put(std::byte* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

template <typename T>
T get(const std::byte* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

void encode_header(const FileHeader& h, std::span<std::byte, kHeaderSize> out) {
  std::byte* p = out.data();
  std::memset(p, 0, kHeaderSize);
  std::memcpy(p, kMagic.data(), kMagic.size());
  put<uint16_t>(p + 8, h.format_major);
  put<uint16_t>(p + 10, h.format_minor);
  put<uint32_t>(p + 12, h.header_size);
  put<uint64_t>(p + 16, h.root_offset);
  put<uint64_t>(p + 24, h.root_size);
  put<uint64_t>(p + 32, h.segments_offset);
  put<uint64_t>(p + 40, h.segments_size);
  put<uint32_t>(p + 48, h.root_crc32c);
  put<uint32_t>(p + 52, h.flags);
  put<uint32_t>(p + 56, h.reserved);
  put<uint32_t>(p + 60, crc32c(std::span<const std::byte>(p, 60)));
}

Result<FileHeader> decode_header(std::span<const std::byte> file, uint16_t reader_minor) {
  if (reader_minor == 0xffff) reader_minor = kFormatMinor;
  if (file.size() < kHeaderSize)
    return Status(StatusCode::truncated, "file is " + std::to_string(file.size()) +
                                             " bytes but the header needs " +
                                             std::to_string(kHeaderSize));
  const std::byte* p = file.data();
  if (std::memcmp(p, kMagic.data(), kMagic.size()) != 0)
    return Status(StatusCode::corrupt,
                  "bad magic: expected \\x89NCA\\r\\n\\x1a\\n, this is not a neuronc artifact");
  FileHeader h;
  h.format_major = get<uint16_t>(p + 8);
  h.format_minor = get<uint16_t>(p + 10);
  h.header_size = get<uint32_t>(p + 12);
  h.root_offset = get<uint64_t>(p + 16);
  h.root_size = get<uint64_t>(p + 24);
  h.segments_offset = get<uint64_t>(p + 32);
  h.segments_size = get<uint64_t>(p + 40);
  h.root_crc32c = get<uint32_t>(p + 48);
  h.flags = get<uint32_t>(p + 52);
  h.reserved = get<uint32_t>(p + 56);
  h.header_crc32c = get<uint32_t>(p + 60);
  // Magic and version (bytes 0-11) are frozen across all majors, so they are checked before the
  // CRC: a file from another major is refused by version, whatever its header layout.
  const std::string ours = std::to_string(kFormatMajor) + "." + std::to_string(reader_minor);
  const std::string theirs = std::to_string(h.format_major) + "." + std::to_string(h.format_minor);
  if (h.format_major != kFormatMajor)
    return Status(StatusCode::incompatible_version,
                  "artifact format " + theirs + " has another major version than this reader (" +
                      ours + "): expected major " + std::to_string(kFormatMajor));
  if (h.format_minor > reader_minor)
    return Status(StatusCode::incompatible_version,
                  "artifact format " + theirs + " is newer than this reader (" + ours +
                      "): expected minor <= " + std::to_string(reader_minor) +
                      "; upgrade the loader");
  const uint32_t want = crc32c(file.first(60));
  if (want != h.header_crc32c)
    return Status(StatusCode::corrupt, "header checksum mismatch: stored " +
                                           hex32(h.header_crc32c) + ", computed " + hex32(want));
  return h;
}

}  // namespace neuronc::artifact
