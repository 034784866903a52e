// Errors as values for the device model: a Status (code + message) and a Result<T> that holds
// either a value or a Status. No exception crosses the device API.
#pragma once

#include <string>
#include <utility>

#include "device/basic_status.h"

namespace neuronc::device {

enum class StatusCode {
  ok,
  invalid_argument,     // malformed program or options
  out_of_range,         // address or index outside a memory or table
  failed_precondition,  // a hardware rule is violated at run time (PSUM group, race, deadlock)
  unimplemented,
};

using Status = BasicStatus<StatusCode>;

inline Status invalid_argument(std::string m) {
  return {StatusCode::invalid_argument, std::move(m)};
}
inline Status out_of_range(std::string m) {
  return {StatusCode::out_of_range, std::move(m)};
}
inline Status failed_precondition(std::string m) {
  return {StatusCode::failed_precondition, std::move(m)};
}

// Either a T or a non-ok Status.
template <typename T>
using Result = BasicResult<T, StatusCode>;

}  // namespace neuronc::device

#define NEURONC_DEVICE_RETURN_IF_ERROR(expr) \
  do {                                       \
    ::neuronc::device::Status _st = (expr);  \
    if (!_st.is_ok()) return _st;            \
  } while (0)
