// Builds zip archives in memory for tests: stored entries laid out like PyTorchStreamWriter
// (64-byte aligned payloads via an 'FB' extra field, data descriptors, ZIP64 end records) or like
// Python's zipfile, with hooks to corrupt any field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "frontend/zip_reader.h"

namespace neuronc::frontend::testing {

struct ZipFileSpec {
  ZipFileSpec(std::string n, std::string d, std::string local = "", uint16_t m = 0)
      : name(std::move(n)), data(std::move(d)), local_name(std::move(local)), method(m) {}
  std::string name;
  std::string data;
  std::string local_name;  // "" = same as name
  uint16_t method = 0;
};

struct ZipOptions {
  ZipOptions(bool a = true, bool z = true, bool d = true) : align64(a), zip64(z), descriptor(d) {}
  bool align64;     // 'FB' padding so payloads start at multiples of 64
  bool zip64;       // ZIP64 end record + locator before the classic one
  bool descriptor;  // bit 3 + data descriptor after each payload
};

inline void put16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>(v >> 8));
}
inline void put32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void set32(std::string& s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

inline uint32_t crc_of(const std::string& d) {
  return crc32(std::as_bytes(std::span<const char>(d.data(), d.size())));
}

inline std::string build_zip(const std::vector<ZipFileSpec>& files, const ZipOptions& o = {}) {
  std::string out;
  std::vector<uint64_t> offsets;
  for (const auto& f : files) {
    offsets.push_back(out.size());
    const std::string& lname = f.local_name.empty() ? f.name : f.local_name;
    uint32_t crc = crc_of(f.data);
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, o.descriptor ? 0x0808 : 0);
    put16(out, f.method);
    put16(out, 0);
    put16(out, 0);
    put32(out, o.descriptor ? 0 : crc);
    put32(out, o.descriptor ? 0 : static_cast<uint32_t>(f.data.size()));
    put32(out, o.descriptor ? 0 : static_cast<uint32_t>(f.data.size()));
    put16(out, static_cast<uint16_t>(lname.size()));
    size_t header_end = out.size() + 2 + lname.size();
    uint16_t extra = 0;
    if (o.align64) {
      size_t pad = (64 - (header_end + 4) % 64) % 64;
      extra = static_cast<uint16_t>(4 + pad);
    }
    put16(out, extra);
    out += lname;
    if (o.align64) {
      put16(out, 0x4246);
      put16(out, static_cast<uint16_t>(extra - 4));
      out.append(extra - 4, 'Z');
    }
    out += f.data;
    if (o.descriptor) {
      put32(out, 0x08074b50);
      put32(out, crc);
      put32(out, static_cast<uint32_t>(f.data.size()));
      put32(out, static_cast<uint32_t>(f.data.size()));
    }
  }
  uint64_t cd_start = out.size();
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    put32(out, 0x02014b50);
    put16(out, 20);
    put16(out, 20);
    put16(out, o.descriptor ? 0x0808 : 0);
    put16(out, f.method);
    put16(out, 0);
    put16(out, 0);
    put32(out, crc_of(f.data));
    put32(out, static_cast<uint32_t>(f.data.size()));
    put32(out, static_cast<uint32_t>(f.data.size()));
    put16(out, static_cast<uint16_t>(f.name.size()));
    put16(out, 0);
    put16(out, 0);
    put16(out, 0);
    put16(out, 0);
    put32(out, 0);
    put32(out, static_cast<uint32_t>(offsets[i]));
    out += f.name;
  }
  uint64_t cd_size = out.size() - cd_start;
  if (o.zip64) {
    uint64_t e64 = out.size();
    put32(out, 0x06064b50);
    put64(out, 44);
    put16(out, 45);
    put16(out, 45);
    put32(out, 0);
    put32(out, 0);
    put64(out, files.size());
    put64(out, files.size());
    put64(out, cd_size);
    put64(out, cd_start);
    put32(out, 0x07064b50);
    put32(out, 0);
    put64(out, e64);
    put32(out, 1);
  }
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<uint16_t>(files.size()));
  put16(out, static_cast<uint16_t>(files.size()));
  put32(out, static_cast<uint32_t>(cd_size));
  put32(out, static_cast<uint32_t>(cd_start));
  put16(out, 0);
  return out;
}

inline std::span<const std::byte> as_span(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

}  // namespace neuronc::frontend::testing
