#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <bitset>

#include "core/error.h"

namespace brisk::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), parser_(grammar_->byte_grammar()) {
  parser_.reset_to_root();
}

void GrammarMatcher::reset() {
  parser_.reset_to_root();
  step_bytes_.clear();
  terminated_ = false;
}

bool GrammarMatcher::accept_string(std::string_view bytes) {
  if (terminated_) return false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!parser_.advance(uint8_t(bytes[i]))) {
      parser_.pop(int32_t(i));
      return false;
    }
  }
  step_bytes_.push_back(int32_t(bytes.size()));
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  const TokenVocab& vocab = grammar_->vocab();
  if (terminated_ || id < 0 || id >= vocab.vocab_size()) return false;
  if (vocab.is_stop(id)) {
    if (!parser_.can_end()) return false;
    terminated_ = true;
    step_bytes_.push_back(-1);
    return true;
  }
  if (vocab.is_special(id)) return false;
  return accept_string(vocab.token_bytes(id));
}

void GrammarMatcher::rollback(int32_t num_tokens) {
  BRISK_CHECK(num_tokens >= 0 && num_tokens <= int32_t(step_bytes_.size()),
              "grammar: cannot roll back {} tokens, only {} were accepted", num_tokens, step_bytes_.size());
  for (int32_t i = 0; i < num_tokens; ++i) {
    int32_t n = step_bytes_.back();
    step_bytes_.pop_back();
    if (n < 0) {
      terminated_ = false;
    } else {
      parser_.pop(n);
    }
  }
}

bool GrammarMatcher::token_accepted_now(const std::string& bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!parser_.advance(uint8_t(bytes[i]))) {
      parser_.pop(int32_t(i));
      return false;
    }
  }
  parser_.pop(int32_t(bytes.size()));
  return true;
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> words) {
  BRISK_CHECK(int32_t(words.size()) >= bitmask_words(), "grammar: bitmask has {} words, needs {}",
              words.size(), bitmask_words());
  std::fill(words.begin(), words.end(), 0u);
  const TokenVocab& vocab = grammar_->vocab();
  if (terminated_) return;
  TokenMaskCache& cache = grammar_->mask_cache();
  candidates_.clear();
  auto items = parser_.current_items();
  seen_.clear();
  for (size_t i = 0; i < items.size(); ++i) {
    const ParserItem& item = items[i];
    if (!parser_.is_scannable(item)) continue;
    parser_.find_context(item, kMaxContextDepth, context_);
    const PositionMask& mask = cache.get(item, context_);
    if (std::find(seen_.begin(), seen_.end(), &mask) != seen_.end()) continue;  // another origin
    seen_.push_back(&mask);
    if (!mask.accepted_bits.empty()) {
      for (size_t w = 0; w < mask.accepted_bits.size(); ++w) words[w] |= mask.accepted_bits[w];
    }
    for (int32_t id : mask.accepted_ids) words[id >> 5] |= 1u << (id & 31);
    candidates_.insert(candidates_.end(), mask.uncertain.begin(), mask.uncertain.end());
  }
  std::sort(candidates_.begin(), candidates_.end());
  candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
  // The uncertain tokens through the full parser, in byte order: the parser keeps the
  // prefix shared with the previous candidate.
  const auto& sorted = vocab.sorted();
  const std::string* prev = nullptr;
  int32_t depth = 0;
  for (int32_t index : candidates_) {
    int32_t id = sorted[index];
    if (words[id >> 5] & (1u << (id & 31))) continue;
    const std::string& token = vocab.token_bytes(id);
    if (prev != nullptr) {
      int32_t common = 0;
      while (common < depth && common < int32_t(token.size()) && (*prev)[common] == token[common]) ++common;
      parser_.pop(depth - common);
      depth = common;
    }
    prev = &token;
    bool ok = true;
    while (depth < int32_t(token.size())) {
      if (!parser_.advance(uint8_t(token[depth]))) {
        ok = false;
        break;
      }
      ++depth;
    }
    if (ok) words[id >> 5] |= 1u << (id & 31);
  }
  parser_.pop(depth);
  if (parser_.can_end()) {
    for (int32_t id : vocab.stop_ids()) words[id >> 5] |= 1u << (id & 31);
  }
}

void GrammarMatcher::fill_next_token_bitmask_reference(std::span<uint32_t> words) {
  BRISK_CHECK(int32_t(words.size()) >= bitmask_words(), "grammar: bitmask has {} words, needs {}",
              words.size(), bitmask_words());
  std::fill(words.begin(), words.end(), 0u);
  if (terminated_) return;
  const TokenVocab& vocab = grammar_->vocab();
  for (int32_t id : vocab.sorted()) {
    if (token_accepted_now(vocab.token_bytes(id))) words[id >> 5] |= 1u << (id & 31);
  }
  if (parser_.can_end()) {
    for (int32_t id : vocab.stop_ids()) words[id >> 5] |= 1u << (id & 31);
  }
}

int GrammarMatcher::forced_next_byte() {
  const ByteGrammar& g = parser_.grammar();
  // Bytes that items surely take (a byte element, an ASCII member of a class), and bytes that
  // only the parser can tell (inside or at the start of a multi-byte character).
  std::bitset<256> sure, unsure;
  for (const ParserItem& item : parser_.current_items()) {
    if (!parser_.is_scannable(item)) continue;
    if (item.utf8 != 0) {
      for (int b = 0x80; b < 0xc0; ++b) unsure.set(size_t(b));
      continue;
    }
    const Alternative& alt = g.alternatives[item.alt];
    const Element& el = g.elements[alt.begin + item.dot];
    if (el.kind == ElementKind::kByte) {
      sure.set(size_t(uint8_t(el.value)));
      continue;
    }
    const ByteClass& cls = g.classes[el.value];
    for (size_t b = 0; b < 128; ++b) sure[b] = sure[b] || cls.ascii[b];
    if (cls.may_contain(0x80, 0x10ffff)) {
      for (int b = 0xc0; b < 0x100; ++b) unsure.set(size_t(b));
    }
  }
  if (sure.count() > 1) return 256;
  int found = -1;
  for (int b = 0; b < 256; ++b) {
    if (sure[size_t(b)]) found = b;
  }
  for (int b = 0x80; b < 0x100; ++b) {
    if (!unsure[size_t(b)] || b == found || !parser_.advance(uint8_t(b))) continue;
    parser_.pop(1);
    if (found >= 0) return 256;
    found = b;
  }
  return found;
}

std::string GrammarMatcher::find_jump_forward_string() {
  std::string forced;
  if (terminated_) return forced;
  while (!parser_.can_end()) {
    const int next = forced_next_byte();
    if (next < 0 || next > 255) break;
    parser_.advance(uint8_t(next));
    forced += char(next);
  }
  parser_.pop(int32_t(forced.size()));
  // Whole characters only, as xgrammar: nothing while inside a character, and no trailing
  // partial one.
  if (!forced.empty() && (uint8_t(forced[0]) & 0xc0) == 0x80) return {};
  size_t end = forced.size();
  size_t i = end;
  while (i > 0 && (uint8_t(forced[i - 1]) & 0xc0) == 0x80) --i;
  if (i > 0) {
    uint8_t lead = uint8_t(forced[i - 1]);
    size_t len = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    if (end - (i - 1) < len) forced.resize(i - 1);
  }
  return forced;
}

}  // namespace brisk::grammar
