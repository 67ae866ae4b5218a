#include "tokenizer/tokenizer.h"

#include <fstream>

#include "core/error.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/sentencepiece_tokenizer.h"

namespace brisk {

std::unique_ptr<Tokenizer> Tokenizer::from_folder(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw_error(ErrorCode::kNotFound, "tokenizer folder {} does not exist", dir.string());
  TokenizerConfig config = TokenizerConfig::load(dir);
  if (std::filesystem::exists(dir / "tokenizer.json")) return load_tokenizer_json(dir / "tokenizer.json", std::move(config));
  if (std::filesystem::exists(dir / "vocab.json") && std::filesystem::exists(dir / "merges.txt"))
    return load_vocab_merges(dir, std::move(config));
  auto model = dir / "tokenizer.model";
  if (std::filesystem::exists(model)) {
    std::ifstream in(model, std::ios::binary);
    std::string head(256, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    if (looks_like_tiktoken(head)) return load_tiktoken(model, std::move(config));
    return std::make_unique<SentencePieceTokenizer>(model, std::move(config));
  }
  throw_error(ErrorCode::kNotFound, "{} holds no tokenizer.json, vocab.json + merges.txt or tokenizer.model",
              dir.string());
}

std::unique_ptr<Tokenizer> Tokenizer::from_folder_if_any(const std::filesystem::path& dir) {
  try {
    return from_folder(dir);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kNotFound) return nullptr;
    throw;
  }
}

void Tokenizer::set_config(TokenizerConfig config, std::optional<int32_t> default_bos,
                           std::optional<int32_t> default_eos) {
  config_ = std::move(config);
  bos_token_id_ = default_bos;
  eos_token_id_ = default_eos;
  if (config_.bos_token)
    if (auto id = token_to_id(*config_.bos_token)) bos_token_id_ = id;
  if (config_.eos_token)
    if (auto id = token_to_id(*config_.eos_token)) eos_token_id_ = id;
}

}  // namespace brisk
