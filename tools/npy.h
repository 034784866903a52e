// NumPy .npy files: the input and output format of `neuronc run` and `verify`. Reads format
// versions 1.0–3.0 with little-endian (or byte-order-free) descriptors, C order; writes 1.0.
// Thread-safety: free functions, no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace neuronc::tools {

// Element types neuronc exchanges; `descr` is the NumPy type string ("<f4", "|b1", ...).
enum class NpyType { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean, c64 };

struct NpyArray {
  NpyType type = NpyType::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte> data;  // C order, little-endian
  size_t numel() const;
};

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

size_t npy_type_size(NpyType t);
const char* npy_descr(NpyType t);
const char* npy_type_name(NpyType t);  // "float32", "bfloat16", "int64", ...

// Parses .npy bytes; `what` names the source in messages. Throws NpyError.
NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& what);
NpyArray read_npy(const std::string& path);
std::vector<std::byte> encode_npy(const NpyArray& a);
void write_npy(const std::string& path, const NpyArray& a);

}  // namespace neuronc::tools
