// How commands take a prompt: token ids, plain text (tokenized like HF's encode with special
// tokens), or a chat message rendered with the model's chat template.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tokenizer/tokenizer.h"

namespace brisk::cli {

struct PromptInput {
  std::string prompt_ids;
  std::string prompt;
  std::string chat;
  std::string system;
  bool given() const;
};

// Adds --prompt-ids, --prompt, --chat and --system; at most one of the first three.
void add_prompt_options(CLI::App* command, PromptInput& input);

// The prompt's token ids; text prompts need a tokenizer (a clear error otherwise).
std::vector<int32_t> resolve_prompt(const PromptInput& input, const std::filesystem::path& model_dir,
                                    const Tokenizer* tokenizer);

// "1,2,3" -> ids; a clear error naming the bad item.
std::vector<int32_t> parse_ids(const std::string& text, const std::string& option);

}  // namespace brisk::cli
