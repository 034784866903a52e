// Errors as values for the device model: a Status (code + message) and a Result<T> that holds
// either a value or a Status. No exception crosses the device API.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace neuronc::device {

enum class StatusCode {
  ok,
  invalid_argument,     // malformed program or options
  out_of_range,         // address or index outside a memory or table
  failed_precondition,  // a hardware rule is violated at run time (PSUM group, race, deadlock)
  unimplemented,
};

// A status is cheap to copy when ok. Messages are lower-case, without a trailing period, and
// say what was expected and what was found. Thread-safe to read; not synchronised for writes.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "context: message".
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

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

}  // namespace neuronc::device

#define NEURONC_DEVICE_RETURN_IF_ERROR(expr) \
  do {                                       \
    ::neuronc::device::Status _st = (expr);  \
    if (!_st.is_ok()) return _st;            \
  } while (0)
