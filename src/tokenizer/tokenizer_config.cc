#include "tokenizer/tokenizer_config.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/file_util.h"

namespace brisk {
namespace {

// Special tokens appear either as a plain string or as {"content": ..., "__type": "AddedToken"}.
std::optional<std::string> token_string(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw_error(ErrorCode::kCorruptData, "{}: field '{}' must be a string or an object with 'content'", where, key);
}

std::optional<bool> optional_bool(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_boolean()) throw_error(ErrorCode::kCorruptData, "{}: field '{}' must be a boolean", where, key);
  return j[key].get<bool>();
}

}  // namespace

TokenizerConfig TokenizerConfig::load(const std::filesystem::path& dir) {
  auto path = dir / "tokenizer_config.json";
  if (!std::filesystem::exists(path)) return {};
  return parse(read_text_file(path), path.string());
}

TokenizerConfig TokenizerConfig::parse(const std::string& json_text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw_error(ErrorCode::kCorruptData, "{}: not a JSON object", where);
  TokenizerConfig config;
  try {
    config.bos_token = token_string(j, "bos_token", where);
    config.eos_token = token_string(j, "eos_token", where);
    config.unk_token = token_string(j, "unk_token", where);
    config.pad_token = token_string(j, "pad_token", where);
    config.add_bos_token = optional_bool(j, "add_bos_token", where);
    config.add_eos_token = optional_bool(j, "add_eos_token", where);
    if (j.contains("tokenizer_class") && j["tokenizer_class"].is_string())
      config.tokenizer_class = j["tokenizer_class"].get<std::string>();
    if (j.contains("chat_template") && !j["chat_template"].is_null()) {
      const auto& t = j["chat_template"];
      if (t.is_string()) {
        config.chat_templates["default"] = t.get<std::string>();
      } else if (t.is_array()) {
        for (const auto& entry : t) config.chat_templates[entry.at("name").get<std::string>()] = entry.at("template").get<std::string>();
      } else {
        throw_error(ErrorCode::kCorruptData, "{}: field 'chat_template' must be a string or a list", where);
      }
    }
    if (j.contains("added_tokens_decoder") && j["added_tokens_decoder"].is_object()) {
      for (const auto& [key, v] : j["added_tokens_decoder"].items()) {
        AddedToken token;
        token.id = std::stoi(key);
        token.content = v.at("content").get<std::string>();
        token.special = v.value("special", false);
        token.lstrip = v.value("lstrip", false);
        token.rstrip = v.value("rstrip", false);
        token.single_word = v.value("single_word", false);
        token.normalized = v.value("normalized", !token.special);
        config.added_tokens.push_back(std::move(token));
      }
      std::sort(config.added_tokens.begin(), config.added_tokens.end(),
                [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
    }
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::kCorruptData, "{}: {}", where, e.what());
  } catch (const std::invalid_argument&) {
    throw_error(ErrorCode::kCorruptData, "{}: added_tokens_decoder keys must be integer ids", where);
  }
  return config;
}

const std::string* TokenizerConfig::chat_template(const std::string& name) const {
  auto it = chat_templates.find(name);
  return it == chat_templates.end() ? nullptr : &it->second;
}

}  // namespace brisk
