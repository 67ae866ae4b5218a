// What every request parser shares: the body parsed as a JSON object (depth-limited), and typed
// access to an object's fields that throws ApiError (400 naming the field) on a wrong type or a
// value out of range. Absent and null fields mean "not given".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace brisk::server {

// Throws ApiError unless `body` is a JSON object nested at most 64 levels deep.
nlohmann::ordered_json parse_body(std::string_view body);

class Fields {
 public:
  using Json = nlohmann::ordered_json;

  // `prefix` names nested objects in errors ("stream_options.").
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

// A float field in [low, high] (low excluded when `low_open`); `range` spells it for the error.
void read_float(const Fields& f, const char* key, float& out, double low, double high, bool low_open,
                const char* range);

}  // namespace brisk::server
