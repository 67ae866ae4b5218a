// The tokenizer interface of brisk: text <-> token ids for one model folder.
//
// Tokenizer::from_folder picks the implementation from the files present, in this order:
//   tokenizer.json               HF `tokenizers` pipeline (BPE model only)
//   vocab.json + merges.txt      GPT-2 style byte-level BPE (Qwen2 regex and specials when
//                                the vocabulary is Qwen2's)
//   tokenizer.model              SentencePiece protobuf (libsentencepiece) or a tiktoken rank
//                                file (Llama-3), told apart by content
// plus tokenizer_config.json when present (special-token strings, add_bos_token, chat templates).
//
// Input text that is not valid UTF-8 is first repaired the way Python's
// bytes.decode("utf-8", errors="replace") does (each maximal ill-formed subpart becomes
// U+FFFD), because HF's API only accepts valid strings; encode never fails on bad bytes.
// All methods are const and safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_config.h"

namespace brisk {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Throws kNotFound when the folder has no known tokenizer file, kCorruptData for malformed
  // files and kUnsupported for well-formed but unsupported ones (e.g. a WordPiece model).
  static std::unique_ptr<Tokenizer> from_folder(const std::filesystem::path& dir);
  // Like from_folder, but null when the folder has no tokenizer (kNotFound); malformed files throw.
  static std::unique_ptr<Tokenizer> from_folder_if_any(const std::filesystem::path& dir);

  // HF's encode(text, add_special_tokens): special tokens written in the text are always
  // recognised; add_special_tokens adds the BOS/EOS of the post-processor.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const = 0;
  // HF's decode(ids, skip_special_tokens); ids outside the vocabulary are ignored.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
    return decode_window(ids, skip_special_tokens, false);
  }

  // Number of ids including added tokens (max id + 1).
  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  // Special tokens are the ones skip_special_tokens drops.
  virtual bool is_special(int32_t id) const = 0;

  std::optional<int32_t> bos_token_id() const { return bos_token_id_; }
  std::optional<int32_t> eos_token_id() const { return eos_token_id_; }
  const TokenizerConfig& config() const { return config_; }
  // The raw Jinja chat template (named, or the default one), for the chat-template module.
  const std::string* chat_template(const std::string& name = "default") const {
    return config_.chat_template(name);
  }

  // Streaming support (IncrementalDetokenizer). decode_window decodes ids that, when
  // `continuation` is set, follow earlier non-skipped tokens: rules that only apply at the
  // start of a text (dropping the first token's leading space) are not applied.
  virtual std::string decode_window(std::span<const int32_t> ids, bool skip_special_tokens,
                                    bool continuation) const = 0;
  // True when the text of `id` may still change with the ids that follow (byte-fallback
  // pieces, whose run is decoded as a whole).
  virtual bool is_partial_token(int32_t /*id*/) const { return false; }
  // True when decode with skip_special_tokens drops `id` (usually exactly the special ids).
  virtual bool is_skipped_on_decode(int32_t id) const { return is_special(id); }

 protected:
  // Sets the config and resolves BOS/EOS ids from it; a loader may pass fallbacks for
  // folders whose config does not name them.
  void set_config(TokenizerConfig config, std::optional<int32_t> default_bos,
                  std::optional<int32_t> default_eos);

 private:
  TokenizerConfig config_;
  std::optional<int32_t> bos_token_id_;
  std::optional<int32_t> eos_token_id_;
};

}  // namespace brisk
