// Zip central-directory reader. Layout references: PKWARE APPNOTE 6.3.x sections 4.3.7 (local
// header), 4.3.12 (central header), 4.3.14-16 (ZIP64 end records), 4.5.3 (ZIP64 extra field).
// Every length is checked against the bytes before it is used.
#include "frontend/zip_reader.h"

#include <array>
#include <cstring>

#include "frontend/error.h"

namespace neuronc::frontend {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kEocd64Sig = 0x06064b50;
constexpr uint32_t kEocd64LocatorSig = 0x07064b50;
constexpr size_t kEocdSize = 22;
constexpr size_t kEocd64Size = 56;
constexpr size_t kLocatorSize = 20;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;
constexpr size_t kMaxCommentSearch = 65535 + kEocdSize;

uint16_t rd16(const std::byte* p) {
  return static_cast<uint16_t>(std::to_integer<uint16_t>(p[0]) |
                               (std::to_integer<uint16_t>(p[1]) << 8));
}
uint32_t rd32(const std::byte* p) {
  return std::to_integer<uint32_t>(p[0]) | (std::to_integer<uint32_t>(p[1]) << 8) |
         (std::to_integer<uint32_t>(p[2]) << 16) | (std::to_integer<uint32_t>(p[3]) << 24);
}
uint64_t rd64(const std::byte* p) {
  return rd32(p) | (uint64_t{rd32(p + 4)} << 32);
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "'";
}

// True when [off, off+len) lies inside [0, size), without overflow.
bool in_bounds(uint64_t off, uint64_t len, uint64_t size) {
  return off <= size && len <= size - off;
}

}  // namespace

uint32_t crc32(std::span<const std::byte> data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (std::byte b : data) c = table[(c ^ std::to_integer<uint32_t>(b)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string zip_name_problem(std::string_view name) {
  if (name.empty()) return "empty entry name";
  if (name.find('\0') != std::string_view::npos) return "NUL byte in entry name";
  if (name.front() == '/') return "absolute path";
  if (name.find('\\') != std::string_view::npos) return "backslash in entry name";
  if (name.size() >= 2 && name[1] == ':' &&
      ((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z'))) {
    return "drive prefix in entry name";
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return "'..' path segment";
    start = end + 1;
  }
  return "";
}

ZipArchive ZipArchive::open(std::span<const std::byte> bytes, std::string display_name) {
  ZipArchive z;
  z.bytes_ = bytes;
  z.name_ = std::move(display_name);
  const std::byte* b = bytes.data();
  const uint64_t size = bytes.size();
  auto fail = [&](const std::string& msg) -> Error { return Error(z.name_ + ": " + msg); };

  if (size < kEocdSize) {
    throw fail("not a zip archive: " + std::to_string(size) +
               " bytes is too small for an end-of-central-directory record (22 bytes)");
  }
  // 1. The classic end record: the last signature whose comment length fits the file.
  uint64_t eocd = UINT64_MAX;
  uint64_t lowest = size > kMaxCommentSearch ? size - kMaxCommentSearch : 0;
  for (uint64_t pos = size - kEocdSize + 1; pos-- > lowest;) {
    if (rd32(b + pos) == kEocdSig && pos + kEocdSize + rd16(b + pos + 20) <= size) {
      eocd = pos;
      break;
    }
  }
  if (eocd == UINT64_MAX) {
    throw fail("not a zip archive: no end-of-central-directory record (PK\\x05\\x06) in the last " +
               std::to_string(size - lowest) + " bytes");
  }
  const std::byte* e = b + eocd;
  uint16_t disk = rd16(e + 4), cd_disk = rd16(e + 6);
  uint64_t count_disk = rd16(e + 8), count = rd16(e + 10);
  uint64_t cd_size = rd32(e + 12), cd_offset = rd32(e + 16);

  // 2. ZIP64: the locator sits right before the classic record.
  bool saturated =
      count == 0xFFFF || count_disk == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF;
  bool has_locator = eocd >= kLocatorSize && rd32(b + eocd - kLocatorSize) == kEocd64LocatorSig;
  if (has_locator) {
    const std::byte* loc = b + eocd - kLocatorSize;
    uint64_t off64 = rd64(loc + 8);
    if (!in_bounds(off64, kEocd64Size, eocd - kLocatorSize)) {
      throw fail("ZIP64 end record at offset " + std::to_string(off64) +
                 " lies outside the file (locator at " + std::to_string(eocd - kLocatorSize) + ")");
    }
    const std::byte* e64 = b + off64;
    if (rd32(e64) != kEocd64Sig) {
      throw fail("ZIP64 end record at offset " + std::to_string(off64) + ": bad signature " +
                 hex32(rd32(e64)) + ", expected 0x06064b50");
    }
    disk = static_cast<uint16_t>(rd32(e64 + 16));
    cd_disk = static_cast<uint16_t>(rd32(e64 + 20));
    count_disk = rd64(e64 + 24);
    count = rd64(e64 + 32);
    cd_size = rd64(e64 + 40);
    cd_offset = rd64(e64 + 48);
  } else if (saturated) {
    throw fail("end record has saturated ZIP64 fields but no ZIP64 locator at offset " +
               std::to_string(eocd >= kLocatorSize ? eocd - kLocatorSize : 0));
  }
  if (disk != 0 || cd_disk != 0 || count_disk != count) {
    throw fail("multi-disk zip archives are not supported (disk " + std::to_string(disk) +
               ", central directory disk " + std::to_string(cd_disk) + ")");
  }
  if (!in_bounds(cd_offset, cd_size, size)) {
    throw fail("central directory at " + std::to_string(cd_offset) + "+" + std::to_string(cd_size) +
               " exceeds file size " + std::to_string(size));
  }
  if (count > kMaxEntries || count * kCentralSize > cd_size) {
    throw fail("end record declares " + std::to_string(count) +
               " entries but the central directory has " + std::to_string(cd_size) +
               " bytes (at least 46 per entry)");
  }

  // 3. Central directory entries.
  z.entries_.reserve(count);
  uint64_t pos = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    std::string where =
        "central directory entry " + std::to_string(i) + " at offset " + std::to_string(pos);
    if (!in_bounds(pos, kCentralSize, cd_end)) {
      throw fail(where + ": header runs past the end of the central directory (" +
                 std::to_string(cd_end) + ")");
    }
    const std::byte* c = b + pos;
    if (rd32(c) != kCentralSig) {
      throw fail(where + ": bad signature " + hex32(rd32(c)) + ", expected 0x02014b50");
    }
    ZipEntry ent;
    ent.index = static_cast<uint32_t>(i);
    ent.flags = rd16(c + 8);
    ent.method = rd16(c + 10);
    ent.crc32 = rd32(c + 16);
    ent.compressed_size = rd32(c + 20);
    ent.size = rd32(c + 24);
    uint16_t name_len = rd16(c + 28), extra_len = rd16(c + 30), comment_len = rd16(c + 32);
    uint32_t disk_start = rd16(c + 34);
    ent.local_header_offset = rd32(c + 42);
    uint64_t var_len = uint64_t{name_len} + extra_len + comment_len;
    if (!in_bounds(pos + kCentralSize, var_len, cd_end)) {
      throw fail(where + ": name/extra/comment (" + std::to_string(var_len) +
                 " bytes) run past the end of the central directory");
    }
    ent.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_len);
    // ZIP64 extended information: only the saturated fields are present, in this order.
    const std::byte* x = c + kCentralSize + name_len;
    const std::byte* x_end = x + extra_len;
    while (x_end - x >= 4) {
      uint16_t id = rd16(x), len = rd16(x + 2);
      if (len > x_end - x - 4) {
        throw fail(where + " " + quoted(ent.name) + ": extra field " + std::to_string(id) +
                   " declares " + std::to_string(len) + " bytes but only " +
                   std::to_string(x_end - x - 4) + " remain");
      }
      if (id == 0x0001) {
        const std::byte* f = x + 4;
        const std::byte* f_end = f + len;
        auto take = [&](uint64_t& field, const char* what) {
          if (f_end - f < 8) {
            throw fail(where + " " + quoted(ent.name) + ": ZIP64 extra field lacks the " + what);
          }
          field = rd64(f);
          f += 8;
        };
        if (ent.size == 0xFFFFFFFF) take(ent.size, "uncompressed size");
        if (ent.compressed_size == 0xFFFFFFFF) take(ent.compressed_size, "compressed size");
        if (ent.local_header_offset == 0xFFFFFFFF) take(ent.local_header_offset, "offset");
        if (disk_start == 0xFFFF) {
          if (f_end - f < 4) throw fail(where + ": ZIP64 extra field lacks the disk number");
          disk_start = rd32(f);
        }
      }
      x += 4 + len;
    }
    if (disk_start != 0) {
      throw fail(where + " " + quoted(ent.name) + ": starts on disk " + std::to_string(disk_start) +
                 "; multi-disk archives are not supported");
    }
    if (std::string p = zip_name_problem(ent.name); !p.empty()) {
      throw fail("entry " + quoted(ent.name) + ": " + p + " is not allowed");
    }
    if (ent.flags & 0x0001) {
      throw fail("entry " + quoted(ent.name) +
                 " is encrypted; encrypted archives are not supported");
    }
    if (ent.method != 0 && ent.method != 8) {
      throw fail("entry " + quoted(ent.name) + ": compression method " +
                 std::to_string(ent.method) + " is not supported (expected 0, stored)");
    }
    if (ent.method == 0 && ent.compressed_size != ent.size) {
      throw fail("entry " + quoted(ent.name) + ": stored entry has compressed size " +
                 std::to_string(ent.compressed_size) + " but size " + std::to_string(ent.size));
    }

    // 4. The local header: its name must match; the payload starts after its own extra field
    //    (which differs from the central one: PyTorch pads it with 'FB' to align payloads).
    uint64_t lh = ent.local_header_offset;
    if (!in_bounds(lh, kLocalSize, size)) {
      throw fail("entry " + quoted(ent.name) + ": local header at offset " + std::to_string(lh) +
                 " exceeds file size " + std::to_string(size));
    }
    const std::byte* l = b + lh;
    if (rd32(l) != kLocalSig) {
      throw fail("entry " + quoted(ent.name) + ": local header at offset " + std::to_string(lh) +
                 " has bad signature " + hex32(rd32(l)) + ", expected 0x04034b50");
    }
    uint16_t lname_len = rd16(l + 26), lextra_len = rd16(l + 28);
    if (!in_bounds(lh + kLocalSize, uint64_t{lname_len} + lextra_len, size)) {
      throw fail("entry " + quoted(ent.name) + ": local header name/extra at offset " +
                 std::to_string(lh + kLocalSize) + " exceed file size " + std::to_string(size));
    }
    std::string_view lname(reinterpret_cast<const char*>(l + kLocalSize), lname_len);
    if (lname != ent.name) {
      throw fail("entry " + std::to_string(i) + ": local header name " + quoted(lname) +
                 " differs from central " + quoted(ent.name));
    }
    ent.data_offset = lh + kLocalSize + lname_len + lextra_len;
    if (!in_bounds(ent.data_offset, ent.compressed_size, size)) {
      throw fail("entry " + quoted(ent.name) + ": declared " + std::to_string(ent.compressed_size) +
                 " bytes at offset " + std::to_string(ent.data_offset) + ", archive is " +
                 std::to_string(size) + " bytes");
    }
    if (z.by_name_.count(ent.name) != 0) {
      throw fail("duplicate entry " + quoted(ent.name));
    }
    z.by_name_.emplace(ent.name, static_cast<uint32_t>(i));
    z.entries_.push_back(std::move(ent));
    pos += kCentralSize + var_len;
  }
  return z;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

std::span<const std::byte> ZipArchive::data(const ZipEntry& e) const {
  if (e.method != 0) {
    throw Error(name_ + ": entry " + quoted(e.name) + " is compressed (method " +
                std::to_string(e.method) +
                ", deflate); neuronc reads only stored entries so weights can be memory-mapped "
                "as PyTorch writes them. Re-save the model with torch.export.save, or re-zip "
                "with 'zip -0'");
  }
  return bytes_.subspan(e.data_offset, e.size);
}

std::string_view ZipArchive::text(const ZipEntry& e) const {
  auto d = data(e);
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

void ZipArchive::verify_crc(const ZipEntry& e) const {
  uint32_t got = crc32(data(e));
  if (got != e.crc32) {
    throw Error(name_ + ": entry " + quoted(e.name) + ": CRC-32 is " + hex32(got) +
                ", central directory says " + hex32(e.crc32));
  }
}

}  // namespace neuronc::frontend
