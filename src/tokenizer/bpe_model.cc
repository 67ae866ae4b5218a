#include "tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace brisk {

BpeModel::BpeModel(TokenIdMap vocab, BpeOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab_) max_id = std::max(max_id, id);
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  has_token_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [token, id] : vocab_) {
    id_to_token_[id] = token;
    has_token_[id] = true;
  }
  if (options_.unk_token) {
    auto it = vocab_.find(*options_.unk_token);
    if (it != vocab_.end()) unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
}

BpeModel::BpeModel(TokenIdMap vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, const std::string& where)
    : BpeModel(std::move(vocab), std::move(options)) {
  merges_.reserve(merges.size() * 2);
  const std::string& prefix = options_.continuing_subword_prefix;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    auto find = [&](const std::string& token) {
      auto it = vocab_.find(token);
      if (it == vocab_.end())
        throw_error(ErrorCode::kCorruptData, "{}: merge {} ('{} {}') uses token '{}' that is not in the vocabulary",
                    where, rank, left, right, token);
      return it->second;
    };
    int32_t a = find(left), b = find(right);
    std::string merged = left;
    merged += !prefix.empty() && right.starts_with(prefix) ? right.substr(prefix.size()) : right;
    int32_t new_id = find(merged);
    // The first occurrence of a pair keeps the best rank, as in HF.
    merges_.try_emplace(pair_key(a, b), Merge{static_cast<int32_t>(rank), new_id});
  }
}

std::unique_ptr<BpeModel> BpeModel::from_ranks(TokenIdMap vocab, const std::string& where) {
  BpeOptions options;
  options.ignore_merges = true;
  std::unique_ptr<BpeModel> owner(new BpeModel(std::move(vocab), options));
  BpeModel& model = *owner;
  // Every split of a multi-symbol token into two tokens is a merge of that token's rank.
  for (const auto& [token, id] : model.vocab_) {
    for (size_t cut = utf8::sequence_length(token, 0); cut < token.size();
         cut += std::max<size_t>(1, utf8::sequence_length(token, cut))) {
      auto left = model.vocab_.find(std::string_view(token).substr(0, cut));
      auto right = model.vocab_.find(std::string_view(token).substr(cut));
      if (left == model.vocab_.end() || right == model.vocab_.end()) continue;
      auto [it, inserted] = model.merges_.try_emplace(pair_key(left->second, right->second), Merge{id, id});
      if (!inserted && id < it->second.rank) it->second = Merge{id, id};
    }
  }
  if (model.merges_.empty() && model.vocab_.size() > 256)
    throw_error(ErrorCode::kCorruptData, "{}: no token of the rank file splits into two other tokens", where);
  return owner;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= num_ids() || !has_token_[id]) return nullptr;
  return &id_to_token_[id];
}

bool BpeModel::is_byte_fallback_id(int32_t id) const {
  if (!options_.byte_fallback) return false;
  const std::string* token = id_to_token(id);
  return token && token->size() == 6 && token->starts_with("<0x") && (*token)[5] == '>';
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t mark = ids.size();
  tokenize_uncached(word, ids);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kMaxCacheEntries) cache_.emplace(std::string(word), std::vector<int32_t>(ids.begin() + mark, ids.end()));
  }
}

void BpeModel::tokenize_uncached(std::string_view word, std::vector<int32_t>& ids) const {
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  bool previous_unk = false;
  std::string piece;
  for (size_t pos = 0; pos < word.size();) {
    size_t len = std::max<size_t>(1, utf8::sequence_length(word, pos));
    bool first = pos == 0, last = pos + len >= word.size();
    std::string_view ch = word.substr(pos, len);
    pos += len;
    piece.clear();
    if (!first) piece += options_.continuing_subword_prefix;
    piece += ch;
    if (last) piece += options_.end_of_word_suffix;
    auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      symbols.push_back(it->second);
      previous_unk = false;
      continue;
    }
    if (options_.byte_fallback &&
        std::all_of(ch.begin(), ch.end(), [&](char c) { return byte_ids_[static_cast<uint8_t>(c)] >= 0; })) {
      for (char c : ch) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
      previous_unk = false;
      continue;
    }
    if (unk_id_ >= 0) {
      if (!(options_.fuse_unk && previous_unk)) symbols.push_back(unk_id_);
      previous_unk = true;
    }
  }
  merge_symbols(symbols);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

void BpeModel::merge_symbols(std::vector<int32_t>& symbols) const {
  const size_t n = symbols.size();
  if (n < 2 || merges_.empty()) return;
  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    int32_t right = next[left];
    if (right < 0) return;
    auto it = merges_.find(pair_key(symbols[left], symbols[right]));
    if (it != merges_.end()) heap.push({it->second.rank, left, it->second.new_id});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    if (!alive[c.pos]) continue;
    int32_t right = next[c.pos];
    if (right < 0) continue;
    // Skip stale entries: either side may have changed since the candidate was pushed.
    auto it = merges_.find(pair_key(symbols[c.pos], symbols[right]));
    if (it == merges_.end() || it->second.new_id != c.new_id || it->second.rank != c.rank) continue;
    symbols[c.pos] = c.new_id;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    if (prev[c.pos] >= 0) consider(prev[c.pos]);
    consider(c.pos);
  }
  size_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[i]) symbols[out++] = symbols[i];
  symbols.resize(out);
}

}  // namespace brisk
