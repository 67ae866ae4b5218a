// The adaptive token-mask cache (xgrammar's idea): for each grammar position (a scannable
// parser item, independent of where its rule started) the vocabulary splits into tokens
// accepted whatever the context, tokens rejected whatever the context, and uncertain tokens
// that run past the end of the item's rule, so that the rest of the stack decides. At run
// time a mask is the union of the accepted sets of the current items plus the uncertain
// tokens that the full parser accepts.
//
// Classification of a token from an item of rule R (the rule parsed alone, no parent; for a
// helper rule made by lowering, R is the user rule it is part of, parsed from the item on):
//   accepted   every byte is consumed inside R (R may complete exactly at the last byte);
//              with a context, R is the rule of the outermost parent and the parse goes on
//              through the parents;
//   uncertain  not accepted, R can complete after k >= 1 of its bytes, R is not the root
//              rule, and the rest of the token from some such k passes R's lookahead
//              assertion (consumed by it, or completing it) when R has one;
//   rejected   otherwise.
// Entries are computed on first use (the vocabulary split over threads), or beforehand for the
// positions grammar_positions.h finds (precompute), and kept for the life of the compiled grammar. A position at the start of a bounded repetition's copy (ByteRule::
// repeat_family) starts from a sibling's entry in the same context: tokens no longer than both
// positions' remaining copies keep its classes, and only the longer ones are walked (none where
// both bounds pass the longest token: the position then shares the sibling's entry).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/byte_grammar.h"
#include "grammar/earley_parser.h"
#include "grammar/grammar_positions.h"
#include "grammar/token_vocab.h"

namespace brisk::grammar {

struct PositionMask {
  // Accepted tokens: a bitset over token ids when many, else a list of ids.
  std::vector<uint32_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  // Uncertain tokens as indices into TokenVocab::sorted() (so that they stay in byte order).
  std::vector<int32_t> uncertain;

  std::vector<int32_t> accepted_tokens() const;  // the ids of either form
};

// The most certain parents a cache entry takes into account (EarleyParser::find_context): deeper
// contexts let the cache accept tokens that close a rule (a string and the comma after it); a
// context that reaches the root leaves no token uncertain. Recursion ends a context earlier, so
// recursive grammars keep a bounded number of entries.
inline constexpr size_t kMaxContextDepth = 64;

class TokenMaskCache {
 public:
  TokenMaskCache(const ByteGrammar& grammar, const TokenVocab& vocab);

  // The entry of `item` (its origin is ignored) within `context` (its certain parents,
  // EarleyParser::find_context); computed on first use over at most max_threads threads (0: the
  // machine's), while other threads read or compute other entries.
  const PositionMask& get(const ParserItem& item, std::span<const Site> context, int max_threads = 0);
  // Computes the entries of `positions` over num_threads threads, each position on one, until
  // `deadline` (what is left is computed on first use).
  void precompute(std::span<const GrammarPosition> positions, int num_threads,
                  std::chrono::steady_clock::time_point deadline);
  size_t num_entries() const;

 private:
  // (alt, dot, utf8, then alt and dot of each context site) as bytes.
  using Key = std::string;

  // Accepted token ids and uncertain sorted-vocabulary indices, in byte order.
  struct Classified {
    std::vector<int32_t> accepted, uncertain;
  };

  // Large vocabularies are split by first byte over several threads (a new position of a
  // 150k vocabulary takes tens of milliseconds of parsing).
  // Tokens of at most `known_length` bytes are taken from `known` (a repetition sibling's entry).
  std::unique_ptr<PositionMask> compute(const ParserItem& item, std::span<const Site> context,
                                        const PositionMask* known, size_t known_length, int max_threads);
  // Tokens of more than `min_length` bytes whose first byte is in [first_byte, end_byte).
  void classify(const ParserItem& item, std::span<const Site> context, int first_byte, int end_byte,
                size_t min_length, Classified& out) const;

  // The item's rule when the item starts a copy of a bounded repetition (a family member at its
  // first element, between characters), else null.
  const ByteRule* repetition_start(const ParserItem& item) const;

  struct Sibling {
    int32_t left;  // copies the position still allows
    Key key;       // of its entry
  };

  const ByteGrammar& grammar_;
  const TokenVocab& vocab_;
  size_t max_token_bytes_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable computed_;
  std::unordered_map<Key, std::shared_ptr<const PositionMask>> entries_;
  std::unordered_set<Key> computing_;
  // Computed starts of repetition copies by (family, context).
  std::unordered_map<Key, std::vector<Sibling>> siblings_;
};

}  // namespace brisk::grammar
