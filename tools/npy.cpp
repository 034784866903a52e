// .npy reading and writing (format: numpy/lib/format.py, versions 1.0-3.0).
#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace neuronc::tools {
namespace {

struct TypeInfo {
  NpyType type;
  const char* descr;
  const char* alt;  // accepted spelling ("|u1" vs "<u1")
  const char* name;
  size_t size;
};

// bfloat16 is not a NumPy type: ml_dtypes writes it as the void type "<V2"; we write "<V2"
// too and accept it as bf16 (documented in docs/CLI.md).
constexpr TypeInfo kTypes[] = {
    {NpyType::f64, "<f8", "<f8", "float64", 8},   {NpyType::f32, "<f4", "<f4", "float32", 4},
    {NpyType::f16, "<f2", "<f2", "float16", 2},   {NpyType::bf16, "<V2", "|V2", "bfloat16", 2},
    {NpyType::i64, "<i8", "<i8", "int64", 8},     {NpyType::i32, "<i4", "<i4", "int32", 4},
    {NpyType::i16, "<i2", "<i2", "int16", 2},     {NpyType::i8, "|i1", "<i1", "int8", 1},
    {NpyType::u8, "|u1", "<u1", "uint8", 1},      {NpyType::boolean, "|b1", "<b1", "bool", 1},
    {NpyType::c64, "<c8", "<c8", "complex64", 8},
};

const TypeInfo& info(NpyType t) {
  for (const TypeInfo& i : kTypes) {
    if (i.type == t) return i;
  }
  return kTypes[1];
}

// Value of `key` in the header dict text: the characters after "'key':" up to the matching end.
std::string dict_value(const std::string& header, const std::string& key, const std::string& what) {
  const std::string k = "'" + key + "'";
  size_t p = header.find(k);
  if (p == std::string::npos) throw NpyError(what + ": header has no " + k + " entry");
  p = header.find(':', p + k.size());
  if (p == std::string::npos) throw NpyError(what + ": malformed header near " + k);
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p >= header.size()) throw NpyError(what + ": malformed header near " + k);
  size_t e = p;
  if (header[p] == '(') {
    e = header.find(')', p);
    if (e == std::string::npos) throw NpyError(what + ": unterminated shape tuple");
    return header.substr(p, e - p + 1);
  }
  if (header[p] == '\'' || header[p] == '"') {
    e = header.find(header[p], p + 1);
    if (e == std::string::npos) throw NpyError(what + ": unterminated string in header");
    return header.substr(p + 1, e - p - 1);
  }
  while (e < header.size() && header[e] != ',' && header[e] != '}') ++e;
  return header.substr(p, e - p);
}

}  // namespace

size_t NpyArray::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t npy_type_size(NpyType t) {
  return info(t).size;
}
const char* npy_descr(NpyType t) {
  return info(t).descr;
}
const char* npy_type_name(NpyType t) {
  return info(t).name;
}

NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& what) {
  static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    throw NpyError(what + ": not a .npy file (expected the magic \\x93NUMPY, found " +
                   std::to_string(bytes.size()) + " bytes without it)");
  }
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(bytes[8]) | (static_cast<size_t>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw NpyError(what + ": truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(bytes[8 + i]) << (8 * i);
    header_start = 12;
  } else {
    throw NpyError(what + ": .npy format version " + std::to_string(major) +
                   " is not supported (expected 1, 2 or 3)");
  }
  if (header_len > bytes.size() - header_start) {
    throw NpyError(what + ": header length " + std::to_string(header_len) + " exceeds the " +
                   std::to_string(bytes.size() - header_start) + " bytes after the prefix");
  }
  const std::string header(reinterpret_cast<const char*>(bytes.data() + header_start), header_len);
  const std::string descr = dict_value(header, "descr", what);
  const std::string fortran = dict_value(header, "fortran_order", what);
  const std::string shape_text = dict_value(header, "shape", what);
  NpyArray a;
  bool found = false;
  for (const TypeInfo& t : kTypes) {
    if (descr == t.descr || descr == t.alt) {
      a.type = t.type;
      found = true;
    }
  }
  if (!found) {
    throw NpyError(what + ": dtype '" + descr +
                   "' is not supported (expected little-endian float64/32/16, bfloat16 (<V2), "
                   "int64/32/16/8, uint8, bool or complex64)");
  }
  if (fortran != "False" && fortran != "True") {
    throw NpyError(what + ": fortran_order is '" + fortran + "', expected True or False");
  }
  // "(2, 3)", "(5,)", "()".
  size_t p = 1;
  while (p < shape_text.size() - 1) {
    while (p < shape_text.size() && (shape_text[p] == ' ' || shape_text[p] == ',')) ++p;
    if (p >= shape_text.size() - 1) break;
    size_t e = p;
    while (e < shape_text.size() && std::isdigit(static_cast<unsigned char>(shape_text[e]))) ++e;
    if (e == p) throw NpyError(what + ": malformed shape " + shape_text);
    if (e - p > 15) throw NpyError(what + ": dimension in " + shape_text + " is too large");
    a.shape.push_back(std::stoll(shape_text.substr(p, e - p)));
    p = e;
  }
  size_t numel = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && numel > (SIZE_MAX / 16) / static_cast<size_t>(d))
      throw NpyError(what + ": shape " + shape_text + " is too large");
    numel *= static_cast<size_t>(d);
  }
  const size_t need = numel * npy_type_size(a.type);
  const size_t have = bytes.size() - header_start - header_len;
  if (have != need) {
    throw NpyError(what + ": shape " + shape_text + " of " + npy_type_name(a.type) + " needs " +
                   std::to_string(need) + " data bytes, file has " + std::to_string(have));
  }
  const std::byte* d = bytes.data() + header_start + header_len;
  if (fortran == "True" && a.shape.size() > 1 && numel > 0) {
    // Column-major (np.save of a transposed view): element (i0, ..., in-1) is at
    // sum(i_k * prod(shape[0..k))). Reordered to C order, which everything downstream reads.
    const size_t es = npy_type_size(a.type), rank = a.shape.size();
    std::vector<size_t> fstride(rank, 1);
    for (size_t k = 1; k < rank; ++k)
      fstride[k] = fstride[k - 1] * static_cast<size_t>(a.shape[k - 1]);
    a.data.resize(need);
    std::vector<int64_t> idx(rank, 0);
    for (size_t c = 0; c < numel; ++c) {
      size_t f = 0;
      for (size_t k = 0; k < rank; ++k) f += static_cast<size_t>(idx[k]) * fstride[k];
      std::memcpy(a.data.data() + c * es, d + f * es, es);
      for (size_t k = rank; k-- > 0;) {  // next C-order index
        if (++idx[k] < a.shape[k]) break;
        idx[k] = 0;
      }
    }
    return a;
  }
  a.data.assign(d, d + need);
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw NpyError(path + ": cannot open");
  std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(std::span(reinterpret_cast<const std::byte*>(buf.data()), buf.size()), path);
}

std::vector<std::byte> encode_npy(const NpyArray& a) {
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) shape += std::to_string(a.shape[i]) + ", ";
  if (a.shape.size() > 1) shape.resize(shape.size() - 2);
  if (a.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = std::string("{'descr': '") + npy_descr(a.type) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; end with a newline.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<std::byte> out;
  const unsigned char prefix[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  for (unsigned char c : prefix) out.push_back(static_cast<std::byte>(c));
  out.push_back(static_cast<std::byte>(header.size() & 0xff));
  out.push_back(static_cast<std::byte>(header.size() >> 8));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

void write_npy(const std::string& path, const NpyArray& a) {
  std::vector<std::byte> bytes = encode_npy(a);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw NpyError(path + ": cannot create");
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw NpyError(path + ": write failed");
}

}  // namespace neuronc::tools
