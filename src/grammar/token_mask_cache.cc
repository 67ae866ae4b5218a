#include "grammar/token_mask_cache.h"

#include <algorithm>
#include <climits>

namespace brisk::grammar {

TokenMaskCache::TokenMaskCache(const ByteGrammar& grammar, const TokenVocab& vocab)
    : grammar_(grammar), vocab_(vocab), local_(grammar), lookahead_(grammar) {}

size_t TokenMaskCache::num_entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

const PositionMask& TokenMaskCache::get(const ParserItem& item, std::span<const Site> context) {
  Key key;
  auto append = [&](int32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  append(item.alt);
  append(item.dot);
  append(int32_t(item.utf8));
  for (const Site& site : context) {
    append(site.alt);
    append(site.dot);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it != entries_.end()) return *it->second;
  auto [inserted, _] = entries_.emplace(std::move(key), compute(item, context));
  return *inserted->second;
}

bool TokenMaskCache::passes_lookahead(int32_t lookahead_alt, const std::string& token, size_t from) {
  lookahead_.reset_to_alternative(lookahead_alt);
  if (lookahead_.can_end()) return true;
  for (size_t i = from; i < token.size(); ++i) {
    if (!lookahead_.advance(uint8_t(token[i]))) return false;
    if (lookahead_.can_end()) return true;
  }
  return true;  // the whole rest was consumed
}

std::unique_ptr<PositionMask> TokenMaskCache::compute(const ParserItem& start, std::span<const Site> context) {
  auto mask = std::make_unique<PositionMask>();
  int32_t innermost = context.empty() ? grammar_.alternatives[start.alt].rule
                                      : grammar_.alternatives[context.back().alt].rule;
  int32_t rule = grammar_.rules[innermost].end_rule;
  bool is_root = rule == grammar_.root;
  int32_t lookahead = grammar_.rules[rule].lookahead;
  const auto& sorted = vocab_.sorted();
  const auto& lcp = vocab_.sorted_lcp();

  local_.reset_to_item(start, context);
  std::vector<int32_t> accepted;
  // Walk the tokens in byte order, keeping the parser at the longest prefix shared with the
  // last token walked: `depth` bytes of it are pushed. reach_or[k]: the rule can complete
  // after some number of bytes in 1..k.
  int32_t depth = 0;
  std::vector<uint8_t> reach_or{0};
  for (int b = 0; b < 256; ++b) {
    int32_t begin = vocab_.first_byte_begin(b);
    int32_t end = vocab_.first_byte_begin(b + 1);
    if (begin == end) continue;
    local_.pop(depth);
    reach_or.resize(1);
    depth = 0;
    if (!local_.advance(uint8_t(b))) continue;  // every token starting with b is rejected
    local_.pop(1);
    int32_t run_min = 0;  // common prefix of the next token and the last one walked
    for (int32_t i = begin; i < end; ++i) {
      run_min = std::min(run_min, lcp[i]);
      if (depth > run_min) {
        local_.pop(depth - run_min);
        reach_or.resize(size_t(run_min) + 1);
        depth = run_min;
      }
      run_min = INT32_MAX;
      const std::string& token = vocab_.token_bytes(sorted[i]);
      bool ok = true;
      while (depth < int32_t(token.size())) {
        if (!local_.advance(uint8_t(token[depth]))) {
          ok = false;
          break;
        }
        ++depth;
        reach_or.push_back(reach_or.back() | uint8_t(local_.can_end()));
      }
      if (ok) {
        accepted.push_back(sorted[i]);
        continue;
      }
      bool reaches_end = depth > 0 && reach_or[depth] != 0;
      if (reaches_end && !is_root) {
        bool passes = lookahead < 0;
        for (int32_t k = depth; k >= 1 && !passes; --k) {
          if (local_.can_end_at(k)) passes = passes_lookahead(lookahead, token, size_t(k));
        }
        if (passes) mask->uncertain.push_back(i);
        continue;  // the rest of the token decided: tokens sharing this prefix may differ
      }
      // Tokens that share this one's first depth + 1 bytes fail at the same byte.
      while (i + 1 < end && lcp[i + 1] > depth) {
        ++i;
        run_min = std::min(run_min, lcp[i]);
      }
    }
  }
  local_.pop(depth);
  if (accepted.size() * 32 >= size_t(vocab_.vocab_size())) {
    mask->accepted_bits.assign((size_t(vocab_.vocab_size()) + 31) / 32, 0);
    for (int32_t id : accepted) mask->accepted_bits[id >> 5] |= 1u << (id & 31);
  } else {
    mask->accepted_ids = std::move(accepted);
  }
  return mask;
}

}  // namespace brisk::grammar
