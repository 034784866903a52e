// CRC32C (crc32c.h). The table path is Intel's slicing-by-8; the hardware path runs the SSE4.2
// crc32 instruction over 8-byte words, three chains at once over a long input.
#include "artifact_format/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace neuronc::artifact {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected 0x1EDC6F41

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}

constexpr Tables kTables = make_tables();

uint32_t crc_table(const unsigned char* p, size_t n, uint32_t c) {
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
        kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_hw_serial(const unsigned char* p, size_t n,
                                                         uint32_t c) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c64);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

// The crc32 instruction takes three cycles and can start one per cycle, so one chain of it
// runs at a third of its rate. A long input goes as blocks of three strides, each stride its
// own chain (the first from the running value, the others from 0), joined by the linearity of
// the register: crc(A B) = shift_|B|(crc(A)) ^ crc_from_0(B), where shift_n advances a register
// over n zero bytes, a 32 x 32 matrix over GF(2) applied a byte at a time from four tables.
constexpr size_t kStride = 4096;  // bytes of each chain per block: a multiple of 8

struct StrideShift {
  std::array<std::array<uint32_t, 256>, 4> t;
  uint32_t operator()(uint32_t x) const {
    return t[0][x & 0xff] ^ t[1][(x >> 8) & 0xff] ^ t[2][(x >> 16) & 0xff] ^ t[3][x >> 24];
  }
};

const StrideShift& stride_shift() {
  static const StrideShift s = [] {
    static const std::array<unsigned char, kStride> zeros{};
    std::array<uint32_t, 32> column;  // shift_kStride of each register bit
    for (int i = 0; i < 32; ++i) column[i] = crc_hw_serial(zeros.data(), kStride, 1u << i);
    StrideShift r{};
    for (int k = 0; k < 4; ++k)
      for (uint32_t b = 0; b < 256; ++b)
        for (int j = 0; j < 8; ++j)
          if ((b >> j) & 1) r.t[k][b] ^= column[8 * k + j];
    return r;
  }();
  return s;
}

__attribute__((target("sse4.2"))) uint32_t crc_hw(const unsigned char* p, size_t n, uint32_t c) {
  if (n >= 3 * kStride) {
    const StrideShift& shift = stride_shift();
    while (n >= 3 * kStride) {
      uint64_t a = c, b = 0, d = 0;
      for (size_t i = 0; i < kStride; i += 8) {
        uint64_t wa, wb, wd;
        std::memcpy(&wa, p + i, 8);
        std::memcpy(&wb, p + kStride + i, 8);
        std::memcpy(&wd, p + 2 * kStride + i, 8);
        a = _mm_crc32_u64(a, wa);
        b = _mm_crc32_u64(b, wb);
        d = _mm_crc32_u64(d, wd);
      }
      c = shift(shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(d);
      p += 3 * kStride;
      n -= 3 * kStride;
    }
  }
  return crc_hw_serial(p, n, c);
}

bool have_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t crc32c(std::span<const std::byte> data, uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  uint32_t c = ~crc;
#if defined(__x86_64__)
  if (have_sse42()) return ~crc_hw(p, data.size(), c);
#endif
  return ~crc_table(p, data.size(), c);
}

}  // namespace neuronc::artifact
