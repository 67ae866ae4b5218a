// The grammar IR: a context-free grammar whose terminals are byte strings and character
// classes over Unicode code points (matched as UTF-8). Each rule has a body expression and an
// optional lookahead assertion, xgrammar's `(= ...)`: a hint naming what may follow the rule,
// used by the token-mask cache to reject tokens early (it must not contradict the language).
//
// Expressions live in one arena (Grammar::exprs) and refer to each other by index, so a
// grammar is a plain value that can be copied, printed and lowered (byte_grammar.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::grammar {

struct CharRange {
  uint32_t lo = 0;  // inclusive code points
  uint32_t hi = 0;
};

enum class ExprKind : uint8_t {
  kEmpty,      // matches ""
  kBytes,      // a literal byte string
  kCharClass,  // one code point in (or, negated, not in) `ranges`
  kRuleRef,    // the rule `rule`
  kSequence,   // children in order
  kChoice,     // one of children
  kRepeat,     // children[0] repeated min..max times (max -1: unbounded)
};

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  std::string bytes;               // kBytes
  std::vector<CharRange> ranges;   // kCharClass, sorted and disjoint
  bool negated = false;            // kCharClass
  int32_t rule = -1;               // kRuleRef
  std::vector<int32_t> children;   // kSequence, kChoice, kRepeat (expr ids)
  int32_t min = 0;                 // kRepeat
  int32_t max = -1;                // kRepeat; -1 is unbounded
};

struct Rule {
  std::string name;
  int32_t body = -1;       // expr id; -1 while the rule is declared but not yet defined
  int32_t lookahead = -1;  // expr id of the lookahead assertion, or -1
};

class Grammar {
 public:
  std::vector<Expr> exprs;
  std::vector<Rule> rules;
  int32_t root = -1;

  // Builders; each returns the new expr id.
  int32_t empty();
  int32_t bytes(std::string_view text);
  int32_t char_class(std::vector<CharRange> ranges, bool negated);
  int32_t ref(int32_t rule);
  int32_t sequence(std::vector<int32_t> children);
  int32_t choice(std::vector<int32_t> children);
  int32_t repeat(int32_t child, int32_t min, int32_t max);

  // The rule named `name`, declared (without a body) when absent.
  int32_t rule_id(std::string_view name);
  // -1 when no rule has that name.
  int32_t find_rule(std::string_view name) const;

  // EBNF text in xgrammar's notation; parse_ebnf(to_string()) gives an equal language.
  std::string to_string() const;
  std::string expr_to_string(int32_t expr) const;
};

// Sorts and merges ranges (adjacent ones too).
std::vector<CharRange> normalize_ranges(std::vector<CharRange> ranges);

}  // namespace brisk::grammar
