// A strict NumPy .npy codec for the server's request and response bodies. It reads format
// versions 1.0-3.0 in C order with little-endian (or byte-order-free) descriptors that map one to
// one onto neuronc::DType, and writes 1.0. The example keeps its own codec (tools/npy.h is the
// CLI module's, which an example may not include) and returns errors as Status values, since the
// bytes come from the network.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "neuronc/dtype.h"
#include "neuronc/status.h"
#include "neuronc/tensor.h"

namespace neuronc::server {

// The NumPy type string of a dtype ("<f4", "|b1"; bfloat16 is ml_dtypes' "<V2"), or nullopt for
// a dtype .npy cannot carry (the fp8 types, the device-only types).
std::optional<std::string_view> npy_descr(DType dtype);

// Parses one .npy file; `what` names it in messages ("body", "part 'x'"). Every length is
// checked before it is used: "body: header length 900 exceeds the 812 bytes after the prefix".
Result<Tensor> decode_npy(std::span<const std::byte> bytes, const std::string& what);
Result<Tensor> decode_npy(std::string_view bytes, const std::string& what);

// The .npy bytes of `tensor` (format 1.0, data 64-byte aligned). Fails only for a dtype .npy
// cannot carry.
Result<std::string> encode_npy(const Tensor& tensor);

}  // namespace neuronc::server
