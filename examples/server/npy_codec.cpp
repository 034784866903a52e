// .npy decoding and encoding (numpy/lib/format.py): a 6-byte magic, a version, a header length,
// a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)} and the raw data.
#include "examples/server/npy_codec.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

namespace neuronc::server {
namespace {

struct NpyType {
  DType dtype;
  std::string_view descr;
  std::string_view alt;  // the other spelling NumPy accepts for a one-byte or byte-order-free type
};

// bfloat16 is not a NumPy type: ml_dtypes writes it as the two-byte void type, as `neuronc run`
// does (docs/CLI.md).
constexpr NpyType kTypes[] = {
    {DType::f32, "<f4", "<f4"},     {DType::f64, "<f8", "<f8"}, {DType::f16, "<f2", "<f2"},
    {DType::bf16, "<V2", "|V2"},    {DType::i64, "<i8", "<i8"}, {DType::i32, "<i4", "<i4"},
    {DType::i16, "<i2", "<i2"},     {DType::i8, "|i1", "<i1"},  {DType::u8, "|u1", "<u1"},
    {DType::boolean, "|b1", "<b1"}, {DType::c64, "<c8", "<c8"},
};

// A cursor over the header's dict literal, which NumPy writes with Python's repr.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  Status error(const std::string& message) const {
    return Status(StatusCode::invalid_argument,
                  what_ + ": .npy header " + message + " at offset " + std::to_string(p_));
  }
  void skip_space() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t')) ++p_;
  }
  bool take(char c) {
    skip_space();
    if (p_ < s_.size() && s_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  char peek() {
    skip_space();
    return p_ < s_.size() ? s_[p_] : '\0';
  }
  bool at_end() {
    skip_space();
    return p_ == s_.size();
  }
  // A '...' or "..." literal without escapes (no NumPy key or descr has one).
  Result<std::string> string() {
    skip_space();
    if (p_ >= s_.size() || (s_[p_] != '\'' && s_[p_] != '"'))
      return error("expected a quoted string, found " + found());
    const char q = s_[p_++];
    const size_t e = s_.find(q, p_);
    if (e == std::string_view::npos) return error("has an unterminated string");
    std::string v(s_.substr(p_, e - p_));
    p_ = e + 1;
    return v;
  }
  Result<bool> boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (s_.substr(p_, std::strlen(word)) == word) {
        p_ += std::strlen(word);
        return value;
      }
    }
    return error("expected True or False, found " + found());
  }
  // "(2, 3)", "(5,)", "()".
  Result<Shape> shape() {
    if (!take('(')) return error("expected a shape tuple, found " + found());
    Shape dims;
    while (!take(')')) {
      skip_space();
      const size_t start = p_;
      int64_t v = 0;
      while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
        if (v > (INT64_MAX - 9) / 10) return error("has a dimension that does not fit in int64");
        v = v * 10 + (s_[p_++] - '0');
      }
      if (p_ == start) return error("expected a dimension, found " + found());
      dims.push_back(v);
      if (!take(',') && peek() != ')') return error("expected ',' or ')', found " + found());
    }
    return dims;
  }

 private:
  std::string found() const {
    return p_ < s_.size() ? "'" + std::string(s_.substr(p_, 8)) + "'" : "the end";
  }
  std::string_view s_;
  const std::string& what_;
  size_t p_ = 0;
};

std::string shape_text(const Shape& shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i) r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

}  // namespace

std::optional<std::string_view> npy_descr(DType dtype) {
  for (const NpyType& t : kTypes)
    if (t.dtype == dtype) return t.descr;
  return std::nullopt;
}

Result<Tensor> decode_npy(std::string_view bytes, const std::string& what) {
  return decode_npy(std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()),
                    what);
}

Result<Tensor> decode_npy(std::span<const std::byte> bytes, const std::string& what) {
  static constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return Status(StatusCode::invalid_argument,
                  what + ": not a .npy file: expected the magic \\x93NUMPY and a header, found " +
                      std::to_string(bytes.size()) + " bytes without them");
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(bytes[8]) | static_cast<size_t>(bytes[9]) << 8;
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return Status(StatusCode::invalid_argument, what + ": .npy version " + std::to_string(major) +
                                                      " needs a 12-byte prefix, found " +
                                                      std::to_string(bytes.size()) + " bytes");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(bytes[8 + i]) << (8 * i);
    prefix = 12;
  } else {
    return Status(StatusCode::invalid_argument,
                  what + ": .npy version is " + std::to_string(major) + ", expected 1, 2 or 3");
  }
  if (header_len > bytes.size() - prefix)
    return Status(StatusCode::invalid_argument,
                  what + ": .npy header length " + std::to_string(header_len) + " exceeds the " +
                      std::to_string(bytes.size() - prefix) + " bytes after the prefix");

  HeaderParser h(std::string_view(reinterpret_cast<const char*>(bytes.data() + prefix), header_len),
                 what);
  std::map<std::string, bool> seen;
  std::string descr;
  bool fortran = false;
  Shape shape;
  if (!h.take('{')) return h.error("expected '{'");
  while (!h.take('}')) {
    Result<std::string> key = h.string();
    if (!key) return key.status();
    if (!h.take(':')) return h.error("expected ':' after '" + *key + "'");
    if (seen[*key]) return h.error("repeats the key '" + *key + "'");
    seen[*key] = true;
    if (*key == "descr") {
      Result<std::string> v = h.string();
      if (!v) return v.status();
      descr = *v;
    } else if (*key == "fortran_order") {
      Result<bool> v = h.boolean();
      if (!v) return v.status();
      fortran = *v;
    } else if (*key == "shape") {
      Result<Shape> v = h.shape();
      if (!v) return v.status();
      shape = std::move(*v);
    } else {
      return h.error("has the key '" + *key + "', expected only descr, fortran_order and shape");
    }
    if (!h.take(',') && h.peek() != '}') return h.error("expected ',' or '}'");
  }
  if (!h.at_end()) return h.error("has text after the dict");
  for (const char* key : {"descr", "fortran_order", "shape"})
    if (!seen[key]) return h.error(std::string("has no '") + key + "' key");

  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes)
    if (descr == t.descr || descr == t.alt) type = &t;
  if (!type)
    return Status(StatusCode::invalid_argument,
                  what + ": .npy dtype '" + descr +
                      "' is not supported: expected a little-endian <f4, <f8, <f2, <V2 "
                      "(bfloat16), <i8, <i4, <i2, |i1, |u1, |b1 or <c8");
  if (fortran && shape.size() > 1)
    return Status(StatusCode::invalid_argument,
                  what +
                      ": .npy array is in Fortran order, expected C order "
                      "(np.ascontiguousarray before np.save)");
  const size_t need = nbytes_of(numel(shape), type->dtype);
  const size_t have = bytes.size() - prefix - header_len;
  if (need == SIZE_MAX || need != have)
    return Status(
        StatusCode::invalid_argument,
        what + ": .npy shape " + shape_text(shape) + " of " + std::string(dtype_name(type->dtype)) +
            " needs " +
            (need == SIZE_MAX ? std::string("more than SIZE_MAX") : std::to_string(need)) +
            " data bytes, found " + std::to_string(have));
  Tensor t(type->dtype, shape);
  if (need) std::memcpy(t.mutable_data(), bytes.data() + prefix + header_len, need);
  return t;
}

Result<std::string> encode_npy(const Tensor& tensor) {
  const std::optional<std::string_view> descr = npy_descr(tensor.dtype());
  if (!descr)
    return Status(StatusCode::unimplemented, "dtype " + std::string(dtype_name(tensor.dtype())) +
                                                 " has no .npy type: expected one of f32, f64, "
                                                 "f16, bf16, i64, i32, i16, i8, u8, bool, c64");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    shape += std::to_string(tensor.shape()[i]) + (tensor.shape().size() == 1 ? "," : "") +
             (i + 1 < tensor.shape().size() ? ", " : "");
  shape += ")";
  std::string header =
      "{'descr': '" + std::string(*descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Spaces up to a 64-byte boundary for the data, then the newline NumPy ends a header with.
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(tensor.data()), tensor.nbytes());
  return out;
}

}  // namespace neuronc::server
