// EBNF (GBNF) text -> Grammar, in the dialect of llama.cpp's GBNF and xgrammar:
//   root ::= "{" ws members? "}"        rules; `root` is the start rule unless told otherwise
//   "lit\n\"\x41\u00e9"                 string literals with C-style escapes
//   [a-z_] [^"\\] .                     character classes (negated), `.` is any code point
//   ( ... ) a | b  x* x+ x? x{2} x{2,} x{2,5}   grouping, choice, repetition
//   # comment                           to the end of the line
//   rule ::= body (= lookahead)          xgrammar's lookahead assertion
// Errors throw kInvalidArgument naming the line and column.
#pragma once

#include <string_view>

#include "grammar/grammar.h"

namespace brisk::grammar {

Grammar parse_ebnf(std::string_view text, std::string_view root_rule = "root");

}  // namespace brisk::grammar
