// A Grammar lowered for parsing: every rule is a list of alternatives, each a flat list of
// elements that are single bytes, character classes (matched byte by byte as UTF-8), class
// stars (`[...]*`, kept as one looping element so that string contents cost one parser item)
// or rule references. Nested choices and repetitions become helper rules.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace brisk::grammar {

enum class ElementKind : uint8_t { kByte, kClass, kClassStar, kRule };

struct Element {
  ElementKind kind;
  int32_t value;  // kByte: the byte; kClass/kClassStar: class id; kRule: rule id
};

struct ByteClass {
  bool negated = false;
  std::vector<CharRange> ranges;  // code points, sorted and disjoint
  std::bitset<128> ascii;         // membership of the ASCII code points, negation applied

  bool contains(uint32_t cp) const;
  // True when some code point in [lo, hi] is in the class.
  bool may_contain(uint32_t lo, uint32_t hi) const;
};

struct Alternative {
  int32_t rule;
  int32_t begin;  // elements [begin, end) of ByteGrammar::elements
  int32_t end;
};

struct Site {
  int32_t alt;
  int32_t dot;  // the rule element's index in the alternative
  bool operator==(const Site&) const = default;
};

struct ByteRule {
  std::string name;
  std::vector<int32_t> alternatives;
  int32_t lookahead = -1;  // alternative id of the lookahead sequence (not part of any rule)
  bool nullable = false;
  bool helper = false;     // made by lowering (a nested choice or repetition)
  // For a helper whose context is fixed: where parsing goes on when it completes (its one
  // reference site, plus its own loop for a star). Empty for the others.
  std::vector<Site> continuations;
  // The user rule that a parse of this rule alone ends with: itself, or for a helper with
  // continuations the end rule of the rule it continues in.
  int32_t end_rule = -1;
  // The helpers of a bounded repetition whose copies each take at least one byte
  // (opt_k ::= "" | child opt_{k-1}): the family's first helper and k, the copies still allowed
  // (-1 and 0 for other rules). A token of n bytes meets the bound nowhere when k >= n, so the
  // family's positions classify it alike from every k >= n (TokenMaskCache reuses them).
  int32_t repeat_family = -1;
  int32_t repeat_left = 0;
};

struct LoweredSize {
  int64_t rules = 0;
  int64_t elements = 0;
};

struct ByteGrammar {
  std::vector<ByteRule> rules;
  std::vector<Alternative> alternatives;
  std::vector<Element> elements;
  std::vector<ByteClass> classes;
  int32_t root = -1;

  static ByteGrammar lower(const Grammar& grammar);
  // The rules and elements lower() makes of `grammar`, counted without lowering it, so that a
  // server can refuse what would take too long: repetitions are copied (x{m,n} makes n copies
  // of x and n - m helper rules), so a short grammar can lower to a huge one. Counts saturate
  // at 2^62.
  static LoweredSize lowered_size(const Grammar& grammar);
};

}  // namespace brisk::grammar
