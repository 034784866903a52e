// Fuzzes the parsing of a predict body (untrusted bytes from the network) against a fixed
// signature — a symbolic batch dim, an f32 input and an int64 index input with a valid range:
// any body must parse or come back as an error status, never crash, and an accepted request must
// hold tensors that fit the signature. The first byte picks the encoding, the rest is the body.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "examples/server/predict_request.h"

namespace {

using namespace neuronc;

std::vector<TensorSpec> inputs_of(int count) {
  TensorSpec x{"x", DType::f32, {{0, "s0", 1, 1, 8}, {4, "", 1, 0, 0}}};
  TensorSpec ids{"ids", DType::i64, {{0, "s0", 1, 1, 8}}, ValueRange{0, 10, "rows"}};
  if (count == 1) return {x};
  return {x, ids};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<TensorSpec> outputs = {{"y", DType::f32, {{0, "s0", 1, 1, 8}}}};
  const uint8_t mode = data[0] % 4;
  const std::vector<TensorSpec> inputs = inputs_of(mode == 1 ? 1 : 2);
  std::vector<server::BodyPart> parts;
  std::string_view type = "application/json";
  if (mode == 1) type = "application/x-npy";
  if (mode == 2) {
    // Two parts named after the inputs: a little-endian u16 length, the first part, the second.
    type = "multipart/form-data";
    if (body.size() < 2) return 0;
    const size_t n = std::min<size_t>(
        static_cast<uint8_t>(body[0]) | static_cast<uint8_t>(body[1]) << 8, body.size() - 2);
    parts.push_back({"x", std::string(body.substr(2, n))});
    parts.push_back({"ids", std::string(body.substr(2 + n))});
  }
  if (mode == 3) type = "text/plain";
  auto r = server::parse_predict_request(inputs, outputs, type, body, parts, "");
  if (!r.is_ok()) {
    if (r.status().message().empty()) abort();
    return 0;
  }
  if (mode == 3 || r->inputs.size() != inputs.size()) abort();
  if (!server::validate_inputs(inputs, r->inputs).is_ok()) abort();
  return 0;
}
