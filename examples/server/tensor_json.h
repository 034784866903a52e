// Tensors as JSON for the server: {"dtype": "f32", "shape": [2, 3], "data": [...]}, data flat in
// C order. Floats go out as the exact value of each element (f32, f16 and bf16 widen to double
// exactly, and the shortest text that reads back as that double is written), so a client that
// parses the number and narrows it to the dtype gets the element's bits; NaN and the infinities
// are the strings "nan", "inf" and "-inf" (JSON has no such numbers; a NaN's payload is not
// kept: use .npy for that). Booleans are true/false (0 and 1 are accepted on input).
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "neuronc/status.h"
#include "neuronc/tensor.h"

namespace neuronc::server {

// The dtype named `name` ("f32", "bool", ...) among the ones JSON can carry (every tensor type
// but c64 and the fp8 types), or nullopt.
std::optional<DType> json_dtype(std::string_view name);

// Decodes one tensor object; `who` names it in messages ("input 'x'"). `expected` is the dtype
// the signature declares: "dtype" may be left out, and a different one is refused naming both.
// Numbers are converted as NumPy's astype would from float64, except that f16 and bf16 round
// through f32 (round to nearest even at each step); an integer dtype takes only integral numbers
// within its range.
Result<Tensor> tensor_from_json(const nlohmann::json& j, const std::string& who, DType expected);

// The JSON object of `tensor`. Fails only for a dtype JSON cannot carry.
Result<nlohmann::json> tensor_to_json(const Tensor& tensor);

// The bits of a float narrowed to f16 / bf16 (round to nearest even), and back.
uint16_t f32_to_f16_bits(float x);
uint16_t f32_to_bf16_bits(float x);
float f16_bits_to_f32(uint16_t bits);
float bf16_bits_to_f32(uint16_t bits);

}  // namespace neuronc::server
