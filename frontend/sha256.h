// SHA-256 (FIPS 180-4) of a byte span, for the provenance record of the input file. Small and
// dependency-free so the frontend needs no crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace neuronc::frontend {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> data);
  std::array<uint8_t, 32> finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex digest of `data`.
std::string sha256_hex(std::span<const std::byte> data);

}  // namespace neuronc::frontend
