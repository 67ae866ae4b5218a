// The BPE model of HF tokenizers: a vocabulary, ranked merges keyed by pair of ids, and the
// word-level options (byte_fallback, fuse_unk, ignore_merges, continuing-subword prefix,
// end-of-word suffix). Tokenizing a pre-token merges the lowest-ranked adjacent pair first
// (leftmost on ties) with a heap over a linked list of symbols; results are cached per
// pre-token.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace brisk {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a pre-token that is itself in the vocabulary is not merged
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
};

class BpeModel {
 public:
  // `merges` are (left, right) token strings, best rank first. `where` names the source file
  // for errors: a merge naming a token outside the vocabulary throws kCorruptData.
  BpeModel(TokenIdMap vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options, const std::string& where);
  // Rank-based (tiktoken) model: a pair merges when its concatenation is a token, ranked by
  // that token's id; ignore_merges is implied.
  static std::unique_ptr<BpeModel> from_ranks(TokenIdMap vocab, const std::string& where);

  // Appends the ids of one pre-token.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // Null when the id has no token in the model.
  const std::string* id_to_token(int32_t id) const;
  int32_t num_ids() const { return static_cast<int32_t>(id_to_token_.size()); }
  bool is_byte_fallback_id(int32_t id) const;
  const BpeOptions& options() const { return options_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  BpeModel(TokenIdMap vocab, BpeOptions options);
  void tokenize_uncached(std::string_view word, std::vector<int32_t>& ids) const;
  void merge_symbols(std::vector<int32_t>& symbols) const;

  TokenIdMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
  int32_t unk_id_ = -1;
  int32_t byte_ids_[256];  // id of "<0xAB>" per byte, -1 when absent

  // Per-pre-token cache; bounded so that adversarial input cannot grow it without limit.
  static constexpr size_t kMaxCacheEntries = 200000;
  static constexpr size_t kMaxCachedWordBytes = 128;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace brisk
