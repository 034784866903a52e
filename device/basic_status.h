// Errors as values, shared by the device model and the artifact format: a status (a code from
// the module's own StatusCode enum, whose first enumerator is `ok`, plus a message) and a result
// that holds either a value or a non-ok status. Each module names its instances (device/status.h,
// artifact_format/status.h); the loader's public neuronc::Status is separate API.
// Messages are lower-case, without a trailing period, and say what was expected and what was
// found. Values: thread-safe to read concurrently, not synchronised for writes.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace neuronc::device {

template <typename Code>
class [[nodiscard]] BasicStatus {
 public:
  BasicStatus() = default;
  BasicStatus(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static BasicStatus ok() { return {}; }
  bool is_ok() const { return code_ == Code::ok; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // A copy whose message is "context: message".
  BasicStatus with_context(const std::string& context) const {
    return is_ok() ? *this : BasicStatus(code_, context + ": " + message_);
  }

 private:
  Code code_ = Code::ok;
  std::string message_;
};

template <typename T, typename Code>
class [[nodiscard]] BasicResult {
 public:
  BasicResult(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  BasicResult(BasicStatus<Code> status)
      : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const BasicStatus<Code>& status() const {
    static const BasicStatus<Code> kOk;
    return is_ok() ? kOk : std::get<BasicStatus<Code>>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, BasicStatus<Code>> v_;
};

}  // namespace neuronc::device
