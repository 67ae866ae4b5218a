// Typed, validated access to the fields of a JSON request body: every problem is an ApiError
// (400) naming the field. Shared by the request parsers of every endpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace brisk::server {

// The body as a JSON object; malformed JSON, other values and documents nested deeper than 64
// levels are rejected.
nlohmann::ordered_json parse_request_body(std::string_view body);
// JSON text inside a field (a schema sent as a string): malformed or nested deeper than the body
// may be, it is a 400 naming `param`.
nlohmann::ordered_json parse_json_field(std::string_view text, const std::string& param);

// The fields of one JSON object; an absent field and null mean "not given". `prefix` names
// nested objects in errors ("stream_options.").
class Fields {
 public:
  using Json = nlohmann::ordered_json;
  Fields(const Json& object, std::string prefix = "") : object_(object), prefix_(std::move(prefix)) {}

  const Json* get(const char* key) const;
  std::string name(const char* key) const { return prefix_ + key; }
  std::optional<bool> boolean(const char* key) const;
  // Integral floats (2.0) are accepted, as Python's pydantic does.
  std::optional<int64_t> integer(const char* key, int64_t min, int64_t max) const;
  std::optional<double> number(const char* key) const;
  std::optional<std::string> string(const char* key) const;
  // A field brisk does not support: rejected unless absent, null, false or empty.
  void reject(const char* key, const char* why) const;

 private:
  const Json& object_;
  std::string prefix_;
};

// A float in a range given by its bounds and how `range` prints it ("(0, 1]"); unchanged when absent.
void read_float(const Fields& f, const char* key, float& out, double low, double high, bool low_open,
                const char* range);

}  // namespace brisk::server
