// The EBNF parser: exact printed IR for each construct, and errors naming line and column.
#include <gtest/gtest.h>

#include "grammar/ebnf_parser.h"
#include "test_util.h"

namespace brisk::grammar {
namespace {

std::string round_trip(const std::string& text) { return parse_ebnf(text).to_string(); }

TEST(GrammarEbnfParser, PrintsEachConstruct) {
  EXPECT_EQ(round_trip(R"(root ::= "a" [b-d] [^"\\] x* x+ x? x{2} x{2,} x{2,5}
x ::= ("p" | "q") # comment
)"),
            "root ::= (\"a\" [b-d] [^\"\\\\] x* x+ x? x{2} x{2,} x{2,5})\n"
            "x ::= (\"p\" | \"q\")\n");
}

TEST(GrammarEbnfParser, DecodesEscapes) {
  EXPECT_EQ(round_trip(R"(root ::= "\n\t\"\\\x41\u00e9" [\]\-a])"),
            "root ::= (\"\\n\\t\\\"\\\\A\\xc3\\xa9\" [\\-\\]a])\n");
}

}  // namespace
}  // namespace brisk::grammar
