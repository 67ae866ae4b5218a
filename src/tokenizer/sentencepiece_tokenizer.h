// A SentencePiece tokenizer.model (Llama-2, InternLM2) through libsentencepiece.
//
// Control and unknown pieces (<s>, </s>, <unk>) are special: written in the text they are
// recognised as tokens (the text between them is encoded piece by piece, like HF's slow
// tokenizers), and decode renders them as their piece text unless skip_special_tokens is set.
// Only the start of the whole output loses its leading space, as with HF's Llama-2 decoder.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace brisk {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::filesystem::path& file, TokenizerConfig config);
  ~SentencePieceTokenizer() override;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override;
  int32_t vocab_size() const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  bool is_special(int32_t id) const override;
  std::string decode_window(std::span<const int32_t> ids, bool skip_special_tokens,
                            bool continuation) const override;
  bool is_partial_token(int32_t id) const override;

 private:
  // Decodes ordinary pieces; a continuation keeps the first piece's leading space.
  std::string decode_run(const std::vector<int>& run, bool continuation) const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  AddedVocabulary specials_;  // control/unknown pieces matched in the input text
  bool add_bos_ = true;
  bool add_eos_ = false;
  int anchor_id_ = -1;  // a plain piece decoded before a continuation run, then cut off
  std::string anchor_text_;
};

}  // namespace brisk
