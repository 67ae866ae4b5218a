// Small helpers for reading untrusted JSON (config files, safetensors headers, requests).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace brisk {

// A short description of a JSON value for error messages. Dumps only flat, short containers:
// dump() recurses, and a hostile document can nest a million levels deep.
std::string describe_json(const nlohmann::json& value);

// The value as int64 when it is a JSON integer that fits; nullopt for floats, strings, others.
std::optional<int64_t> json_int64(const nlohmann::json& value);

// An object key that names a token id (OpenAI's logit_bias): a non-negative decimal integer that
// fits int32 ("42", also "042"); nullopt for anything else.
std::optional<int32_t> token_id_key(const std::string& key);
// A logit_bias value (a JSON number) clamped to [-100, 100], as OpenAI and vLLM clamp it.
float logit_bias_value(const nlohmann::json& number);

}  // namespace brisk
