// Errors as values for the neuronc runtime: every call that can fail returns a Status or a
// Result<T>; no exception crosses the public API. Messages are lower-case, without a trailing
// period, and say what was expected and what was found ("input 'x': dtype is f16, expected
// f32").
//
// Thread-safety: Status and Result are values; concurrent reads are safe.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace neuronc {

enum class StatusCode {
  ok = 0,
  invalid_argument,      // the caller passed something unusable (name, dtype, shape, buffer)
  not_found,             // a named input or output does not exist
  out_of_range,          // a symbolic dim outside its range; an index outside a table
  io_error,              // open / mmap / read failed
  data_loss,             // truncated or corrupt artifact (checksum, bounds, malformed)
  incompatible_version,  // artifact format from another major or a newer minor
  failed_precondition,   // e.g. running a Session whose creation failed
  unimplemented,         // a feature or host op this loader does not have
  resource_exhausted,    // an allocation failed
  internal,              // a bug in neuronc
};

// "ok", "invalid_argument", ...
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: input 'x': ..." (or "ok").
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

// Either a T or a non-ok Status. Accessing value() of an error is a programming error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace neuronc
