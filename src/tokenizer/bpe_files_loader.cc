// vocab.json + merges.txt folders and tiktoken rank files -> HfTokenizer.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/file_util.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_tokenizer_loader.h"

namespace brisk {
namespace {

constexpr int32_t kQwen2VocabSize = 151643;  // byte-level entries of Qwen2's vocab.json


// Adds the config's added tokens, or `defaults` when the config lists none; normalized
// tokens get their normalized form for matching.
void add_tokens(HfTokenizer::Parts& parts, const TokenizerConfig& config, const std::vector<AddedToken>& defaults) {
  const auto& tokens = config.added_tokens.empty() ? defaults : config.added_tokens;
  for (AddedToken token : tokens) {
    token.normalized_content = token.content;
    if (token.normalized && parts.normalizer) parts.normalizer->normalize(token.normalized_content);
    parts.added.add(std::move(token));
  }
}

AddedToken special_token(int32_t id, std::string content) {
  AddedToken token;
  token.id = id;
  token.content = std::move(content);
  token.special = true;
  return token;
}

// BOS/EOS requested by add_bos_token/add_eos_token (what the slow HF tokenizers do).
void add_post_processing(HfTokenizer::Parts& parts, const TokenizerConfig& config, bool default_add_bos) {
  auto id_of = [&](const std::optional<std::string>& token) -> std::optional<int32_t> {
    if (!token) return std::nullopt;
    if (auto id = parts.added.token_to_id(*token)) return id;
    return parts.model->token_to_id(*token);
  };
  if (config.add_bos_token.value_or(default_add_bos))
    if (auto bos = id_of(config.bos_token)) parts.prefix_ids.push_back(*bos);
  if (config.add_eos_token.value_or(false))
    if (auto eos = id_of(config.eos_token)) parts.suffix_ids.push_back(*eos);
}

std::string decode_base64(std::string_view text, const std::string& where, size_t line) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    int v = value(c);
    if (v < 0) throw_error(ErrorCode::kCorruptData, "{}:{}: invalid base64 character '{}'", where, line, c);
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<HfTokenizer> load_vocab_merges(const std::filesystem::path& dir, TokenizerConfig config) {
  auto vocab_path = dir / "vocab.json", merges_path = dir / "merges.txt";
  nlohmann::json vocab_json = nlohmann::json::parse(read_text_file(vocab_path), nullptr, false);
  if (vocab_json.is_discarded() || !vocab_json.is_object())
    throw_error(ErrorCode::kCorruptData, "{}: not a JSON object of token -> id", vocab_path.string());
  TokenIdMap vocab;
  vocab.reserve(vocab_json.size());
  for (const auto& [token, id] : vocab_json.items()) {
    if (!id.is_number_integer())
      throw_error(ErrorCode::kCorruptData, "{}: id of '{}' is not an integer", vocab_path.string(), token);
    vocab.emplace(token, id.get<int32_t>());
  }
  std::vector<std::pair<std::string, std::string>> merges;
  std::istringstream lines(read_text_file(merges_path));
  std::string line;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.starts_with("#version"))) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      throw_error(ErrorCode::kCorruptData, "{}:{}: expected two tokens separated by one space, got '{}'",
                  merges_path.string(), number, line);
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  bool qwen2 = static_cast<int32_t>(vocab.size()) == kQwen2VocabSize ||
               (config.tokenizer_class && config.tokenizer_class->starts_with("Qwen2"));
  HfTokenizer::Parts parts;
  parts.model = std::make_unique<BpeModel>(std::move(vocab), merges, BpeOptions{}, merges_path.string());
  parts.decoder = Decoder::byte_level();
  std::vector<AddedToken> defaults;
  if (qwen2) {
    // Qwen2's slow tokenizer NFC-normalizes before splitting.
    parts.normalizer = Normalizer::from_json({{"type", "NFC"}}, "qwen2");
    parts.pre_tokenizer = PreTokenizer::byte_level_with_regex(kQwen2Pattern, "Qwen2 pre-tokenizer");
    defaults = {special_token(151643, "<|endoftext|>"), special_token(151644, "<|im_start|>"),
                special_token(151645, "<|im_end|>")};
    if (!config.eos_token) config.eos_token = "<|endoftext|>";
  } else {
    parts.pre_tokenizer = PreTokenizer::byte_level_with_regex(kGpt2Pattern, "GPT-2 pre-tokenizer");
    if (auto id = parts.model->token_to_id("<|endoftext|>")) {
      defaults = {special_token(*id, "<|endoftext|>")};
      if (!config.bos_token) config.bos_token = "<|endoftext|>";
      if (!config.eos_token) config.eos_token = "<|endoftext|>";
    }
  }
  add_tokens(parts, config, defaults);
  add_post_processing(parts, config, false);
  return std::make_unique<HfTokenizer>(std::move(parts), std::move(config));
}

bool looks_like_tiktoken(const std::string& head) {
  size_t end = head.find('\n');
  std::string_view first = std::string_view(head).substr(0, end == std::string::npos ? head.size() : end);
  size_t space = first.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 >= first.size()) return false;
  for (size_t i = 0; i < space; ++i) {
    char c = first[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) return false;
  }
  for (size_t i = space + 1; i < first.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(first[i])) && first[i] != '\r') return false;
  return true;
}

std::unique_ptr<HfTokenizer> load_tiktoken(const std::filesystem::path& file, TokenizerConfig config) {
  std::istringstream lines(read_text_file(file));
  std::string line;
  TokenIdMap vocab;
  int32_t num_ranks = 0;
  for (size_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    size_t space = line.find(' ');
    if (space == std::string::npos)
      throw_error(ErrorCode::kCorruptData, "{}:{}: expected '<base64 token> <rank>'", file.string(), number);
    int32_t rank = 0;
    try {
      rank = std::stoi(line.substr(space + 1));
    } catch (const std::exception&) {
      throw_error(ErrorCode::kCorruptData, "{}:{}: rank '{}' is not an integer", file.string(), number,
                  line.substr(space + 1));
    }
    std::string symbols;
    byte_level::encode(decode_base64(std::string_view(line).substr(0, space), file.string(), number), symbols);
    vocab.emplace(std::move(symbols), rank);
    num_ranks = std::max(num_ranks, rank + 1);
  }
  if (vocab.empty()) throw_error(ErrorCode::kCorruptData, "{}: no ranks found", file.string());
  HfTokenizer::Parts parts;
  parts.model = BpeModel::from_ranks(std::move(vocab), file.string());
  parts.pre_tokenizer = PreTokenizer::byte_level_with_regex(kLlama3Pattern, "Llama-3 pre-tokenizer");
  parts.decoder = Decoder::byte_level();
  // Llama-3.1's special tokens follow the last rank.
  std::vector<std::string> names = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                                    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                                    "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                                    "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
  for (int i = 3; names.size() < 256; ++i) names.push_back(fmt::format("<|reserved_special_token_{}|>", i));
  std::vector<AddedToken> defaults;
  for (size_t i = 0; i < names.size(); ++i) defaults.push_back(special_token(num_ranks + static_cast<int32_t>(i), names[i]));
  if (!config.bos_token) config.bos_token = "<|begin_of_text|>";
  if (!config.eos_token) config.eos_token = "<|end_of_text|>";
  add_tokens(parts, config, defaults);
  add_post_processing(parts, config, true);
  return std::make_unique<HfTokenizer>(std::move(parts), std::move(config));
}

}  // namespace brisk
