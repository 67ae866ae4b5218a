// tokenizer_config.json of a HF model folder: the special-token strings, whether to add BOS/EOS,
// the added-token table (added_tokens_decoder) and the raw chat template(s), which the
// chat-template module renders.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"

namespace brisk {

struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<std::string> tokenizer_class;
  // "chat_template" as a string is stored under "default"; the list form
  // [{"name": ..., "template": ...}] keeps its names.
  std::map<std::string, std::string> chat_templates;
  // added_tokens_decoder entries (id, content and flags), in id order.
  std::vector<AddedToken> added_tokens;

  // Reads dir/tokenizer_config.json; a missing file gives an empty config, a malformed one
  // throws kCorruptData naming the file and field.
  static TokenizerConfig load(const std::filesystem::path& dir);
  static TokenizerConfig parse(const std::string& json_text, const std::string& where);

  // The named template ("default" when the file had a single string), or null.
  const std::string* chat_template(const std::string& name = "default") const;
};

}  // namespace brisk
