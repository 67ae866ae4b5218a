// The HF `tokenizers` pipeline with a BPE model: added-token extraction, normalizer,
// pre-tokenizer, BPE, post-processor (BOS/EOS) on encode; token strings through the decoder
// chain on decode. Built from tokenizer.json, from vocab.json + merges.txt, or from a tiktoken
// rank file (see the loaders in hf_tokenizer_loader.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace brisk {

class HfTokenizer final : public Tokenizer {
 public:
  struct Parts {
    std::unique_ptr<Normalizer> normalizer;      // may be null
    std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null: the text is one word
    std::unique_ptr<BpeModel> model;
    std::unique_ptr<Decoder> decoder;  // null: tokens are joined with spaces, as in HF
    AddedVocabulary added;
    // What the post-processor adds around a single sequence when add_special_tokens is set.
    std::vector<int32_t> prefix_ids;
    std::vector<int32_t> suffix_ids;
  };

  HfTokenizer(Parts parts, TokenizerConfig config);

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override;
  int32_t vocab_size() const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  bool is_special(int32_t id) const override;
  std::string decode_window(std::span<const int32_t> ids, bool skip_special_tokens,
                            bool continuation) const override;
  bool is_partial_token(int32_t id) const override;
  bool is_skipped_on_decode(int32_t id) const override;

 private:
  void encode_plain(std::string_view text, bool at_input_start, std::vector<int32_t>& ids) const;

  Parts parts_;
};

}  // namespace brisk
