// JSON tensors: decoding with every element checked against the dtype, encoding with exact
// values.
#include "examples/server/tensor_json.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace neuronc::server {
namespace {

using nlohmann::json;

constexpr DType kJsonDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64,
                                 DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};

std::string shape_text(const Shape& shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i) r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

// A short rendering of a JSON value for messages.
std::string brief(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// The integer range of an integral dtype.
std::pair<int64_t, int64_t> int_range(DType t) {
  switch (t) {
    case DType::i32:
      return {INT32_MIN, INT32_MAX};
    case DType::i16:
      return {INT16_MIN, INT16_MAX};
    case DType::i8:
      return {INT8_MIN, INT8_MAX};
    case DType::u8:
      return {0, UINT8_MAX};
    case DType::boolean:
      return {0, 1};
    default:
      return {INT64_MIN, INT64_MAX};
  }
}

Status element_error(const std::string& who, size_t k, const json& v, const std::string& want) {
  return Status(StatusCode::invalid_argument,
                who + ": data[" + std::to_string(k) + "] is " + brief(v) + ", expected " + want);
}

// One float element: a number or "nan" / "inf" / "-inf".
Result<double> float_element(const std::string& who, size_t k, const json& v, DType t) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return element_error(
      who, k, v, "a number, \"nan\", \"inf\" or \"-inf\" (" + std::string(dtype_name(t)) + ")");
}

// One integer element: an integral number within the dtype's range (true/false for bool).
Result<int64_t> int_element(const std::string& who, size_t k, const json& v, DType t) {
  const auto [lo, hi] = int_range(t);
  const std::string range =
      std::string(dtype_name(t)) + " [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (v.is_boolean()) {
    if (t == DType::boolean) return v.get<bool>() ? 1 : 0;
    return element_error(who, k, v, "an integer in " + range);
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return element_error(who, k, v, "an integer in " + range);
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) return element_error(who, k, v, "an integer in " + range);
    return i;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // Compared as doubles first: converting an out-of-range double to int64 is undefined.
    if (std::trunc(d) == d && d >= static_cast<double>(lo) && d <= static_cast<double>(hi) &&
        d < 9223372036854775808.0)
      return static_cast<int64_t>(d);
  }
  return element_error(who, k, v, "an integer in " + range);
}

template <typename T>
void put(void* base, size_t k, T v) {
  std::memcpy(static_cast<std::byte*>(base) + k * sizeof(T), &v, sizeof(T));
}
template <typename T>
T get(const void* base, size_t k) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(base) + k * sizeof(T), sizeof(T));
  return v;
}

json float_json(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  return d;
}

}  // namespace

uint16_t f32_to_f16_bits(float x) {
  const uint32_t b = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (b >> 16) & 0x8000;
  const uint32_t exp = (b >> 23) & 0xff;
  uint32_t mant = b & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 | mant >> 13 : 0));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {  // an f16 subnormal (or zero): shift the significand with its hidden bit
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - e;
    const uint32_t half = 1u << (shift - 1), rest = mant & ((1u << shift) - 1);
    uint32_t m = mant >> shift;
    if (rest > half || (rest == half && (m & 1))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t h = sign | static_cast<uint32_t>(e) << 10 | mant >> 13;
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry rounds up to inf correctly
  return static_cast<uint16_t>(h);
}

uint16_t f32_to_bf16_bits(float x) {
  const uint32_t b = std::bit_cast<uint32_t>(x);
  if ((b & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>(b >> 16 | 0x40);  // quiet NaN
  return static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | mant << 13);
  return std::bit_cast<float>(sign | (exp - 15 + 127) << 23 | mant << 13);
}

float bf16_bits_to_f32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

std::optional<DType> json_dtype(std::string_view name) {
  for (DType t : kJsonDTypes)
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

Result<Tensor> tensor_from_json(const json& j, const std::string& who, DType expected) {
  if (!j.is_object())
    return Status(StatusCode::invalid_argument,
                  who + ": expected an object {\"dtype\", \"shape\", \"data\"}, found " +
                      std::string(j.type_name()));
  for (const auto& [key, _] : j.items())
    if (key != "dtype" && key != "shape" && key != "data")
      return Status(StatusCode::invalid_argument,
                    who + ": unknown key '" + key + "', expected dtype, shape and data");
  if (!json_dtype(dtype_name(expected)))
    return Status(StatusCode::unimplemented, who + ": dtype " + std::string(dtype_name(expected)) +
                                                 " cannot be sent as JSON: expected a .npy body");
  if (const auto it = j.find("dtype"); it != j.end()) {
    if (!it->is_string())
      return Status(StatusCode::invalid_argument, who + ": dtype is " + brief(*it) +
                                                      ", expected a string such as \"" +
                                                      std::string(dtype_name(expected)) + "\"");
    const auto& name = it->get_ref<const std::string&>();
    if (name != dtype_name(expected))
      return Status(StatusCode::invalid_argument,
                    who + ": dtype is " + name + ", expected " + std::string(dtype_name(expected)));
  }
  const auto shape_it = j.find("shape");
  if (shape_it == j.end() || !shape_it->is_array())
    return Status(StatusCode::invalid_argument,
                  who + ": expected \"shape\": an array of non-negative integers, found " +
                      (shape_it == j.end() ? std::string("none") : brief(*shape_it)));
  Shape shape;
  for (const json& d : *shape_it) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      return Status(StatusCode::invalid_argument, who + ": shape " + brief(*shape_it) +
                                                      " has the dimension " + brief(d) +
                                                      ", expected a non-negative integer");
    shape.push_back(d.get<int64_t>());
  }
  const auto data_it = j.find("data");
  if (data_it == j.end() || !data_it->is_array())
    return Status(StatusCode::invalid_argument,
                  who + ": expected \"data\": a flat array of the elements in C order, found " +
                      (data_it == j.end() ? std::string("none") : brief(*data_it)));
  // Compared before anything is allocated: the shape alone may claim any size.
  const int64_t n = numel(shape);
  if (n < 0 || static_cast<uint64_t>(n) != data_it->size())
    return Status(StatusCode::invalid_argument,
                  who + ": data has " + std::to_string(data_it->size()) + " values, expected " +
                      (n == INT64_MAX ? std::string("more") : std::to_string(n)) + " (shape " +
                      shape_text(shape) + ")");

  Tensor t(expected, shape);
  void* out = t.mutable_data();
  for (size_t k = 0; k < data_it->size(); ++k) {
    const json& v = (*data_it)[k];
    if (dtype_is_float(expected)) {
      Result<double> d = float_element(who, k, v, expected);
      if (!d) return d.status();
      switch (expected) {
        case DType::f64:
          put<double>(out, k, *d);
          break;
        case DType::f32:
          put<float>(out, k, static_cast<float>(*d));
          break;
        case DType::f16:
          put<uint16_t>(out, k, f32_to_f16_bits(static_cast<float>(*d)));
          break;
        default:  // bf16
          put<uint16_t>(out, k, f32_to_bf16_bits(static_cast<float>(*d)));
          break;
      }
      continue;
    }
    Result<int64_t> i = int_element(who, k, v, expected);
    if (!i) return i.status();
    switch (dtype_size(expected)) {
      case 8:
        put<int64_t>(out, k, *i);
        break;
      case 4:
        put<int32_t>(out, k, static_cast<int32_t>(*i));
        break;
      case 2:
        put<int16_t>(out, k, static_cast<int16_t>(*i));
        break;
      default:  // i8 (two's complement), u8 and bool share the byte
        put<uint8_t>(out, k, static_cast<uint8_t>(*i));
        break;
    }
  }
  return t;
}

Result<json> tensor_to_json(const Tensor& tensor) {
  const DType t = tensor.dtype();
  if (!json_dtype(dtype_name(t)))
    return Status(StatusCode::unimplemented, "dtype " + std::string(dtype_name(t)) +
                                                 " cannot be sent as JSON: expected a .npy "
                                                 "request, which gets a .npy response");
  json data = json::array();
  const size_t n = static_cast<size_t>(tensor.numel());
  const void* p = tensor.data();
  data.get_ref<json::array_t&>().reserve(n);
  for (size_t k = 0; k < n; ++k) {
    switch (t) {
      case DType::f64:
        data.push_back(float_json(get<double>(p, k)));
        break;
      case DType::f32:
        data.push_back(float_json(get<float>(p, k)));
        break;
      case DType::f16:
        data.push_back(float_json(f16_bits_to_f32(get<uint16_t>(p, k))));
        break;
      case DType::bf16:
        data.push_back(float_json(bf16_bits_to_f32(get<uint16_t>(p, k))));
        break;
      case DType::i64:
        data.push_back(get<int64_t>(p, k));
        break;
      case DType::i32:
        data.push_back(get<int32_t>(p, k));
        break;
      case DType::i16:
        data.push_back(get<int16_t>(p, k));
        break;
      case DType::i8:
        data.push_back(get<int8_t>(p, k));
        break;
      case DType::u8:
        data.push_back(get<uint8_t>(p, k));
        break;
      default:  // bool
        data.push_back(get<uint8_t>(p, k) != 0);
        break;
    }
  }
  return json{{"dtype", dtype_name(t)}, {"shape", tensor.shape()}, {"data", std::move(data)}};
}

}  // namespace neuronc::server
