#include "core/json_util.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace brisk {

std::string describe_json(const nlohmann::json& value) {
  if (value.is_structured()) {
    bool flat = value.size() <= 8 && std::none_of(value.begin(), value.end(),
                                                  [](const nlohmann::json& item) { return item.is_structured(); });
    if (!flat)
      return fmt::format("{} with {} elements", value.is_array() ? "an array" : "an object", value.size());
  }
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

std::optional<int64_t> json_int64(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

std::optional<int32_t> token_id_key(const std::string& key) {
  if (key.empty() || key.size() > 10 || key.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t id = std::stoll(key);
  if (id > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(id);
}

float logit_bias_value(const nlohmann::json& number) {
  return static_cast<float>(std::clamp(number.get<double>(), -100.0, 100.0));
}

}  // namespace brisk
