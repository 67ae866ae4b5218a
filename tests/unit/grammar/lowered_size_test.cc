// ByteGrammar::lowered_size counts what lower() makes without lowering, so that the server can
// refuse grammars that would take too long to lower; and the parsers refuse groups nested deep
// enough to overflow the stack.
#include <gtest/gtest.h>

#include <string>

#include "grammar/byte_grammar.h"
#include "grammar/ebnf_parser.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_converter.h"
#include "test_util.h"

namespace brisk::grammar {
namespace {

void expect_exact(const Grammar& g, const std::string& what) {
  ByteGrammar lowered = ByteGrammar::lower(g);
  LoweredSize size = ByteGrammar::lowered_size(g);
  EXPECT_EQ(size.rules, int64_t(lowered.rules.size())) << what;
  EXPECT_EQ(size.elements, int64_t(lowered.elements.size())) << what;
}

TEST(GrammarLoweredSize, CountsWhatLoweringMakes) {
  for (const char* regex : {"abc", "a|bc|", "[a-z]*", "[a-z]+", "(ab)*", "(ab|c){2,5}", "x{3}", "(a(b|c)?){0,4}d",
                            "(?:[0-9]{1,3}\\.){3}[0-9]{1,3}", "(a*b+){2,}"})
    expect_exact(regex_to_grammar(regex), regex);
  for (const char* ebnf : {"root ::= \"a\" x* (x | \"b\"){1,3}\nx ::= [0-9] (= \"c\")", "root ::= (\"a\" | \"\")+"})
    expect_exact(parse_ebnf(ebnf), ebnf);
  for (const char* schema : {R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 5},
                                 "b": {"type": "array", "items": {"type": "integer", "minimum": 3, "maximum": 250},
                                 "maxItems": 3}}, "required": ["a"]})",
                             R"({"anyOf": [{"type": "boolean"}, {"enum": ["x", 1, null]}]})"})
    expect_exact(json_schema_to_grammar(schema), schema);
  expect_exact(builtin_json_grammar(), "builtin JSON");
}

TEST(GrammarLoweredSize, NestedRepetitionsMultiplyAndSaturate) {
  LoweredSize size = ByteGrammar::lowered_size(regex_to_grammar("((a{0,1000}){1000}){1000}"));
  EXPECT_EQ(size.rules, 1 + int64_t(1000) * 1000 * 1000);
  size = ByteGrammar::lowered_size(parse_ebnf("root ::= ((((\"ab\"{1000000}){1000000}){1000000}){1000000})"));
  EXPECT_EQ(size.elements, int64_t(1) << 62);
}

TEST(GrammarParsers, RefuseDeeplyNestedGroups) {
  EXPECT_NO_THROW(regex_to_grammar(std::string(200, '(') + "a" + std::string(200, ')')));
  EXPECT_NO_THROW(parse_ebnf("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')')));
  ::brisk::testing::expect_error(
      [] { regex_to_grammar(std::string(100000, '(') + "a" + std::string(100000, ')')); },
      ErrorCode::kInvalidArgument, {"groups nest deeper than 200"});
  ::brisk::testing::expect_error(
      [] { parse_ebnf("root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')')); },
      ErrorCode::kInvalidArgument, {"groups nest deeper than 200"});
}

}  // namespace
}  // namespace brisk::grammar
