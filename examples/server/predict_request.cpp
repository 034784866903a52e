// Predict bodies: content-type dispatch, per-encoding decoding, and the signature check every
// request passes before it is queued.
#include "examples/server/predict_request.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "examples/server/npy_codec.h"
#include "examples/server/tensor_json.h"

namespace neuronc::server {
namespace {

using nlohmann::json;

std::string shape_text(const Shape& shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i) r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

std::string names_of(const std::vector<TensorSpec>& specs) {
  std::string r;
  for (const TensorSpec& s : specs) r += (r.empty() ? "" : ", ") + s.name;
  return r;
}

// The media type of a Content-Type header, lower-cased, without parameters.
std::string media_type(std::string_view content_type) {
  std::string t(content_type.substr(0, content_type.find(';')));
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t b = 0;
  while (b < t.size() && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
  t.erase(0, b);
  std::transform(t.begin(), t.end(), t.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return t;
}

Status unknown_input(const std::string& name, const std::vector<TensorSpec>& specs) {
  return Status(StatusCode::not_found,
                "unknown input '" + name + "': expected one of " + names_of(specs));
}

Status missing_input(const TensorSpec& spec) {
  return Status(StatusCode::invalid_argument,
                "input '" + spec.name + "' is missing: expected " + spec_text(spec));
}

Result<std::vector<Tensor>> inputs_from_json(const std::vector<TensorSpec>& specs,
                                             std::string_view body) {
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::parse_error& e) {
    // nlohmann counts bytes from 1; the offset of the byte it stopped at is one less.
    const size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, body.size());
    return Status(StatusCode::invalid_argument,
                  "body is not valid JSON (at offset " + std::to_string(at) + " of " +
                      std::to_string(body.size()) + " bytes): expected {\"inputs\": ...}");
  }
  if (!doc.is_object())
    return Status(StatusCode::invalid_argument, "body is a JSON " + std::string(doc.type_name()) +
                                                    ", expected an object {\"inputs\": ...}");
  for (const auto& [key, _] : doc.items())
    if (key != "inputs")
      return Status(StatusCode::invalid_argument,
                    "unknown key '" + key + "' in the body: expected only \"inputs\"");
  const auto it = doc.find("inputs");
  if (it == doc.end())
    return Status(StatusCode::invalid_argument,
                  "body has no \"inputs\": expected an object by input name or a list in the "
                  "signature's order (" +
                      names_of(specs) + ")");
  std::vector<Tensor> tensors(specs.size());
  if (it->is_array()) {
    if (it->size() != specs.size())
      return Status(StatusCode::invalid_argument,
                    "\"inputs\" lists " + std::to_string(it->size()) + " tensors, expected " +
                        std::to_string(specs.size()) + " (" + names_of(specs) + ")");
    for (size_t i = 0; i < specs.size(); ++i) {
      Result<Tensor> t =
          tensor_from_json((*it)[i], "input '" + specs[i].name + "'", specs[i].dtype);
      if (!t) return t.status();
      tensors[i] = std::move(*t);
    }
    return tensors;
  }
  if (!it->is_object())
    return Status(StatusCode::invalid_argument, "\"inputs\" is a JSON " +
                                                    std::string(it->type_name()) +
                                                    ", expected an object by input name or a list");
  std::vector<bool> given(specs.size(), false);
  for (const auto& [name, value] : it->items()) {
    size_t i = 0;
    while (i < specs.size() && specs[i].name != name) ++i;
    if (i == specs.size()) return unknown_input(name, specs);
    // nlohmann's object keeps one value per key, so a repeated name cannot reach here.
    Result<Tensor> t = tensor_from_json(value, "input '" + name + "'", specs[i].dtype);
    if (!t) return t.status();
    tensors[i] = std::move(*t);
    given[i] = true;
  }
  for (size_t i = 0; i < specs.size(); ++i)
    if (!given[i]) return missing_input(specs[i]);
  return tensors;
}

Result<std::vector<Tensor>> inputs_from_parts(const std::vector<TensorSpec>& specs,
                                              const std::vector<BodyPart>& parts) {
  std::vector<Tensor> tensors(specs.size());
  std::vector<bool> given(specs.size(), false);
  for (const BodyPart& part : parts) {
    size_t i = 0;
    while (i < specs.size() && specs[i].name != part.name) ++i;
    if (i == specs.size()) return unknown_input(part.name, specs);
    if (given[i])
      return Status(StatusCode::invalid_argument, "input '" + part.name + "' is given twice");
    Result<Tensor> t = decode_npy(part.content, "input '" + part.name + "'");
    if (!t) return t.status();
    tensors[i] = std::move(*t);
    given[i] = true;
  }
  for (size_t i = 0; i < specs.size(); ++i)
    if (!given[i]) return missing_input(specs[i]);
  return tensors;
}

// Every element of an integer tensor as int64.
int64_t int_at(const Tensor& t, size_t k) {
  const auto* p = static_cast<const std::byte*>(t.data()) + k * dtype_size(t.dtype());
  switch (t.dtype()) {
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::i8:
      return static_cast<int8_t>(*p);
    default:  // u8, bool
      return static_cast<uint8_t>(*p);
  }
}

// Element `k` of `shape` as "[i, j, ...]".
std::string element_text(const Shape& shape, int64_t k) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? k % shape[d] : 0;
    k = shape[d] ? k / shape[d] : 0;
  }
  return shape_text(idx);
}

}  // namespace

Status validate_inputs(const std::vector<TensorSpec>& specs, const std::vector<Tensor>& tensors) {
  if (tensors.size() != specs.size())
    return Status(StatusCode::invalid_argument,
                  std::to_string(tensors.size()) + " inputs given, expected " +
                      std::to_string(specs.size()) + " (" + names_of(specs) + ")");
  std::map<std::string, std::pair<int64_t, std::string>> bound;  // symbol -> value, source
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& s = specs[i];
    const Tensor& t = tensors[i];
    const std::string who = "input '" + s.name + "'";
    if (t.dtype() != s.dtype)
      return Status(StatusCode::invalid_argument,
                    who + ": dtype is " + std::string(dtype_name(t.dtype())) + ", expected " +
                        std::string(dtype_name(s.dtype)));
    if (t.shape().size() != s.dims.size())
      return Status(StatusCode::invalid_argument,
                    who + ": rank is " + std::to_string(t.shape().size()) + " (shape " +
                        shape_text(t.shape()) + "), expected " + std::to_string(s.dims.size()) +
                        " (" + spec_text(s) + ")");
    for (size_t d = 0; d < s.dims.size(); ++d) {
      const int64_t got = t.shape()[d];
      const DimSpec& ds = s.dims[d];
      const std::string dim = who + ": dim " + std::to_string(d);
      if (!ds.is_symbolic()) {
        if (got != ds.value)
          return Status(StatusCode::invalid_argument, dim + " is " + std::to_string(got) +
                                                          ", expected " + std::to_string(ds.value) +
                                                          " (" + spec_text(s) + ")");
        continue;
      }
      if (ds.coeff <= 0 || got % ds.coeff != 0)
        return Status(StatusCode::invalid_argument,
                      dim + " is " + std::to_string(got) + ", expected a multiple of " +
                          std::to_string(ds.coeff) + " (" + std::to_string(ds.coeff) + "*" +
                          ds.symbol + ")");
      const int64_t v = got / ds.coeff;
      if (v < ds.min || v > ds.max)
        return Status(StatusCode::out_of_range, dim + " gives symbol '" + ds.symbol +
                                                    "' = " + std::to_string(v) + ", expected [" +
                                                    std::to_string(ds.min) + ", " +
                                                    std::to_string(ds.max) + "]");
      const auto [it, fresh] = bound.try_emplace(ds.symbol, v, who + " dim " + std::to_string(d));
      if (!fresh && it->second.first != v)
        return Status(StatusCode::invalid_argument,
                      dim + " gives symbol '" + ds.symbol + "' = " + std::to_string(v) + " but " +
                          it->second.second + " gave " + std::to_string(it->second.first));
    }
    if (s.valid_range && dtype_is_integral(t.dtype())) {
      const ValueRange& r = *s.valid_range;
      for (int64_t k = 0; k < t.numel(); ++k) {
        const int64_t v = int_at(t, static_cast<size_t>(k));
        if (v >= r.lo && v < r.hi) continue;
        return Status(StatusCode::out_of_range, who + ": element " + element_text(t.shape(), k) +
                                                    " is " + std::to_string(v) + ", outside [" +
                                                    std::to_string(r.lo) + ", " +
                                                    std::to_string(r.hi) + "), " + r.reason);
      }
    }
  }
  return Status::ok();
}

Result<PredictRequest> parse_predict_request(const std::vector<TensorSpec>& inputs,
                                             const std::vector<TensorSpec>& outputs,
                                             std::string_view content_type, std::string_view body,
                                             const std::vector<BodyPart>& parts,
                                             std::string_view output) {
  PredictRequest req;
  if (!output.empty()) {
    const auto it = std::find_if(outputs.begin(), outputs.end(),
                                 [&](const TensorSpec& s) { return s.name == output; });
    if (it == outputs.end())
      return Status(StatusCode::not_found, "unknown output '" + std::string(output) +
                                               "' in ?output=: expected one of " +
                                               names_of(outputs));
    req.output = std::string(output);
  }
  const std::string type = media_type(content_type);
  Result<std::vector<Tensor>> tensors = Status(StatusCode::internal, "no body decoded");
  if (type == "application/json") {
    tensors = inputs_from_json(inputs, body);
  } else if (type == "application/x-npy") {
    req.response = Encoding::npy;
    if (inputs.size() != 1)
      return Status(StatusCode::invalid_argument,
                    "an application/x-npy body carries one input, the model has " +
                        std::to_string(inputs.size()) + " (" + names_of(inputs) +
                        "): expected multipart/form-data with one .npy part per input");
    Result<Tensor> t = decode_npy(body, "body");
    if (!t) return t.status();
    std::vector<Tensor> one;
    one.push_back(std::move(*t));
    tensors = std::move(one);
  } else if (type == "multipart/form-data") {
    req.response = Encoding::npy;
    tensors = inputs_from_parts(inputs, parts);
  } else {
    return Status(StatusCode::unimplemented,
                  "content type '" + (type.empty() ? std::string("(none)") : type) +
                      "' is not supported: expected application/json, application/x-npy or "
                      "multipart/form-data");
  }
  if (!tensors) return tensors.status();
  if (req.response == Encoding::npy && req.output.empty()) {
    if (outputs.size() != 1)
      return Status(StatusCode::invalid_argument,
                    "a .npy response carries one output, the model has " +
                        std::to_string(outputs.size()) + ": expected ?output=NAME, one of " +
                        names_of(outputs));
    req.output = outputs[0].name;
  }
  if (Status s = validate_inputs(inputs, *tensors); !s.is_ok()) return s;
  req.inputs = std::move(*tensors);
  return req;
}

int http_status_of(const Status& status) {
  switch (status.code()) {
    case StatusCode::invalid_argument:
    case StatusCode::not_found:
    case StatusCode::out_of_range:
      return 400;
    case StatusCode::unimplemented:
      return 415;
    case StatusCode::failed_precondition:
      return 503;
    default:
      return 500;
  }
}

std::string error_body(int http_status, const Status& status) {
  return json{{"error",
               {{"code", http_status},
                {"status", status_code_name(status.code())},
                {"message", status.message()}}}}
      // Messages quote what the client sent, which may not be UTF-8.
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace neuronc::server
