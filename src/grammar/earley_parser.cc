#include "grammar/earley_parser.h"

#include <algorithm>

#include "grammar/utf8.h"

namespace brisk::grammar {

namespace {

constexpr size_t kTableSize = 4096;  // power of two; sets larger than half of it fall back to scan

uint32_t hash_item(const ParserItem& item) {
  uint64_t h = uint64_t(uint32_t(item.alt)) * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t(uint32_t(item.dot)) + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
  h ^= uint64_t(uint32_t(item.origin)) * 0x165667B19E3779F9ull;
  h ^= uint64_t(item.utf8) * 0x27D4EB2F165667C5ull;
  return uint32_t(h >> 32);
}

// True when the bits `cp` of a `length`-byte character with `left` bytes to come can still
// end as a shortest-form code point (no overlong form, at most U+10FFFF) in the class.
bool may_complete(const ByteClass& cls, uint32_t cp, int left, uint32_t length) {
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  uint32_t lo = cp << (6 * left);
  uint32_t hi = lo | ((1u << (6 * left)) - 1);
  lo = std::max(lo, kMin[length]);
  hi = std::min(hi, 0x10ffffu);
  return cls.may_contain(lo, hi);
}

}  // namespace

EarleyParser::EarleyParser(const ByteGrammar& grammar) : g_(grammar), table_(kTableSize, -1) {}

void EarleyParser::begin_set() {
  for (int32_t slot : touched_) table_[slot] = -1;
  touched_.clear();
  set_begin_.push_back(int32_t(items_.size()));
  can_end_.push_back(0);
  if (chain_tops_.size() < set_begin_.size()) chain_tops_.resize(set_begin_.size());
  chain_tops_[set_begin_.size() - 1].clear();
}

void EarleyParser::reset_to_root() {
  items_.clear();
  set_begin_.clear();
  can_end_.clear();
  root_mode_ = true;
  begin_set();
  for (int32_t alt : g_.rules[g_.root].alternatives) add(ParserItem{alt, 0, 0, 0});
  close_current_set();
}

void EarleyParser::reset_to_item(ParserItem item, std::span<const Site> context) {
  items_.clear();
  set_begin_.clear();
  can_end_.clear();
  root_mode_ = false;
  context_.assign(context.begin(), context.end());
  begin_set();
  item.origin = -1;
  add(item);
  close_current_set();
}

void EarleyParser::reset_to_alternative(int32_t alt) { reset_to_item(ParserItem{alt, 0, -1, 0}); }

void EarleyParser::add(const ParserItem& item) {
  int32_t begin = set_begin_.back();
  int32_t size = int32_t(items_.size()) - begin;
  if (size * 2 >= int32_t(kTableSize)) {
    for (int32_t i = begin; i < int32_t(items_.size()); ++i) {
      if (items_[i] == item) return;
    }
    items_.push_back(item);
    return;
  }
  uint32_t slot = hash_item(item) & (kTableSize - 1);
  while (table_[slot] >= 0) {
    if (items_[table_[slot]] == item) return;
    slot = (slot + 1) & (kTableSize - 1);
  }
  table_[slot] = int32_t(items_.size());
  touched_.push_back(int32_t(slot));
  items_.push_back(item);
}

bool EarleyParser::is_scannable(const ParserItem& item) const {
  if (item.utf8 != 0) return true;
  const Alternative& alt = g_.alternatives[item.alt];
  if (item.dot >= alt.end - alt.begin) return false;
  return g_.elements[alt.begin + item.dot].kind != ElementKind::kRule;
}

void EarleyParser::complete(const ParserItem& item) {
  int32_t rule = g_.alternatives[item.alt].rule;
  if (item.origin < 0) {
    size_t level = size_t(-1 - item.origin);
    if (rule >= 0 && !g_.rules[rule].continuations.empty()) {
      for (const Site& site : g_.rules[rule].continuations) add(ParserItem{site.alt, site.dot + 1, item.origin, 0});
    } else if (rule >= 0 && level < context_.size()) {
      const Site& parent = context_[level];
      add(ParserItem{parent.alt, parent.dot + 1, item.origin - 1, 0});
    } else {  // rule -1: a lookahead sequence
      can_end_.back() = 1;
    }
    return;
  }
  if (root_mode_ && rule == g_.root && item.origin == 0) can_end_.back() = 1;
  if (item.origin + 1 < int32_t(set_begin_.size())) {
    if (const ParserItem* top = chain_top(item.origin, rule)) {
      add(*top);
      return;
    }
  }
  int32_t begin = set_begin_[item.origin];
  // The origin set may be the current one (an empty completion); index, as items_ grows.
  int32_t end = item.origin + 1 < int32_t(set_begin_.size()) ? set_begin_[item.origin + 1]
                                                             : int32_t(items_.size());
  for (int32_t i = begin; i < end; ++i) {
    const ParserItem waiting = items_[i];
    if (waiting.utf8 != 0) continue;
    const Alternative& alt = g_.alternatives[waiting.alt];
    if (waiting.dot >= alt.end - alt.begin) continue;
    const Element& el = g_.elements[alt.begin + waiting.dot];
    if (el.kind == ElementKind::kRule && el.value == rule) {
      add(ParserItem{waiting.alt, waiting.dot + 1, waiting.origin, 0});
    }
  }
}

void EarleyParser::find_context(const ParserItem& item, size_t max_depth, std::vector<Site>& context) const {
  context.clear();
  ParserItem current = item;
  while (context.size() < max_depth && current.origin >= 0) {
    int32_t rule = g_.alternatives[current.alt].rule;
    int32_t begin = set_begin_[current.origin];
    int32_t end = current.origin + 1 < int32_t(set_begin_.size()) ? set_begin_[current.origin + 1] : int32_t(items_.size());
    const ParserItem* parent = nullptr;
    int num_parents = 0;
    bool same_site = true;
    for (int32_t i = begin; i < end; ++i) {
      const ParserItem& waiting = items_[i];
      if (waiting.utf8 != 0) continue;
      const Alternative& alt = g_.alternatives[waiting.alt];
      if (waiting.dot >= alt.end - alt.begin) continue;
      const Element& el = g_.elements[alt.begin + waiting.dot];
      if (el.kind != ElementKind::kRule || el.value != rule) continue;
      if (parent != nullptr && (parent->alt != waiting.alt || parent->dot != waiting.dot)) same_site = false;
      if (parent == nullptr) parent = &waiting;
      ++num_parents;
    }
    if (parent == nullptr || !same_site) return;
    const Alternative& parent_alt = g_.alternatives[parent->alt];
    bool fixed = !g_.rules[rule].continuations.empty();
    bool tail_self = parent_alt.rule == rule && parent->dot + 1 == parent_alt.end - parent_alt.begin;
    if (!fixed && !tail_self) {
      const Site site{parent->alt, parent->dot};
      if (std::find(context.begin(), context.end(), site) != context.end()) return;
      context.push_back(site);
    }
    if (num_parents != 1) return;
    current = *parent;
  }
}

const ParserItem* EarleyParser::chain_top(int32_t origin, int32_t rule) {
  // Walks up iteratively (a chain is as long as a string can be), then memoises every level.
  struct Level {
    int32_t origin, rule;
  };
  std::vector<Level> path;
  ParserItem top{};
  bool found = false;
  int32_t o = origin, r = rule;
  while (true) {
    const ChainTop* memo = nullptr;
    for (const ChainTop& m : chain_tops_[o]) {
      if (m.rule == r) memo = &m;
    }
    if (memo != nullptr) {
      if (memo->found) {
        top = memo->top;
        found = true;
      }
      break;
    }
    const ParserItem* waiting_item = nullptr;
    int num_waiting = 0;
    for (int32_t i = set_begin_[o]; i < set_begin_[o + 1] && num_waiting < 2; ++i) {
      const ParserItem& waiting = items_[i];
      if (waiting.utf8 != 0) continue;
      const Alternative& alt = g_.alternatives[waiting.alt];
      if (waiting.dot >= alt.end - alt.begin) continue;
      const Element& el = g_.elements[alt.begin + waiting.dot];
      if (el.kind == ElementKind::kRule && el.value == r) {
        waiting_item = &waiting;
        ++num_waiting;
      }
    }
    if (num_waiting != 1) break;
    const Alternative& alt = g_.alternatives[waiting_item->alt];
    if (waiting_item->dot + 1 != alt.end - alt.begin) break;
    path.push_back(Level{o, r});
    top = ParserItem{waiting_item->alt, waiting_item->dot + 1, waiting_item->origin, 0};
    found = true;
    // Stop where completing has another effect: the start item, or the root at set 0.
    if (top.origin < 0 || (root_mode_ && alt.rule == g_.root && top.origin == 0)) break;
    o = top.origin;
    r = alt.rule;
  }
  if (path.empty() || path.back().origin != o || path.back().rule != r) {
    // (o, r) ended the walk without a link of its own: remember that it has none.
    bool has_memo = false;
    for (const ChainTop& m : chain_tops_[o]) has_memo = has_memo || m.rule == r;
    if (!has_memo && !found) chain_tops_[o].push_back(ChainTop{r, false, {}});
  }
  for (const Level& level : path) chain_tops_[level.origin].push_back(ChainTop{level.rule, true, top});
  if (!found) return nullptr;
  for (const ChainTop& m : chain_tops_[origin]) {
    if (m.rule == rule) return m.found ? &m.top : nullptr;
  }
  return nullptr;
}

void EarleyParser::close_current_set() {
  int32_t set = int32_t(set_begin_.size()) - 1;
  for (size_t i = size_t(set_begin_.back()); i < items_.size(); ++i) {
    const ParserItem item = items_[i];
    if (item.utf8 != 0) continue;
    const Alternative& alt = g_.alternatives[item.alt];
    if (item.dot >= alt.end - alt.begin) {
      complete(item);
      continue;
    }
    const Element& el = g_.elements[alt.begin + item.dot];
    if (el.kind == ElementKind::kRule) {
      const ByteRule& rule = g_.rules[el.value];
      for (int32_t a : rule.alternatives) add(ParserItem{a, 0, set, 0});
      if (rule.nullable) add(ParserItem{item.alt, item.dot + 1, item.origin, 0});
    } else if (el.kind == ElementKind::kClassStar) {
      add(ParserItem{item.alt, item.dot + 1, item.origin, 0});
    }
  }
}

void EarleyParser::scan(const ParserItem& item, uint8_t byte) {
  const Alternative& alt = g_.alternatives[item.alt];
  if (item.utf8 == 0 && item.dot >= alt.end - alt.begin) return;
  const Element& el = g_.elements[alt.begin + item.dot];
  if (el.kind == ElementKind::kRule) return;
  if (el.kind == ElementKind::kByte) {
    if (byte == uint8_t(el.value)) add(ParserItem{item.alt, item.dot + 1, item.origin, 0});
    return;
  }
  const ByteClass& cls = g_.classes[el.value];
  int32_t next_dot = el.kind == ElementKind::kClass ? item.dot + 1 : item.dot;
  int left = item.utf8_left();
  if (left > 0) {
    if ((byte & 0xc0) != 0x80) return;
    uint32_t cp = ((item.utf8 & 0xffffff) << 6) | (byte & 0x3f);
    --left;
    if (left == 0) {
      if (cls.contains(cp)) add(ParserItem{item.alt, next_dot, item.origin, 0});
      return;
    }
    if (may_complete(cls, cp, left, item.utf8 >> 26)) {
      add(ParserItem{item.alt, item.dot, item.origin, (item.utf8 & 0xfc000000u) | (uint32_t(left) << 24) | cp});
    }
    return;
  }
  if (byte < 0x80) {
    if (cls.ascii[byte]) add(ParserItem{item.alt, next_dot, item.origin, 0});
    return;
  }
  int len = utf8_sequence_length(byte);
  if (len == 0) return;
  static constexpr uint8_t kLeadMask[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  uint32_t cp = byte & kLeadMask[len];
  if (may_complete(cls, cp, len - 1, uint32_t(len))) {
    add(ParserItem{item.alt, item.dot, item.origin, (uint32_t(len) << 26) | (uint32_t(len - 1) << 24) | cp});
  }
}

bool EarleyParser::advance(uint8_t byte) {
  int32_t begin = set_begin_.back();
  int32_t end = int32_t(items_.size());
  begin_set();
  for (int32_t i = begin; i < end; ++i) scan(items_[i], byte);
  if (int32_t(items_.size()) == set_begin_.back()) {
    set_begin_.pop_back();
    can_end_.pop_back();
    for (int32_t slot : touched_) table_[slot] = -1;
    touched_.clear();
    return false;
  }
  close_current_set();
  return true;
}

void EarleyParser::pop(int32_t num_bytes) {
  for (int32_t i = 0; i < num_bytes && set_begin_.size() > 1; ++i) {
    items_.resize(size_t(set_begin_.back()));
    set_begin_.pop_back();
    can_end_.pop_back();
  }
  for (int32_t slot : touched_) table_[slot] = -1;
  touched_.clear();
}

}  // namespace brisk::grammar
