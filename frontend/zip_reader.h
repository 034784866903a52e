// A zip reader over bytes already in memory (normally an mmap). It reads the central directory
// (with ZIP64), validates every entry against the file bounds once, and hands out payloads as
// spans into the same memory: weights are never copied. Nested zips (a STORED entry that is
// itself a zip, as in legacy torch.export archives) are opened in place with open() on the
// entry's payload.
//
// Only STORED (method 0) payloads can be read. DEFLATE entries are listed but refused when read:
// PyTorch's writers never compress (PyTorchStreamWriter and the legacy zipfile writer both use
// method 0), a deflated weight could not be memory-mapped and would have to be inflated into a
// heap copy, and a zlib dependency next to code the loader's build rules keep light is not worth
// it for archives only a user's manual re-zip produces. The message says how to fix the file.
//
// Thread-safety: immutable after open(); concurrent readers are fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace neuronc::frontend {

struct ZipEntry {
  std::string name;
  uint32_t index = 0;   // position in the central directory
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint16_t flags = 0;   // general-purpose bit flags
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;  // uncompressed
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;  // payload start, relative to the first byte of the zip
};

class ZipArchive {
 public:
  // Parses and validates `bytes` as a zip. `display_name` starts every error message (the file
  // path, or "outer.pt2!inner/entry" for a nested zip). Throws frontend::Error.
  static ZipArchive open(std::span<const std::byte> bytes, std::string display_name);

  const std::string& display_name() const { return name_; }
  std::span<const std::byte> bytes() const { return bytes_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  // Null when absent. Names are compared byte for byte.
  const ZipEntry* find(std::string_view name) const;
  // The payload of a STORED entry; throws for a compressed one (see the file comment).
  std::span<const std::byte> data(const ZipEntry& e) const;
  // The payload as text (JSON, version records).
  std::string_view text(const ZipEntry& e) const;
  // Recomputes the CRC-32 of a STORED entry and throws when it differs from the directory.
  void verify_crc(const ZipEntry& e) const;

  // Upper bound on entries; a real archive has tens to thousands.
  static constexpr uint64_t kMaxEntries = 1u << 20;

 private:
  std::span<const std::byte> bytes_;
  std::string name_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, uint32_t, std::less<>> by_name_;
};

// CRC-32 (ISO-HDLC, the zip polynomial).
uint32_t crc32(std::span<const std::byte> data);

// Checks an entry name for what a safe archive never holds: empty names, NUL, a leading '/',
// '\\', a drive prefix ("C:"), or a ".." segment. Returns "" when fine, else the reason.
std::string zip_name_problem(std::string_view name);

}  // namespace neuronc::frontend
