// The body of `POST /v1/models/<name>:predict`, parsed and checked against the model's signature
// before the request may join a batch, so one malformed request never fails the others it would
// have run with. Three encodings (examples/server/README.md):
//   application/json     {"inputs": {"x": {"dtype": "f32", "shape": [4, 16], "data": [...]}}}
//                        or {"inputs": [{...}, ...]} in the signature's order;
//   application/x-npy    one .npy file, for a model with one input;
//   multipart/form-data  one part per input, named after it, each a .npy file.
// A JSON request gets a JSON response, the others a .npy of one output (`?output=NAME`, needed
// when the model has several).
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "neuronc/model.h"
#include "neuronc/status.h"
#include "neuronc/tensor.h"

namespace neuronc::server {

enum class Encoding { json, npy };

// One part of a multipart/form-data body.
struct BodyPart {
  std::string name;
  std::string content;
};

struct PredictRequest {
  std::vector<Tensor> inputs;  // in the signature's order, checked by validate_inputs
  Encoding response = Encoding::json;
  std::string output;  // the one output to return; empty: every output (JSON only)
};

// Decodes and validates a predict body. `content_type` is the Content-Type header (parameters
// such as "; charset=utf-8" are ignored), `parts` the multipart body's parts, `output` the
// `?output=` query parameter (empty when absent).
Result<PredictRequest> parse_predict_request(const std::vector<TensorSpec>& inputs,
                                             const std::vector<TensorSpec>& outputs,
                                             std::string_view content_type, std::string_view body,
                                             const std::vector<BodyPart>& parts,
                                             std::string_view output);

// Checks `tensors` (one per spec, in order) as Session::run would: the loader's check_inputs.
Status validate_inputs(const std::vector<TensorSpec>& specs, const std::vector<Tensor>& tensors);

// The HTTP status of an error: 400 for what the client sent (invalid_argument, not_found,
// out_of_range), 415 for an encoding the server does not take (unimplemented), 503 while shutting
// down (failed_precondition), 500 otherwise.
int http_status_of(const Status& status);

// {"error": {"code": 400, "status": "invalid_argument", "message": "..."}}.
std::string error_body(int http_status, const Status& status);

}  // namespace neuronc::server
