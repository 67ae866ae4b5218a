// Regular expression -> Grammar, for JSON-schema `pattern` and `guided_regex`: literals,
// escapes (\d \w \s \D \W \S, \n \t \xHH \uHHHH, escaped metacharacters), classes with
// ranges and negation, `.` (any code point but \n), groups (capturing, (?:...), named),
// alternation, quantifiers * + ? {m} {m,} {m,n} (lazy forms match the same language),
// and ^ $ at the ends. Lookaround and backreferences are errors (kUnsupported), as are
// anchors elsewhere; malformed expressions are kInvalidArgument naming the position.
#pragma once

#include <string_view>

#include "grammar/grammar.h"

namespace brisk::grammar {

Grammar regex_to_grammar(std::string_view regex);

// Adds the rules of `regex` to `grammar` and returns the expr that matches it (for
// json_schema_to_grammar's `pattern`); `rule_prefix` names the helper rules.
int32_t add_regex(Grammar& grammar, std::string_view regex, std::string_view rule_prefix);

}  // namespace brisk::grammar
