// SHA-256 (FIPS 180-4) of a byte span, for the provenance record of the input file. Small and
// dependency-free so the frontend needs no crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace neuronc::frontend {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> data);
  std::array<uint8_t, 32> finish();

 private:
  void blocks(const uint8_t* p, size_t n);  // n whole 64-byte blocks
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// True when this CPU's SHA extensions are used.
bool sha256_uses_sha_ni();

// Lower-case hex digest of `data`.
std::string sha256_hex(std::span<const std::byte> data);

// A digest as lower-case hex, and back (pairs of hex digits; a trailing odd digit is ignored).
std::string digest_hex(std::span<const uint8_t> digest);
std::vector<uint8_t> digest_from_hex(const std::string& hex);

}  // namespace neuronc::frontend
