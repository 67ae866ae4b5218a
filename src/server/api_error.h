// Errors the HTTP API reports to clients: an HTTP status plus OpenAI's error body
// {"error": {"message", "type", "param", "code"}}, so OpenAI clients raise the matching
// exception (BadRequestError, AuthenticationError, NotFoundError, ...).
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace brisk::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string param, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }  // the request field at fault, or empty
  const std::string& code() const { return code_; }

  // {"error": {...}}; param and code are null when empty.
  nlohmann::json body() const;

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
};

// 400 invalid_request_error naming `param`, the field at fault.
template <typename... Args>
[[noreturn]] void throw_invalid(const std::string& param, fmt::format_string<Args...> format, Args&&... args) {
  throw ApiError(400, "invalid_request_error", param, "", fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace brisk::server
