// /v1/responses request parsing: input items become the chat messages templates expect, the
// settings map to sampling and echo fields, and every rejection is a 400 naming the field.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "server/api_error.h"
#include "server/responses_request.h"

namespace brisk::server {
namespace {

using Json = nlohmann::ordered_json;

ApiError responses_error(const std::string& body) {
  try {
    parse_responses_request(body);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError for " << body;
  return ApiError(0, "", "", "", "");
}

TEST(ResponsesRequest, StringInputIsOneUserMessageAfterTheInstructions) {
  ResponsesRequest r = parse_responses_request(R"({"model": "m", "input": "hi", "instructions": "be brief",
    "max_output_tokens": 9, "temperature": 0.5, "top_p": 0.9, "stream": true})");
  EXPECT_EQ(r.chat.messages, Json::parse(R"([{"role": "system", "content": "be brief"},
                                             {"role": "user", "content": "hi"}])"));
  EXPECT_EQ(r.chat.options.model, "m");
  EXPECT_EQ(r.chat.options.max_tokens, 9);
  EXPECT_FLOAT_EQ(r.chat.options.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.chat.options.sampling.top_p, 0.9f);
  EXPECT_TRUE(r.chat.options.stream);
  EXPECT_EQ(r.instructions, "be brief");
  EXPECT_EQ(r.chat.options.sampling.n, 1);
}

TEST(ResponsesRequest, DefaultsMatchOpenAis) {
  ResponsesRequest r = parse_responses_request(R"({"input": "hi"})");
  EXPECT_FALSE(r.chat.options.max_tokens);
  EXPECT_FALSE(r.chat.options.stream);
  EXPECT_FALSE(r.instructions);
  EXPECT_TRUE(r.chat.tools.is_null());
  EXPECT_EQ(r.chat.tool_choice.mode, ToolChoice::Mode::kAuto);
  EXPECT_EQ(r.tool_choice, "auto");
  EXPECT_EQ(r.text_format, Json::parse(R"({"type": "text"})"));
  EXPECT_FALSE(r.chat.options.constraint);
  EXPECT_TRUE(r.chat.parallel_tool_calls);
  EXPECT_EQ(r.truncation, "disabled");
}

TEST(ResponsesRequest, ItemsBecomeChatMessages) {
  ResponsesRequest r = parse_responses_request(R"({"input": [
    {"role": "developer", "content": "sys"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "hmm"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
    {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "18 degrees"},
    {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "noon"}]},
    {"role": "user", "content": "thanks"}]})");
  EXPECT_EQ(r.chat.messages, Json::parse(R"([
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "a\nb"},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
      {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": {}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees", "name": "get_weather"},
    {"role": "tool", "tool_call_id": "call_2", "content": "noon", "name": "get_time"},
    {"role": "user", "content": "thanks"}])")) << r.chat.messages.dump(2);
}

TEST(ResponsesRequest, FunctionCallAfterAUserMessageOpensAnAssistantMessage) {
  ResponsesRequest r = parse_responses_request(R"({"input": [{"role": "user", "content": "x"},
    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{\"a\": 1}"}]})");
  EXPECT_EQ(r.chat.messages[1], Json::parse(R"({"role": "assistant", "content": "", "tool_calls": [
    {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]})"));
}

TEST(ResponsesRequest, FunctionToolsTakeChatsShapeAndAreEchoedAsSent) {
  ResponsesRequest r = parse_responses_request(R"({"input": "x", "tool_choice": "none", "parallel_tool_calls": false,
    "tools": [{"type": "function", "name": "get_weather", "description": "Weather",
               "parameters": {"type": "object"}, "strict": true}]})");
  EXPECT_EQ(r.chat.tools, Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Weather", "parameters": {"type": "object"}}}])"));
  EXPECT_EQ(r.tools[0]["strict"], true);
  EXPECT_EQ(r.chat.tool_choice.mode, ToolChoice::Mode::kNone);
  EXPECT_EQ(r.tool_choice, "none");
  EXPECT_FALSE(r.chat.parallel_tool_calls);
}

TEST(ResponsesRequest, SettingsWithoutEffectHereAreAccepted) {
  ResponsesRequest r = parse_responses_request(R"({"input": "x", "store": true, "metadata": {"k": "v"},
    "user": "u", "reasoning": {"effort": "low"}, "include": ["reasoning.encrypted_content"], "truncation": "auto",
    "text": {"format": {"type": "text"}, "verbosity": "low"}, "background": false, "top_logprobs": 0,
    "previous_response_id": null, "service_tier": "auto"})");
  EXPECT_EQ(r.metadata, Json::parse(R"({"k": "v"})"));
  EXPECT_EQ(r.reasoning, Json::parse(R"({"effort": "low"})"));
  EXPECT_EQ(r.user, "u");
  EXPECT_EQ(r.truncation, "auto");
}

struct BadCase {
  const char* name;
  const char* body;
  const char* param;
  const char* words;
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << "body " << c.body; }

class ResponsesBadRequests : public ::testing::TestWithParam<BadCase> {};

TEST_P(ResponsesBadRequests, NameTheField) {
  ApiError e = responses_error(GetParam().body);
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), GetParam().param);
  EXPECT_NE(std::string(e.what()).find(GetParam().words), std::string::npos) << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Responses, ResponsesBadRequests,
    ::testing::Values(
        BadCase{"invalid_json", "{", "", "not valid JSON"},
        BadCase{"no_input", R"({"model": "m"})", "input", "required"},
        BadCase{"input_a_number", R"({"input": 3})", "input", "string or a list"},
        BadCase{"only_reasoning", R"({"input": [{"type": "reasoning", "summary": []}]})", "input", "no messages"},
        BadCase{"item_not_an_object", R"({"input": ["x"]})", "input[0]", "object"},
        BadCase{"item_without_type", R"({"input": [{"content": "x"}]})", "input[0].type", "required"},
        BadCase{"tool_role", R"({"input": [{"role": "tool", "content": "x"}]})", "input[0].role", "got 'tool'"},
        BadCase{"image_part",
                R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})",
                "input[0].content[0].type", "input_image"},
        BadCase{"item_reference", R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0].type",
                "keeps no items"},
        BadCase{"unknown_item", R"({"input": [{"type": "computer_call_output"}]})", "input[0].type",
                "computer_call_output"},
        BadCase{"call_without_id", R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})",
                "input[0].call_id", "required"},
        BadCase{"bad_arguments",
                R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{no"}]})",
                "input[0].arguments", "not valid JSON"},
        BadCase{"output_missing", R"({"input": [{"type": "function_call_output", "call_id": "c"}]})",
                "input[0].output", "required"},
        BadCase{"previous_response_id", R"({"input": "x", "previous_response_id": "resp_1"})",
                "previous_response_id", "keeps no responses"},
        BadCase{"conversation", R"({"input": "x", "conversation": "conv_1"})", "conversation", "not supported"},
        BadCase{"background", R"({"input": "x", "background": true})", "background", "not supported"},
        BadCase{"web_search", R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0].type", "web_search"},
        BadCase{"file_search", R"({"input": "x", "tools": [{"type": "function", "name": "f"}, {"type": "file_search"}]})",
                "tools[1].type", "file_search"},
        BadCase{"function_without_name", R"({"input": "x", "tools": [{"type": "function"}]})", "tools[0].name",
                "required"},
        BadCase{"chat_shaped_tool",
                R"({"input": "x", "tools": [{"type": "function", "function": {"name": "f"}}]})", "tools[0].name",
                "required"},
        BadCase{"tool_choice_required", R"({"input": "x", "tool_choice": "required"})", "tool_choice",
                "needs 'tools'"},
        BadCase{"tool_choice_named", R"({"input": "x", "tool_choice": {"type": "function", "name": "f"}})",
                "tool_choice", "needs 'tools'"},
        BadCase{"tool_choice_unknown_function",
                R"({"input": "x", "tools": [{"type": "function", "name": "g"}],
                    "tool_choice": {"type": "function", "name": "f"}})", "tool_choice", "not among 'tools' (g)"},
        BadCase{"tool_choice_chat_shaped",
                R"({"input": "x", "tools": [{"type": "function", "name": "f"}],
                    "tool_choice": {"type": "function", "function": {"name": "f"}}})", "tool_choice", "\"name\""},
        BadCase{"tool_choice_allowed_tools", R"({"input": "x", "tool_choice": {"type": "allowed_tools"}})",
                "tool_choice", "allowed_tools"},
        BadCase{"json_schema_without_name",
                R"({"input": "x", "text": {"format": {"type": "json_schema", "schema": {}}}})", "text.format.name",
                "required"},
        BadCase{"json_schema_without_schema",
                R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n"}}})", "text.format.schema",
                "required"},
        BadCase{"json_schema_invalid",
                R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "n",
                    "schema": {"type": "object", "properties": {"a": {"type": "frog"}}}}}})", "text.format.schema",
                "/properties/a"},
        BadCase{"text_format_unknown", R"({"input": "x", "text": {"format": {"type": "xml"}}})", "text.format.type",
                "xml"},
        BadCase{"text_format_and_tool_choice",
                R"({"input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": "required",
                    "text": {"format": {"type": "json_object"}}})", "tool_choice", "'text.format' and 'tool_choice'"},
        BadCase{"truncation", R"({"input": "x", "truncation": "sometimes"})", "truncation", "disabled"},
        BadCase{"max_output_tokens_zero", R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens", "[1, "},
        BadCase{"top_p_zero", R"({"input": "x", "top_p": 0})", "top_p", "(0, 1]"},
        BadCase{"temperature_negative", R"({"input": "x", "temperature": -1})", "temperature", "[0, inf)"},
        BadCase{"metadata_a_list", R"({"input": "x", "metadata": []})", "metadata", "object"},
        BadCase{"top_logprobs", R"({"input": "x", "top_logprobs": 2})", "top_logprobs", "not supported"},
        BadCase{"stream_a_string", R"({"input": "x", "stream": "yes"})", "stream", "boolean"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace brisk::server
