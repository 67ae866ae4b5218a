// Added tokens of HF tokenizer.json ("added_tokens"): strings matched in the input before the
// model runs. Tokens with normalized=false are found in the raw text, the others in the
// normalized text (by their normalized form); matching is leftmost-longest, and lstrip/rstrip
// let a token swallow neighbouring whitespace, single_word rejects matches inside words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace brisk {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
  // The content as the normalizer rewrites it; what normalized tokens match and decode to.
  std::string normalized_content;
};

// One piece of the input after added-token extraction: either an added token or plain text.
struct AddedSplit {
  std::string_view text;
  int32_t token_id = -1;  // -1 for plain text
  size_t offset = 0;      // byte offset of text in the string that was split
};

class AddedVocabulary {
 public:
  void add(AddedToken token);

  // Splits text on the tokens with normalized == `normalized_tokens`.
  std::vector<AddedSplit> split(std::string_view text, bool normalized_tokens) const;

  const AddedToken* find(int32_t id) const;
  std::optional<int32_t> token_to_id(std::string_view content) const;
  bool is_special(int32_t id) const;
  // Whether `text` is the content of a special token (HF's special_tokens_set).
  bool is_special_content(const std::string& text) const { return special_contents_.count(text) > 0; }
  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Trie {
    struct Node {
      std::unordered_map<unsigned char, int32_t> children;
      int32_t token_index = -1;
    };
    std::vector<Node> nodes{Node{}};
    bool first_byte[256] = {};
    void insert(std::string_view key, int32_t token_index);
    // Longest key starting at text[pos]: (token index, length) or (-1, 0).
    std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos) const;
  };

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> index_by_id_;
  std::unordered_map<std::string, int32_t> id_by_content_;
  std::unordered_set<std::string> special_contents_;
  Trie raw_trie_, normalized_trie_;
};

}  // namespace brisk
