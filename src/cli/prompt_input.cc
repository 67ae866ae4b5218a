#include "cli/prompt_input.h"

#include <charconv>

#include "core/error.h"
#include "tokenizer/chat_prompt.h"

namespace brisk::cli {

void add_prompt_options(CLI::App* command, PromptInput& input) {
  auto* ids = command->add_option("--prompt-ids", input.prompt_ids, "prompt as comma-separated token ids, e.g. 1,2,3");
  auto* text = command->add_option("--prompt", input.prompt, "prompt text (tokenized with the model's tokenizer)");
  auto* chat = command->add_option("--chat", input.chat, "a user message, rendered with the model's chat template");
  command->add_option("--system", input.system, "system message for --chat")->needs(chat);
  ids->excludes(text)->excludes(chat);
  text->excludes(chat);
}

bool PromptInput::given() const { return !prompt_ids.empty() || !prompt.empty() || !chat.empty(); }

std::vector<int32_t> parse_ids(const std::string& text, const std::string& option) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int32_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    BRISK_CHECK(!item.empty() && ec == std::errc() && end == item.data() + item.size(),
                "{}: '{}' is not a token id (expected comma-separated integers like 1,2,3)", option, item);
    ids.push_back(value);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return ids;
}

std::vector<int32_t> resolve_prompt(const PromptInput& input, const std::filesystem::path& model_dir,
                                    const Tokenizer* tokenizer) {
  if (!input.prompt_ids.empty()) return parse_ids(input.prompt_ids, "--prompt-ids");
  if (tokenizer == nullptr)
    throw_error(ErrorCode::kNotFound, "model folder {} has no tokenizer (tokenizer.json, vocab.json + merges.txt or "
                "tokenizer.model): give --prompt-ids instead of text", model_dir.string());
  if (!input.prompt.empty()) return tokenizer->encode(input.prompt, /*add_special_tokens=*/true);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!input.system.empty()) messages.push_back({{"role", "system"}, {"content", input.system}});
  messages.push_back({{"role", "user"}, {"content", input.chat}});
  std::string rendered = ChatPrompt::from_folder(model_dir).render(messages, /*add_generation_prompt=*/true);
  // As transformers' apply_chat_template(tokenize=True): the template already holds BOS.
  return tokenizer->encode(rendered, /*add_special_tokens=*/false);
}

}  // namespace brisk::cli
