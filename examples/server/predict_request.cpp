// Predict bodies: content-type dispatch, per-encoding decoding, and the signature check every
// request passes before it is queued.
#include "examples/server/predict_request.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "examples/server/npy_codec.h"
#include "examples/server/tensor_json.h"

namespace neuronc::server {
namespace {

using nlohmann::json;

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

}  // namespace

Status validate_inputs(const std::vector<TensorSpec>& specs, const std::vector<Tensor>& tensors) {
  std::vector<TensorView> views;
  views.reserve(tensors.size());
  for (const Tensor& t : tensors) views.push_back(t.view());
  return check_inputs(specs, views).status();
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
