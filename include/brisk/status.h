// Errors in brisk: one exception type whose message names what is wrong (file, tensor,
// field or parameter), plus a Status value for APIs that report instead of throwing.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace brisk {

enum class ErrorCode {
  kInvalidArgument,  // a caller passed something impossible (shape, parameter, option)
  kNotFound,         // a file, tensor or key that must exist does not
  kCorruptData,      // a file exists but its content is malformed or truncated
  kUnsupported,      // well-formed but not supported (architecture, dtype, op variant)
  kOutOfMemory,      // an allocation failed
  kInternal,         // a broken invariant inside brisk
  kBackend,          // a device/runtime call failed
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// A success-or-error value for boundaries where exceptions are unwelcome (C API, threads).
class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : ok_(false), code_(code), message_(std::move(message)) {}
  static Status ok_status() { return {}; }
  static Status from(const Error& e) { return Status(e.code(), e.what()); }

  bool ok() const { return ok_; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  bool ok_ = true;
  ErrorCode code_ = ErrorCode::kInternal;
  std::string message_;
};

}  // namespace brisk
