#include "tokenizer/chat_prompt.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file_util.h"

namespace brisk {
ChatPrompt ChatPrompt::from_folder(const std::filesystem::path& dir) {
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  const auto config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    try {
      config = nlohmann::ordered_json::parse(read_text_file(config_path));
    } catch (const nlohmann::json::exception& e) {
      throw_error(ErrorCode::kCorruptData, "{} is not valid JSON: {}", config_path.string(), e.what());
    }
  }
  nlohmann::ordered_json special = special_tokens_from_tokenizer_config(config);
  // transformers >= 4.43 saves the template in its own file, which wins over the config's.
  const auto jinja_path = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_path))
    return ChatPrompt(ChatTemplate::parse(read_text_file(jinja_path), jinja_path.string()), std::move(special));
  if (!config.contains("chat_template"))
    throw_error(ErrorCode::kNotFound,
                "model folder {} has no chat template (no chat_template.jinja and no chat_template in "
                "tokenizer_config.json): use a plain prompt instead",
                dir.string());
  return ChatPrompt(ChatTemplate::from_tokenizer_config(config), std::move(special));
}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                               const nlohmann::ordered_json& tools, const nlohmann::ordered_json& extra) const {
  BRISK_CHECK(messages.is_array() && !messages.empty(), "messages must be a non-empty list");
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.tools = tools;
  inputs.add_generation_prompt = add_generation_prompt;
  if (special_tokens_.contains("bos_token") && special_tokens_["bos_token"].is_string())
    inputs.bos_token = special_tokens_["bos_token"].get<std::string>();
  if (special_tokens_.contains("eos_token") && special_tokens_["eos_token"].is_string())
    inputs.eos_token = special_tokens_["eos_token"].get<std::string>();
  inputs.extra = special_tokens_;
  for (const auto& [key, value] : extra.items()) inputs.extra[key] = value;
  return template_.render(make_chat_template_context(inputs));
}

}  // namespace brisk
