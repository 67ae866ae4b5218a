// A model folder's chat prompt renderer: its chat template (chat_template.jinja, else the
// chat_template of tokenizer_config.json) with the special-token variables transformers passes,
// rendering a conversation the way apply_chat_template(messages, add_generation_prompt) does.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace brisk {

class ChatPrompt {
 public:
  // Throws kNotFound naming the folder when it has no chat template; kCorruptData for a
  // malformed tokenizer_config.json; template syntax errors name the template line.
  static ChatPrompt from_folder(const std::filesystem::path& dir);

  // `messages`: [{"role": ..., "content": ...}, ...]; `tools`: null or a list of tool schemas.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& tools = nullptr,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;
  const std::string& template_source() const { return template_.source(); }

 private:
  ChatPrompt(ChatTemplate chat_template, nlohmann::ordered_json special_tokens)
      : template_(std::move(chat_template)), special_tokens_(std::move(special_tokens)) {}
  ChatTemplate template_;
  nlohmann::ordered_json special_tokens_;
};

}  // namespace brisk
