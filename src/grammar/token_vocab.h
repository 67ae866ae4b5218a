// The model vocabulary as the grammar sees it: the decoded bytes of every token, which
// tokens may end generation (stop tokens) and which never appear in grammar text (special
// tokens), plus the normal tokens sorted by bytes so that neighbours share prefixes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace brisk {
class Tokenizer;
}

namespace brisk::grammar {

// How token strings map to bytes (xgrammar's VocabType).
enum class VocabEncoding {
  kRaw,           // the token string is the bytes
  kByteFallback,  // SentencePiece: "▁" is a space, "<0xAB>" is the byte 0xAB
  kByteLevel,     // GPT-2 byte-to-unicode alphabet ("Ġ" is a space)
};

class TokenVocab {
 public:
  // `pieces[id]` is the token string as the vocabulary stores it; special tokens (and empty
  // pieces) never match grammar text; stop tokens end generation where the grammar can end.
  TokenVocab(const std::vector<std::string>& pieces, VocabEncoding encoding,
             const std::vector<bool>& special, std::vector<int32_t> stop_ids);

  // From brisk's tokenizer: pieces by id_to_token, the encoding guessed from the vocabulary
  // ("<0x0A>" present: byte fallback; "Ġ" present: byte level), special tokens by
  // is_special, stop tokens by `stop_ids` (those past the tokenizer's vocabulary, a model's
  // padded embedding rows or eos ids a stand-in tokenizer lacks, have no text and are left out)
  // or else the EOS token.
  static TokenVocab from_tokenizer(const Tokenizer& tokenizer,
                                   std::optional<std::vector<int32_t>> stop_ids = std::nullopt);

  int32_t vocab_size() const { return int32_t(bytes_.size()); }
  const std::string& token_bytes(int32_t id) const { return bytes_[id]; }
  bool is_stop(int32_t id) const { return kind_[id] == kStop; }
  bool is_special(int32_t id) const { return kind_[id] == kSpecial; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  VocabEncoding encoding() const { return encoding_; }

  // Normal tokens (neither stop nor special) in byte order; lcp[i] is the length of the
  // common prefix of sorted[i] and sorted[i-1] (0 for i = 0); subtree_end[i] is the first
  // j > i whose bytes do not start with those of sorted[i].
  const std::vector<int32_t>& sorted() const { return sorted_; }
  const std::vector<int32_t>& sorted_lcp() const { return lcp_; }
  const std::vector<int32_t>& subtree_end() const { return subtree_end_; }
  // First index in sorted() of tokens whose first byte is b, for b in 0..256.
  int32_t first_byte_begin(int b) const { return first_byte_begin_[b]; }

  // The bytes of one token string under `encoding`.
  static std::string decode_piece(const std::string& piece, VocabEncoding encoding);

 private:
  enum Kind : uint8_t { kNormal, kSpecial, kStop };
  VocabEncoding encoding_;
  std::vector<std::string> bytes_;
  std::vector<Kind> kind_;
  std::vector<int32_t> stop_ids_;
  std::vector<int32_t> sorted_;
  std::vector<int32_t> lcp_;
  std::vector<int32_t> subtree_end_;
  int32_t first_byte_begin_[257] = {};
};

}  // namespace brisk::grammar
