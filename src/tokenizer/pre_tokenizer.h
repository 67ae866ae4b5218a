// Pre-tokenizers of HF tokenizer.json ("pre_tokenizer" field): Split (regex or literal, all
// five delimiter behaviours, invert), ByteLevel, Metaspace, Digits, Punctuation, Whitespace,
// WhitespaceSplit and Sequence. Each one refines a list of pieces; the BPE model then
// tokenizes every piece on its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace brisk {

struct PreToken {
  std::string text;
  // True when the piece starts at offset 0 of the caller's input: Metaspace's
  // prepend_scheme "first" only adds the space marker there.
  bool at_input_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;

  // Builds the pre-tokenizer described by `spec`; `where` names the file and field for errors.
  static std::unique_ptr<PreTokenizer> from_json(const nlohmann::json& spec, const std::string& where);
  // A byte-level pre-tokenizer splitting with `pattern` (GPT-2, Qwen2 and Llama-3 folders
  // without a tokenizer.json).
  static std::unique_ptr<PreTokenizer> byte_level_with_regex(const std::string& pattern,
                                                             const std::string& where);
};

// The regex of GPT-2's ByteLevel pre-tokenizer (use_regex: true).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace brisk
