// Status text (neuronc/status.h).
#include "neuronc/status.h"

namespace neuronc {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::ok:
      return "ok";
    case StatusCode::invalid_argument:
      return "invalid_argument";
    case StatusCode::not_found:
      return "not_found";
    case StatusCode::out_of_range:
      return "out_of_range";
    case StatusCode::io_error:
      return "io_error";
    case StatusCode::data_loss:
      return "data_loss";
    case StatusCode::incompatible_version:
      return "incompatible_version";
    case StatusCode::failed_precondition:
      return "failed_precondition";
    case StatusCode::unimplemented:
      return "unimplemented";
    case StatusCode::resource_exhausted:
      return "resource_exhausted";
    case StatusCode::internal:
      return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace neuronc
