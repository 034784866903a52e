// Errors as values for the artifact reader, writer and verifier: a Status (code + message) and
// a Result<T>. Messages are lower-case, without a trailing period, and say what was expected and
// what was found, with the numbers. The loader maps these onto the public neuronc::Status.
// Thread-safety: values; safe to read concurrently.
#pragma once

#include <string>
#include <utility>
#include <variant>

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

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::ok; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // A copy whose message is "context: message".
  Status with_context(const std::string& context) const {
    return is_ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

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
