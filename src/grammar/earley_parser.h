// An Earley parser over the bytes of a ByteGrammar, with one item set per consumed byte so
// that any number of bytes can be rolled back. Items inside a multi-byte character carry
// the UTF-8 decoding state (bytes left, code point so far).
//
// Two modes: parse from the root rule (GrammarMatcher), or from one item whose rule has no
// parent (TokenMaskCache: "what can this grammar position consume on its own").
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/byte_grammar.h"

namespace brisk::grammar {

struct ParserItem {
  int32_t alt = 0;
  int32_t dot = 0;       // index into the alternative's elements
  int32_t origin = 0;    // item set where the alternative started; -1: no parent
  uint32_t utf8 = 0;     // (length << 26) | (bytes left << 24) | code point bits; 0 between characters

  int utf8_left() const { return int((utf8 >> 24) & 3); }
  bool operator==(const ParserItem&) const = default;
};

class EarleyParser {
 public:
  explicit EarleyParser(const ByteGrammar& grammar);

  // Starts over with the root rule.
  void reset_to_root();
  // Starts over with `item` alone: completing its rule ends the parse, or goes on in the
  // rule's fixed context (a helper rule made by lowering), else at context[0], whose rule's
  // completion goes on at context[1], and so on (origins -1, -2, ... stand for these levels).
  void reset_to_item(ParserItem item, std::span<const Site> context = {});
  // The parents of `item` that are certain from the chart, innermost first, at most
  // `max_depth` (what reset_to_item takes as `context`). Levels that change nothing (helper
  // rules with a fixed context, tail self-recursion) are left out, and the context ends before
  // a site it already holds (recursion: one cache entry per nesting depth would be unbounded).
  void find_context(const ParserItem& item, size_t max_depth, std::vector<Site>& context) const;
  // Starts over with the lookahead alternative `alt` (a pseudo rule without parent).
  void reset_to_alternative(int32_t alt);

  // Consumes one byte; false (and nothing changes) when no item can take it.
  bool advance(uint8_t byte);
  // Drops the last `num_bytes` consumed bytes.
  void pop(int32_t num_bytes);
  // Bytes consumed since the reset.
  int32_t num_bytes() const { return int32_t(set_begin_.size()) - 1; }
  // True when the parse can end here (root mode: the root rule is complete; item mode: the
  // start item's rule is complete).
  bool can_end() const { return can_end_.back() != 0; }
  bool can_end_at(int32_t num_bytes) const { return can_end_[num_bytes] != 0; }

  // The items of the current set.
  std::span<const ParserItem> current_items() const {
    return {items_.data() + set_begin_.back(), items_.size() - size_t(set_begin_.back())};
  }
  // True when an item waits for a byte (a terminal next, or inside a character).
  bool is_scannable(const ParserItem& item) const;

  const ByteGrammar& grammar() const { return g_; }

 private:
  void add(const ParserItem& item);
  void close_current_set();
  void complete(const ParserItem& item);
  void scan(const ParserItem& item, uint8_t byte);
  void begin_set();
  // Leo's right-recursion shortcut: when set `origin` holds exactly one item waiting for
  // `rule` and that item ends right after it, completing `rule` there completes that item's
  // rule in turn; the top of such a chain is memoised per set, so that a long right-recursive
  // run (string contents) completes in constant time. Null when the chain is empty.
  const ParserItem* chain_top(int32_t origin, int32_t rule);

  const ByteGrammar& g_;
  std::vector<ParserItem> items_;  // all sets, back to back
  std::vector<int32_t> set_begin_; // set k is items_[set_begin_[k], set_begin_[k+1])
  std::vector<uint8_t> can_end_;   // per set
  struct ChainTop {
    int32_t rule;
    bool found;
    ParserItem top;
  };
  std::vector<std::vector<ChainTop>> chain_tops_;  // per set
  bool root_mode_ = true;
  std::vector<Site> context_;  // item mode: the parents of the start item
  // Dedup of the set being built: an open-addressing table of item indices.
  std::vector<int32_t> table_;
  std::vector<int32_t> touched_;
};

}  // namespace brisk::grammar
