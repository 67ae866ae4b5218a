#include "server/request_fields.h"

#include <cmath>

#include "core/json_util.h"
#include "server/api_error.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;

// Deeper documents are rejected while parsing: copying, dumping and destroying JSON recurse.
constexpr int kMaxDepth = 64;

// `what` names the text in errors ("the request body", "'guided_json'"), `param` the field.
Json parse_limited(std::string_view text, const std::string& what, const std::string& param) {
  auto limit_depth = [&](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxDepth) throw_invalid(param, "{} nests deeper than {} levels", what, kMaxDepth);
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), limit_depth);
  } catch (const Json::exception& e) {
    throw_invalid(param, "{} is not valid JSON: {}", what, e.what());
  }
}

}  // namespace

Json parse_request_body(std::string_view body) {
  Json j = parse_limited(body, "the request body", "");
  if (!j.is_object()) throw_invalid("", "the request body must be a JSON object, got {}", describe_json(j));
  return j;
}

Json parse_json_field(std::string_view text, const std::string& param) {
  return parse_limited(text, "'" + param + "'", param);
}

const Json* Fields::get(const char* key) const {
  auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

std::optional<bool> Fields::boolean(const char* key) const {
  const Json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw_invalid(name(key), "'{}' must be a boolean, got {}", name(key), describe_json(*v));
  return v->get<bool>();
}

std::optional<int64_t> Fields::integer(const char* key, int64_t min, int64_t max) const {
  const Json* v = get(key);
  if (!v) return std::nullopt;
  std::optional<int64_t> value = json_int64(*v);
  if (!value && v->is_number_float()) {
    double d = v->get<double>();
    if (std::trunc(d) == d && std::abs(d) < 9e15) value = static_cast<int64_t>(d);
  }
  if (!value) throw_invalid(name(key), "'{}' must be an integer, got {}", name(key), describe_json(*v));
  if (*value < min || *value > max)
    throw_invalid(name(key), "'{}' must be in [{}, {}], got {}", name(key), min, max, *value);
  return value;
}

std::optional<double> Fields::number(const char* key) const {
  const Json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw_invalid(name(key), "'{}' must be a number, got {}", name(key), describe_json(*v));
  return v->get<double>();
}

std::optional<std::string> Fields::string(const char* key) const {
  const Json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw_invalid(name(key), "'{}' must be a string, got {}", name(key), describe_json(*v));
  return v->get<std::string>();
}

void Fields::reject(const char* key, const char* why) const {
  const Json* v = get(key);
  if (!v || (v->is_boolean() && !v->get<bool>()) || (v->is_structured() && v->empty())) return;
  throw_invalid(name(key), "'{}' is not supported: {}", name(key), why);
}

void read_float(const Fields& f, const char* key, float& out, double low, double high, bool low_open,
                const char* range) {
  std::optional<double> v = f.number(key);
  if (!v) return;
  bool ok = std::isfinite(*v) && *v <= high && (low_open ? *v > low : *v >= low);
  if (!ok) throw_invalid(f.name(key), "'{}' must be in {}, got {}", f.name(key), range, *v);
  out = static_cast<float>(*v);
}

}  // namespace brisk::server
