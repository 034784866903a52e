// SHA-256 against the FIPS 180-4 example vectors, through whichever path this CPU uses
// (portable or SHA-NI), fed whole and in odd-sized pieces.
#include "frontend/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace neuronc::frontend {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::string hex(const std::array<uint8_t, 32>& d) {
  static const char* k = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out.push_back(k[b >> 4]);
    out.push_back(k[b & 15]);
  }
  return out;
}

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex(bytes_of("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(bytes_of("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(bytes_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(bytes_of(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data.push_back(static_cast<char>((i * 131) ^ (i >> 3)));
  std::string whole = sha256_hex(bytes_of(data));
  for (size_t piece : {1u, 3u, 63u, 64u, 65u, 1000u}) {
    Sha256 h;
    for (size_t off = 0; off < data.size(); off += piece) {
      h.update(bytes_of(data).subspan(off, std::min(piece, data.size() - off)));
    }
    EXPECT_EQ(hex(h.finish()), whole) << piece;
  }
}

}  // namespace
}  // namespace neuronc::frontend
