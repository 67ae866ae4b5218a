// The grammar positions a matcher can reach, keyed as the token-mask cache keys them, found from
// the grammar alone so that a grammar's cache can be filled when it is compiled (as xgrammar
// does) rather than by the first requests that reach each position.
//
// A position is an item waiting for a byte at a byte, class or class-star element (between
// characters) of a rule reachable from the root, with each context EarleyParser::find_context
// gives it when the chart holds one parent per level: the reference sites of its rule, then of
// that site's rule, and so on, leaving out the levels find_context leaves out (helpers with a
// fixed context, tail self-recursion) and ending where it ends (the root, a site already in the
// context, a left-recursive rule, whose own loop is a second parent). Charts with several parents
// at a level (ambiguous grammars) and items inside a character give shorter or other keys at run
// time; those positions are computed when first reached.
#pragma once

#include <cstddef>
#include <vector>

#include "grammar/byte_grammar.h"
#include "grammar/earley_parser.h"

namespace brisk::grammar {

struct GrammarPosition {
  ParserItem item;            // origin 0, utf8 0
  std::vector<Site> context;  // innermost first
};

// At most max_positions positions (the first found, rules in order from the root), each context
// at most max_depth sites.
std::vector<GrammarPosition> reachable_positions(const ByteGrammar& grammar, size_t max_depth, size_t max_positions);

}  // namespace brisk::grammar
