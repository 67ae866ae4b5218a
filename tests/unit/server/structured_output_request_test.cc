// Structured output in request parsing (output_constraint.h, tool_choice.h): every field shape
// of response_format, guided_*, structured_outputs, text.format and a forced tool_choice becomes
// the constraint it names, with the grammar that follows it; conflicts and invalid schemas,
// regexes and grammars are 400s naming the field, with the converter's message.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "grammar/ebnf_parser.h"
#include "grammar/regex_converter.h"
#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "unit/server/api_error_test_util.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;
using Kind = OutputConstraint::Kind;

const std::string kUser = R"("messages": [{"role": "user", "content": "x"}])";

ChatRequest chat(const std::string& fields) { return parse_chat_request("{" + kUser + ", " + fields + "}"); }

OutputConstraint chat_constraint(const std::string& fields) {
  std::optional<OutputConstraint> c = chat(fields).options.constraint;
  EXPECT_TRUE(c) << fields;
  return c.value_or(OutputConstraint{});
}

// The grammar of a constraint, written as EBNF and read back: equal texts, equal languages.
std::string grammar_text(const OutputConstraint& c) { return c.grammar ? c.grammar->to_string() : ""; }

const char* kSchema = R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})";

TEST(StructuredOutputRequest, NoConstraintByDefault) {
  EXPECT_FALSE(chat(R"("temperature": 1)").options.constraint);
  EXPECT_FALSE(chat(R"("response_format": {"type": "text"})").options.constraint);
  EXPECT_FALSE(chat(R"("response_format": null, "guided_json": null, "structured_outputs": null)").options.constraint);
}

TEST(StructuredOutputRequest, ResponseFormatJsonObjectIsTheBuiltinJsonGrammar) {
  OutputConstraint c = chat_constraint(R"("response_format": {"type": "json_object"})");
  EXPECT_EQ(c.kind, Kind::kJsonObject);
  EXPECT_EQ(c.param, "response_format");
  EXPECT_EQ(c.key, "json_object");
  EXPECT_EQ(grammar_text(c), grammar::builtin_json_grammar().to_string());
}

TEST(StructuredOutputRequest, EverySchemaFieldGivesTheSameGrammar) {
  const std::string schema = kSchema;
  const std::string expected = grammar::json_schema_to_grammar(schema).to_string();
  for (const std::string& fields :
       {R"("response_format": {"type": "json_schema", "json_schema": {"name": "r", "strict": true, "schema": )" +
            schema + "}}",
        R"("guided_json": )" + schema, R"("guided_json": )" + Json(schema).dump(),
        R"("structured_outputs": {"json": )" + schema + "}",
        R"("structured_outputs": {"json": )" + Json(schema).dump() + "}"}) {
    OutputConstraint c = chat_constraint(fields);
    EXPECT_EQ(c.kind, Kind::kJsonSchema) << fields;
    EXPECT_EQ(grammar_text(c), expected) << fields;
    // The cache key is the schema's canonical text, whichever field carried it.
    EXPECT_EQ(c.key, "json:" + Json::parse(schema).dump()) << fields;
  }
  EXPECT_EQ(chat_constraint(R"("guided_json": {})").param, "guided_json");
  EXPECT_EQ(chat_constraint(R"("structured_outputs": {"json": {}})").param, "structured_outputs.json");
  EXPECT_EQ(chat_constraint(R"("response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {}}})")
                .param,
            "response_format");
}

TEST(StructuredOutputRequest, DisableAnyWhitespaceGivesCompactJson) {
  const std::string compact =
      grammar::json_schema_to_grammar(kSchema, {.any_whitespace = false}).to_string();
  OutputConstraint c = chat_constraint(std::string(R"("structured_outputs": {"json": )") + kSchema +
                                       R"(, "disable_any_whitespace": true})");
  EXPECT_EQ(grammar_text(c), compact);
  EXPECT_NE(c.key, chat_constraint(std::string(R"("guided_json": )") + kSchema).key);
  // The option applies to response_format's schema too, as vLLM merges the two.
  OutputConstraint rf = chat_constraint(std::string(R"("structured_outputs": {"disable_any_whitespace": true},
      "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": )") + kSchema + "}}");
  EXPECT_EQ(grammar_text(rf), compact);
  EXPECT_EQ(rf.key, c.key);
}

// Long bounds that vLLM takes are taken (lowering is linear in the rules it makes).
TEST(StructuredOutputRequest, LongRepetitionsAreTaken) {
  EXPECT_EQ(chat_constraint(R"("guided_json": {"type": "string", "maxLength": 50000})").kind, Kind::kJsonSchema);
  EXPECT_EQ(chat_constraint(R"("guided_regex": "(ab|c){0,20000}")").kind, Kind::kRegex);
}

TEST(StructuredOutputRequest, RegexChoiceAndGrammar) {
  for (const char* fields : {R"("guided_regex": "[a-c]{2}")", R"("structured_outputs": {"regex": "[a-c]{2}"})"}) {
    OutputConstraint c = chat_constraint(fields);
    EXPECT_EQ(c.kind, Kind::kRegex);
    EXPECT_EQ(c.key, "regex:[a-c]{2}");
    EXPECT_EQ(grammar_text(c), grammar::regex_to_grammar("[a-c]{2}").to_string());
  }
  for (const char* fields : {R"("guided_choice": ["yes", "no", ""])",
                             R"("structured_outputs": {"choice": ["yes", "no", ""]})"}) {
    OutputConstraint c = chat_constraint(fields);
    EXPECT_EQ(c.kind, Kind::kChoice);
    EXPECT_EQ(c.key, R"(choice:["yes","no",""])");
    EXPECT_EQ(grammar_text(c), grammar::parse_ebnf(R"(root ::= "yes" | "no" | "")").to_string());
  }
  const std::string ebnf = "root ::= \"a\" b*\nb ::= [0-9]";
  for (const std::string& fields : {R"("guided_grammar": )" + Json(ebnf).dump(),
                                    R"("structured_outputs": {"grammar": )" + Json(ebnf).dump() + "}"}) {
    OutputConstraint c = chat_constraint(fields);
    EXPECT_EQ(c.kind, Kind::kGrammar);
    EXPECT_EQ(c.key, "grammar:" + ebnf);
    EXPECT_EQ(grammar_text(c), grammar::parse_ebnf(ebnf).to_string());
  }
  EXPECT_EQ(chat_constraint(R"("structured_outputs": {"json_object": true})").kind, Kind::kJsonObject);
}

TEST(StructuredOutputRequest, CompletionsTakeTheSameFields) {
  CompletionRequest r = parse_completion_request(R"({"prompt": "x", "guided_choice": ["a", "b"], "stream": true})");
  ASSERT_TRUE(r.options.constraint);
  EXPECT_EQ(r.options.constraint->kind, Kind::kChoice);
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "response_format": {"type": "json_object"}})")
                .options.constraint->kind,
            Kind::kJsonObject);
}

TEST(StructuredOutputRequest, ResponsesTextFormat) {
  ResponsesRequest r = parse_responses_request(std::string(R"({"input": "x", "text": {"format": {"type": "json_schema",
      "name": "r", "strict": true, "schema": )") + kSchema + "}}}");
  ASSERT_TRUE(r.chat.options.constraint);
  EXPECT_EQ(r.chat.options.constraint->param, "text.format");
  EXPECT_EQ(grammar_text(*r.chat.options.constraint), grammar::json_schema_to_grammar(kSchema).to_string());
  EXPECT_EQ(r.text_format["name"], "r");  // echoed in the response object
  EXPECT_EQ(parse_responses_request(R"({"input": "x", "text": {"format": {"type": "json_object"}}})")
                .chat.options.constraint->kind,
            Kind::kJsonObject);
  EXPECT_FALSE(
      parse_responses_request(R"({"input": "x", "text": {"format": {"type": "text"}}})").chat.options.constraint);
}

const std::string kTools = R"("tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time"}}])";

TEST(StructuredOutputRequest, NamedToolChoiceFollowsTheFunctionsParameters) {
  ChatRequest r = chat(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kFunction);
  EXPECT_EQ(r.tool_choice.function, "get_weather");
  ASSERT_TRUE(r.options.constraint);
  EXPECT_EQ(r.options.constraint->param, "tool_choice");
  EXPECT_EQ(grammar_text(*r.options.constraint),
            grammar::json_schema_to_grammar(R"({"type": "object", "properties": {"city": {"type": "string",
                "maxLength": 8}}, "required": ["city"]})").to_string());
  // A function without parameters takes none: {}.
  ChatRequest none = chat(kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})");
  EXPECT_EQ(grammar_text(*none.options.constraint),
            grammar::json_schema_to_grammar(R"({"type": "object", "properties": {}})").to_string());
}

TEST(StructuredOutputRequest, RequiredToolChoiceIsAnArrayOfCalls) {
  const Json parameters = Json::parse(R"({"type": "object", "properties": {"city": {"type": "string",
      "maxLength": 8}}, "required": ["city"]})");
  Json expected = {{"type", "array"},
                   {"items", {{"anyOf", Json::array()}}},
                   {"minItems", 1}};
  auto branch = [](const char* name, const Json& params) {
    return Json{{"type", "object"},
                {"properties", {{"name", {{"type", "string"}, {"enum", {name}}}}, {"parameters", params}}},
                {"required", {"name", "parameters"}}};
  };
  expected["items"]["anyOf"].push_back(branch("get_weather", parameters));
  expected["items"]["anyOf"].push_back(branch("get_time", Json::parse(R"({"type": "object", "properties": {}})")));
  ChatRequest r = chat(kTools + R"(, "tool_choice": "required")");
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kRequired);
  ASSERT_TRUE(r.options.constraint);
  EXPECT_EQ(r.options.constraint->key, "json:" + expected.dump());
  // Without parallel tool calls: one call at most.
  expected["maxItems"] = 1;
  EXPECT_EQ(chat(kTools + R"(, "tool_choice": "required", "parallel_tool_calls": false)").options.constraint->key,
            "json:" + expected.dump());
}

TEST(StructuredOutputRequest, RequiredToolChoiceMovesDefinitionsToTheRoot) {
  ChatRequest r = chat(R"("tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "required": ["p"],
                     "$defs": {"P": {"type": "integer", "minimum": 0, "maximum": 9}}}}}])");
  const Json schema = Json::parse(r.options.constraint->key.substr(5));
  EXPECT_EQ(schema["$defs"]["P"]["maximum"], 9);
  EXPECT_FALSE(schema["items"]["anyOf"][0]["properties"]["parameters"].contains("$defs"));
  ApiError e = catch_api_error([] {
    chat(R"("tool_choice": "required", "tools": [
        {"type": "function", "function": {"name": "f", "parameters": {"$defs": {"P": {"type": "integer"}}}}},
        {"type": "function", "function": {"name": "g", "parameters": {"$defs": {"P": {"type": "string"}}}}}])");
  });
  EXPECT_EQ(e.param(), "tools");
  EXPECT_NE(std::string(e.what()).find("$defs/P"), std::string::npos) << e.what();
}

TEST(StructuredOutputRequest, ForcedToolChoiceOnResponsesAndMessages) {
  ResponsesRequest named = parse_responses_request(R"({"input": "x", "tools": [{"type": "function", "name": "f",
      "parameters": {"type": "object", "properties": {"a": {"type": "boolean"}}}}],
      "tool_choice": {"type": "function", "name": "f"}})");
  EXPECT_EQ(named.chat.tool_choice.function, "f");
  EXPECT_EQ(named.tool_choice["name"], "f");  // echoed as sent
  EXPECT_TRUE(named.chat.options.constraint);
  ResponsesRequest required = parse_responses_request(R"({"input": "x", "tools": [{"type": "function", "name": "f"}],
      "tool_choice": "required", "parallel_tool_calls": false})");
  EXPECT_EQ(required.chat.tool_choice.mode, ToolChoice::Mode::kRequired);
  EXPECT_NE(required.chat.options.constraint->key.find(R"("maxItems":1)"), std::string::npos);

  const std::string messages = R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "tools": [{"name": "w", "input_schema": {"type": "object", "properties": {"c": {"type": "string"}}}}], )";
  ChatRequest tool = parse_messages_request(messages + R"("tool_choice": {"type": "tool", "name": "w"}})");
  EXPECT_EQ(tool.tool_choice.mode, ToolChoice::Mode::kFunction);
  EXPECT_EQ(tool.tool_choice.function, "w");
  EXPECT_TRUE(tool.options.constraint);
  ChatRequest any = parse_messages_request(messages +
                                           R"("tool_choice": {"type": "any", "disable_parallel_tool_use": true}})");
  EXPECT_EQ(any.tool_choice.mode, ToolChoice::Mode::kRequired);
  EXPECT_FALSE(any.parallel_tool_calls);
  EXPECT_NE(any.options.constraint->key.find(R"("maxItems":1)"), std::string::npos);
  EXPECT_EQ(parse_messages_request(messages + R"("tool_choice": {"type": "none"}})").tool_choice.mode,
            ToolChoice::Mode::kNone);
  EXPECT_FALSE(parse_messages_request(messages + R"("tool_choice": {"type": "auto"}})").options.constraint);
}

struct BadCase {
  const char* name;
  std::string fields;  // after "messages"
  const char* param;
  const char* words;
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.fields; }

class StructuredOutputBadRequests : public ::testing::TestWithParam<BadCase> {};

TEST_P(StructuredOutputBadRequests, NameTheField) {
  ApiError e = catch_api_error([] { chat(GetParam().fields); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.type(), "invalid_request_error");
  EXPECT_EQ(e.param(), GetParam().param);
  EXPECT_NE(std::string(e.what()).find(GetParam().words), std::string::npos) << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Chat, StructuredOutputBadRequests,
    ::testing::Values(
        BadCase{"two_guided_fields", R"("guided_json": {}, "guided_regex": "a")", "guided_regex",
                "'guided_json' and 'guided_regex' both constrain the output"},
        BadCase{"response_format_and_guided", R"("response_format": {"type": "json_object"}, "guided_choice": ["a"])",
                "guided_choice", "'response_format' and 'guided_choice'"},
        BadCase{"guided_and_structured_outputs", R"("guided_regex": "a", "structured_outputs": {"regex": "b"})",
                "structured_outputs.regex", "'guided_regex' and 'structured_outputs.regex'"},
        BadCase{"two_in_structured_outputs", R"("structured_outputs": {"json": {}, "choice": ["a"]})",
                "structured_outputs.choice", "both constrain"},
        BadCase{"structured_outputs_without_constraint", R"("structured_outputs": {"disable_any_whitespace": true})",
                "structured_outputs", "names no constraint"},
        BadCase{"structured_outputs_not_an_object", R"("structured_outputs": "json")", "structured_outputs",
                "object"},
        BadCase{"response_format_and_tool_choice",
                kTools + R"(, "tool_choice": "required", "response_format": {"type": "json_object"})", "tool_choice",
                "'response_format' and 'tool_choice' both constrain"},
        BadCase{"response_format_unknown_type", R"("response_format": {"type": "yaml"})", "response_format.type",
                "yaml"},
        BadCase{"response_format_structural_tag",
                R"("response_format": {"type": "structural_tag", "structures": [], "triggers": []})",
                "response_format.type", "structural tags"},
        BadCase{"response_format_not_an_object", R"("response_format": "json_object")", "response_format",
                "object"},
        BadCase{"json_schema_missing", R"("response_format": {"type": "json_schema"})", "response_format.json_schema",
                "needs 'json_schema'"},
        BadCase{"json_schema_without_name",
                R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})",
                "response_format.json_schema.name", "required"},
        BadCase{"json_schema_without_schema",
                R"("response_format": {"type": "json_schema", "json_schema": {"name": "n"}})",
                "response_format.json_schema.schema", "required"},
        BadCase{"invalid_schema_names_the_pointer",
                R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema":
                    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "frog"}}}}}})",
                "response_format.json_schema.schema", "/properties/a/items"},
        BadCase{"empty_range_names_the_pointer", R"("guided_json": {"type": "string", "minLength": 5, "maxLength": 2})",
                "guided_json", "minLength/maxLength"},
        BadCase{"guided_json_not_json", R"("guided_json": "{nope")", "guided_json", "not valid JSON"},
        BadCase{"guided_json_a_number", R"("guided_json": 3)", "guided_json", "JSON schema"},
        BadCase{"invalid_regex_names_the_position", R"("guided_regex": "ab(c")", "guided_regex", "regular expression"},
        BadCase{"unsupported_regex", R"("structured_outputs": {"regex": "(a)\\1"})", "structured_outputs.regex",
                "regular expression"},
        BadCase{"guided_regex_a_list", R"("guided_regex": ["a"])", "guided_regex", "a regular expression"},
        BadCase{"invalid_grammar_names_line_and_column", R"("guided_grammar": "root ::= \"a\"\nb ::= (\"c\"")",
                "guided_grammar", "line 2"},
        BadCase{"grammar_without_root", R"("structured_outputs": {"grammar": "start ::= \"a\""})",
                "structured_outputs.grammar", "root"},
        BadCase{"regex_too_large", R"("guided_regex": "((ab|c){0,100}){0,1001}")", "guided_regex", "too large"},
        BadCase{"schema_too_large", R"("guided_json": {"type": "string", "maxLength": 500000})", "guided_json",
                "maxLength"},
        BadCase{"grammar_too_large", R"("guided_grammar": "root ::= ((\"a\"{1000}){1000}){1000}")", "guided_grammar",
                "too large"},
        BadCase{"regex_nested_too_deep", "\"guided_regex\": \"" + std::string(300, '(') + std::string(300, ')') + "\"",
                "guided_regex", "nest deeper than 200"},
        BadCase{"schema_text_nested_too_deep",
                "\"guided_json\": \"" + std::string(100, '[') + std::string(100, ']') + "\"", "guided_json",
                "deeper than 64"},
        BadCase{"empty_choice", R"("guided_choice": [])", "guided_choice", "non-empty list"},
        BadCase{"choice_of_numbers", R"("guided_choice": ["a", 1])", "guided_choice", "strings"},
        BadCase{"whitespace_pattern", R"("guided_json": {}, "guided_whitespace_pattern": " ")",
                "guided_whitespace_pattern", "not supported"},
        BadCase{"structured_outputs_whitespace_pattern",
                R"("structured_outputs": {"json": {}, "whitespace_pattern": " "})",
                "structured_outputs.whitespace_pattern", "not supported"},
        BadCase{"required_without_tools", R"("tool_choice": "required")", "tool_choice", "needs 'tools'"},
        BadCase{"named_without_tools", R"("tool_choice": {"type": "function", "function": {"name": "f"}})",
                "tool_choice", "needs 'tools'"},
        BadCase{"unknown_function", kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})",
                "tool_choice", "'f', which is not among 'tools' (get_weather, get_time)"},
        BadCase{"named_without_name", kTools + R"(, "tool_choice": {"type": "function", "function": {}})",
                "tool_choice", "{\"type\": \"function\", \"function\": {\"name\": ...}}"},
        BadCase{"tool_choice_unknown_string", kTools + R"(, "tool_choice": "any")", "tool_choice", "got 'any'"},
        BadCase{"named_function_with_invalid_parameters",
                R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "frog"}}}],
                   "tool_choice": {"type": "function", "function": {"name": "f"}})",
                "tools[0].function.parameters", "frog"},
        BadCase{"required_names_the_tool_with_invalid_parameters",
                R"("tools": [{"type": "function", "function": {"name": "f"}},
                             {"type": "function", "function": {"name": "g", "parameters": {"type": "frog"}}}],
                   "tool_choice": "required")",
                "tools[1].function.parameters", "frog"},
        BadCase{"tool_without_name", R"("tools": [{"type": "function", "function": {}}], "tool_choice": "required")",
                "tools[0].function.name", "required"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(StructuredOutputRequest, MessagesToolChoiceErrors) {
  const std::string base = R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [
      {"name": "w", "input_schema": {"type": "object"}}], )";
  EXPECT_EQ(catch_api_error([&] { parse_messages_request(base + R"("tool_choice": {"type": "tool"}})"); }).param(),
            "tool_choice.name");
  EXPECT_EQ(catch_api_error([&] { parse_messages_request(base + R"("tool_choice": {"type": "tool", "name": "v"}})"); })
                .param(),
            "tool_choice");
  EXPECT_EQ(catch_api_error([&] { parse_messages_request(base + R"("tool_choice": {"type": "some"}})"); }).param(),
            "tool_choice");
}

}  // namespace
}  // namespace brisk::server
