#include "tokenizer/added_vocabulary.h"

#include "tokenizer/utf8.h"

namespace brisk {
namespace {

// Code point ending at byte `end` (text is valid UTF-8).
char32_t char_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return utf8::decode(text, start);
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view key, int32_t token_index) {
  if (key.empty()) return;
  first_byte[static_cast<unsigned char>(key[0])] = true;
  int32_t node = 0;
  for (char c : key) {
    auto [it, inserted] = nodes[node].children.try_emplace(static_cast<unsigned char>(c), 0);
    if (inserted) {
      it->second = static_cast<int32_t>(nodes.size());
      nodes.emplace_back();
    }
    node = it->second;
  }
  nodes[node].token_index = token_index;
}

std::pair<int32_t, size_t> AddedVocabulary::Trie::longest_at(std::string_view text, size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = nodes[node].children.find(static_cast<unsigned char>(text[i]));
    if (it == nodes[node].children.end()) break;
    node = it->second;
    if (nodes[node].token_index >= 0) best = {nodes[node].token_index, i + 1 - pos};
  }
  return best;
}

void AddedVocabulary::add(AddedToken token) {
  if (token.content.empty()) return;
  if (token.normalized_content.empty()) token.normalized_content = token.content;
  auto existing = index_by_id_.find(token.id);
  size_t index;
  if (existing != index_by_id_.end()) {
    index = existing->second;
    tokens_[index] = token;
  } else {
    index = tokens_.size();
    tokens_.push_back(token);
    index_by_id_[token.id] = index;
  }
  id_by_content_[token.content] = token.id;
  if (token.special) special_contents_.insert(token.content);
  if (token.normalized) normalized_trie_.insert(token.normalized_content, static_cast<int32_t>(index));
  else raw_trie_.insert(token.content, static_cast<int32_t>(index));
}

std::vector<AddedSplit> AddedVocabulary::split(std::string_view text, bool normalized_tokens) const {
  const Trie& trie = normalized_tokens ? normalized_trie_ : raw_trie_;
  std::vector<AddedSplit> splits;
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!trie.first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    auto [index, length] = trie.longest_at(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos, stop = pos + length;
    pos = stop;  // matches never overlap, even when this one is rejected below (as in HF)
    if (token.single_word) {
      bool word_before = start > 0 && utf8::is_word_char(char_before(text, start));
      size_t after = stop;
      bool word_after = stop < text.size() && utf8::is_word_char(utf8::decode(text, after));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      size_t new_start = start;
      while (new_start > 0 && utf8::is_whitespace(char_before(text, new_start))) {
        size_t back = new_start - 1;
        while (back > 0 && (static_cast<unsigned char>(text[back]) & 0xC0) == 0x80) --back;
        new_start = back;
      }
      start = std::max(new_start, start_offset);
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t next = stop;
        if (!utf8::is_whitespace(utf8::decode(text, next))) break;
        stop = next;
      }
      pos = stop;
    }
    if (start_offset < start) splits.push_back({text.substr(start_offset, start - start_offset), -1, start_offset});
    splits.push_back({text.substr(start, stop - start), token.id, start});
    start_offset = stop;
  }
  if (start_offset < text.size() || text.empty())
    splits.push_back({text.substr(start_offset), -1, start_offset});
  return splits;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  auto it = index_by_id_.find(id);
  return it == index_by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  auto it = id_by_content_.find(std::string(content));
  if (it == id_by_content_.end()) return std::nullopt;
  return it->second;
}

bool AddedVocabulary::is_special(int32_t id) const {
  const AddedToken* token = find(id);
  return token && token->special;
}

}  // namespace brisk
