// Errors as values for the artifact reader, writer and verifier: a Status (code + message) and
// a Result<T>. Messages are lower-case, without a trailing period, and say what was expected and
// what was found, with the numbers. The loader maps these onto the public neuronc::Status.
// Thread-safety: values; safe to read concurrently.
#pragma once

#include "device/basic_status.h"

namespace neuronc::artifact {

enum class StatusCode {
  ok,
  invalid_argument,      // a caller passed something unusable (writer input, options)
  io_error,              // open / mmap / read / write failed
  truncated,             // the bytes end before a structure they declare
  corrupt,               // checksum mismatch, malformed FlatBuffer, bad magic
  incompatible_version,  // another major, or a newer minor than this reader
  out_of_range,          // an offset, size or index outside what it refers to
  unimplemented,         // a valid feature this build does not support
};

const char* status_code_name(StatusCode c);

using Status = device::BasicStatus<StatusCode>;
template <typename T>
using Result = device::BasicResult<T, StatusCode>;

}  // namespace neuronc::artifact

#define NEURONC_ARTIFACT_RETURN_IF_ERROR(expr) \
  do {                                         \
    ::neuronc::artifact::Status _st = (expr);  \
    if (!_st.is_ok()) return _st;              \
  } while (0)

#define NEURONC_ARTIFACT_CONCAT_(a, b) a##b
#define NEURONC_ARTIFACT_CONCAT(a, b) NEURONC_ARTIFACT_CONCAT_(a, b)
#define NEURONC_ARTIFACT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                            \
  if (!tmp.is_ok()) return tmp.status();                        \
  lhs = std::move(tmp).value()
// NEURONC_ARTIFACT_ASSIGN_OR_RETURN(auto x, f()): x = f().value() or return its status.
#define NEURONC_ARTIFACT_ASSIGN_OR_RETURN(lhs, expr) \
  NEURONC_ARTIFACT_ASSIGN_OR_RETURN_IMPL_(NEURONC_ARTIFACT_CONCAT(_res_, __LINE__), lhs, expr)
