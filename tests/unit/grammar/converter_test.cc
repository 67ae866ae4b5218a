// Regex and JSON-schema conversion: exact grammars for small inputs, and errors that name the
// construct or keyword at fault.
#include <gtest/gtest.h>

#include "grammar/ebnf_parser.h"
#include "grammar/integer_range.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_converter.h"
#include "test_util.h"

namespace brisk::grammar {
namespace {

using ::brisk::testing::expect_error;

TEST(GrammarRegexConverter, PrintsEachConstruct) {
  EXPECT_EQ(regex_to_grammar("^a(?:b|c)*d+e?f{2,3}$").to_string(), "root ::= (\"a\" (\"b\" | \"c\")* \"d\"+ \"e\"? \"f\"{2,3})\n");
  EXPECT_EQ(regex_to_grammar(R"(\d\W[^a-c\s]\.)").to_string(), "root ::= ([0-9] [^0-9A-Z_a-z] [^\\t-\\r a-c\\u00a0\\u1680\\u2000-\\u200a\\u2028-\\u2029\\u202f\\u205f\\u3000\\ufeff] \".\")\n");
  EXPECT_EQ(regex_to_grammar("(x|y)|z.").to_string(), "root ::= ((\"x\" | \"y\") | (\"z\" [\\0-\\U0010ffff]))\n");
  EXPECT_EQ(regex_to_grammar(R"(\u00e9\x41)").to_string(), "root ::= (\"\\xc3\\xa9\" \"A\")\n");
}

TEST(GrammarRegexConverter, RejectsUnsupportedAndMalformed) {
  expect_error([] { regex_to_grammar("a(?=b)"); }, ErrorCode::kUnsupported, {"lookaround", "position 2"});
  expect_error([] { regex_to_grammar("(a)\\1"); }, ErrorCode::kUnsupported, {"backreferences"});
  expect_error([] { regex_to_grammar("a\\b"); }, ErrorCode::kUnsupported, {"word boundaries"});
  expect_error([] { regex_to_grammar("a^b"); }, ErrorCode::kUnsupported, {"'^'"});
  expect_error([] { regex_to_grammar("(ab"); }, ErrorCode::kInvalidArgument, {"missing ')'"});
  expect_error([] { regex_to_grammar("ab)"); }, ErrorCode::kInvalidArgument, {"unbalanced ')'"});
  expect_error([] { regex_to_grammar("[z-a]"); }, ErrorCode::kInvalidArgument, {"reversed"});
  expect_error([] { regex_to_grammar("*a"); }, ErrorCode::kInvalidArgument, {"nothing to repeat"});
  expect_error([] { regex_to_grammar("a{3,1}"); }, ErrorCode::kInvalidArgument, {"reversed"});
}

TEST(GrammarIntegerRange, EnumeratesDigitRanges) {
  EXPECT_EQ(integer_range_regex(-5, 120), "(-[1-5]|0|[1-9]|[1-9]\\d|10\\d|11\\d|120)");
  EXPECT_EQ(integer_range_regex(10, std::nullopt), "([1-9]\\d|[1-9]\\d{2,})");
  EXPECT_EQ(integer_range_regex(std::nullopt, -3), "(-[3-9]|-[1-9]\\d{1,})");
  EXPECT_EQ(integer_range_regex(0, 0), "(0)");
}

TEST(GrammarIntegerRange, NumberRanges) {
  const std::string nonzero = "\\.([1-9]\\d{0,5}|0{1}[1-9]\\d{0,4}|0{2}[1-9]\\d{0,3}|0{3}[1-9]\\d{0,2}|0{4}[1-9]\\d{0,1}|0{5}[1-9]\\d{0,0})";
  EXPECT_EQ(number_range_regex(0, false, 1, false), "((0|1)(\\.0{1,6})?|(0)" + nonzero + ")");
  EXPECT_EQ(number_range_regex(0, true, std::nullopt, false),
            "(([1-9]|[1-9]\\d{1,})(\\.0{1,6})?|(0|[1-9]|[1-9]\\d{1,})" + nonzero + ")");
  EXPECT_EQ(number_range_regex(-1, false, -1, false), "(-(1)(\\.0{1,6})?)");
  EXPECT_EQ(number_range_regex(0, true, 0, true), "");
}

TEST(GrammarJsonSchemaConverter, ObjectWithOptionalProperties) {
  std::string ebnf = json_schema_to_ebnf(
      R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["b"]})",
      {.any_whitespace = false});
  EXPECT_EQ(ebnf.substr(0, ebnf.find("basic_escape")),
            "root ::= (\"{\"  (\"\\\"a\\\"\"  \":\"  basic_string root_part_0 | \"\\\"b\\\"\"  \":\"  basic_integer "
            "root_part_1)  \"}\")\n"
            "root_part_1 ::= (\"\")\n"
            "root_part_0 ::= ( \",\"  \"\\\"b\\\"\"  \":\"  basic_integer root_part_1)\n");
}

TEST(GrammarJsonSchemaConverter, RejectsInvalidSchemas) {
  expect_error([] { json_schema_to_grammar("{"); }, ErrorCode::kInvalidArgument, {"not valid JSON"});
  expect_error([] { json_schema_to_grammar(R"({"type":"strnig"})"); }, ErrorCode::kInvalidArgument,
               {"#/type", "unknown type \"strnig\""});
  expect_error([] { json_schema_to_grammar(R"({"$ref":"#/$defs/missing"})"); }, ErrorCode::kInvalidArgument,
               {"\"#/$defs/missing\" does not resolve"});
  expect_error([] { json_schema_to_grammar(R"({"type":"object","properties":{"a":{}},"required":["b"]})"); },
               ErrorCode::kInvalidArgument, {"#/required", "\"b\" is not among the properties"});
  expect_error([] { json_schema_to_grammar(R"({"type":"string","minLength":5,"maxLength":2})"); },
               ErrorCode::kInvalidArgument, {"minLength/maxLength"});
  expect_error([] { json_schema_to_grammar(R"({"enum":[]})"); }, ErrorCode::kInvalidArgument, {"#/enum"});
  // Counts and bounds past 2^53 (a fuzzer's maxItems of 2^64 - 1 had been cast out of range).
  expect_error([] { json_schema_to_grammar(R"({"type":"array","maxItems":18446744073709551615})"); },
               ErrorCode::kInvalidArgument, {"#/maxItems", "must be an integer in [-2^53, 2^53]"});
  expect_error([] { json_schema_to_grammar(R"({"type":"integer","exclusiveMinimum":-1e300})"); },
               ErrorCode::kInvalidArgument, {"#/exclusiveMinimum"});
  expect_error([] { json_schema_to_grammar(R"({"type":"string","maxLength":2.5})"); }, ErrorCode::kInvalidArgument,
               {"#/maxLength", "must be an integer"});
  expect_error([] { json_schema_to_grammar(R"j({"type":"string","pattern":"(?=x)"})j"); }, ErrorCode::kUnsupported,
               {"lookaround"});
  expect_error([] { json_schema_to_grammar(R"({"allOf":[{"type":"string"},{"type":"integer"}]})"); },
               ErrorCode::kUnsupported, {"allOf/1", "\"type\""});
  expect_error([] { json_schema_to_grammar(R"({"properties":{"x":false}})"); }, ErrorCode::kInvalidArgument,
               {"#/properties/x", "matches nothing"});
}

TEST(GrammarEbnfParserErrors, NameLineAndColumn) {
  expect_error([] { parse_ebnf("root ::= \"a\" b"); }, ErrorCode::kInvalidArgument,
               {"line 1, column 14", "rule 'b' is used but never defined"});
  expect_error([] { parse_ebnf("root ::= \"a\"\nx ::= [a-"); }, ErrorCode::kInvalidArgument,
               {"line 2", "unterminated character class"});
  expect_error([] { parse_ebnf("start ::= \"a\""); }, ErrorCode::kInvalidArgument, {"no rule named 'root'"});
  expect_error([] { parse_ebnf("root ::= \"a\"\nroot ::= \"b\""); }, ErrorCode::kInvalidArgument, {"defined twice"});
  expect_error([] { parse_ebnf("root ::= \"a\"{2,1}"); }, ErrorCode::kInvalidArgument, {"invalid repetition"});
  expect_error([] { parse_ebnf("root ::= \"a\\q\""); }, ErrorCode::kInvalidArgument, {"unknown escape"});
  expect_error([] { parse_ebnf("root ::= (\"a\""); }, ErrorCode::kInvalidArgument, {"expected ')'"});
}

}  // namespace
}  // namespace brisk::grammar
