// Tool-call and reasoning parsing of model output: each format's calls and content, malformed
// and plain output left as content, and streaming in any split giving what the whole output gives.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "server/chat_output/chat_output.h"
#include "test_util.h"

namespace brisk::server {
namespace {

struct Call {
  std::string name;
  nlohmann::json arguments;
};

void expect_calls(const std::vector<ToolCall>& got, const std::vector<Call>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name) << i;
    EXPECT_EQ(nlohmann::json::parse(got[i].arguments), want[i].arguments) << got[i].arguments;
    EXPECT_FALSE(got[i].id.empty());
  }
}

// Feeds `text` in pieces of `piece` bytes and gathers the deltas into a message.
ChatMessage stream(const ChatOutputOptions& options, std::string_view text, size_t piece) {
  ChatOutputParser parser(options);
  ChatMessage message;
  auto add = [&](const ChatDelta& d) {
    message.reasoning += d.reasoning;
    message.content += d.content;
    for (const ToolCallDelta& c : d.tool_calls) {
      if (static_cast<size_t>(c.index) == message.tool_calls.size()) {
        EXPECT_FALSE(c.id.empty());
        EXPECT_FALSE(c.name.empty());
        message.tool_calls.push_back({c.id, c.name, ""});
      } else {
        ASSERT_EQ(static_cast<size_t>(c.index) + 1, message.tool_calls.size()) << "calls stream one after another";
        EXPECT_TRUE(c.id.empty() && c.name.empty()) << "id and name come once";
      }
      message.tool_calls.back().arguments += c.arguments;
    }
  };
  for (size_t i = 0; i < text.size(); i += piece) add(parser.feed(text.substr(i, piece)));
  add(parser.finish());
  return message;
}

// The whole output and every streaming split agree.
ChatMessage parse_everywhere(const ChatOutputOptions& options, std::string_view text) {
  ChatMessage whole = parse_chat_output(options, text);
  for (size_t piece : {1, 2, 3, 7, 1000}) {
    ChatMessage streamed = stream(options, text, piece);
    EXPECT_EQ(streamed.reasoning, whole.reasoning) << "piece " << piece;
    if (whole.tool_calls.empty() && !streamed.tool_calls.empty()) continue;  // invalid calls: stream keeps them
    EXPECT_EQ(streamed.content, whole.content) << "piece " << piece;
    EXPECT_EQ(streamed.tool_calls.size(), whole.tool_calls.size()) << "piece " << piece;
    if (streamed.tool_calls.size() != whole.tool_calls.size()) continue;
    for (size_t i = 0; i < whole.tool_calls.size(); ++i) {
      EXPECT_EQ(streamed.tool_calls[i].name, whole.tool_calls[i].name);
      EXPECT_EQ(streamed.tool_calls[i].arguments, whole.tool_calls[i].arguments);
    }
  }
  return whole;
}

ChatOutputOptions tool_options(ToolCallFormat format) {
  ChatOutputOptions o;
  o.tool_calls = format;
  return o;
}
ChatOutputOptions reasoning_options(bool open) {
  ChatOutputOptions o;
  o.reasoning = true;
  o.reasoning_open = open;
  return o;
}

ChatMessage tools(ToolCallFormat format, std::string_view text) {
  return parse_everywhere(tool_options(format), text);
}

TEST(ToolCalls, Hermes) {
  ChatMessage m = tools(ToolCallFormat::kHermes,
                        "Let me check.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
                        "\"days\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
                        "</tool_call>");
  EXPECT_EQ(m.content, "Let me check.");
  expect_calls(m.tool_calls,
               {{"get_weather", {{"city", "Paris"}, {"days", {1, 2}}}}, {"get_time", nlohmann::json::object()}});
  // Arguments are the model's JSON text, spacing kept.
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"city": "Paris", "days": [1, 2]})");
}

TEST(ToolCalls, HermesWithoutCallsIsContent) {
  for (const char* text : {"Paris is sunny.", "a < b and <tool_ is not a marker", "ends with <tool_c", "  \n",
                           "Use <tool_call> tags for calls.", "<tool_call>"}) {
    ChatMessage m = tools(ToolCallFormat::kHermes, text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.tool_calls.empty());
  }
}

TEST(ToolCalls, MalformedCallsLeaveTheOutputAsContent) {
  for (const char* text : {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>",
                           "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1",   // cut off
                           "<tool_call>not json</tool_call>",
                           "<tool_call>{\"arguments\": {}}</tool_call>"}) {           // no name
    ChatMessage m = parse_chat_output(tool_options(ToolCallFormat::kHermes), text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.tool_calls.empty()) << text;
  }
}

TEST(ToolCalls, ArgumentsAsStringOrMissing) {
  ChatMessage m = tools(ToolCallFormat::kHermes,
                        "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>"
                        "<tool_call>{\"name\": \"g\"}</tool_call>"
                        "<tool_call>{\"arguments\": {\"y\": 2}, \"name\": \"h\"}</tool_call>");
  expect_calls(m.tool_calls, {{"f", {{"x", 1}}}, {"g", nlohmann::json::object()}, {"h", {{"y", 2}}}});
  EXPECT_EQ(m.content, "");
}

TEST(ToolCalls, Llama3Json) {
  ChatMessage m = tools(ToolCallFormat::kLlama3Json,
                        " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; "
                        "{\"name\": \"get_time\", \"parameters\": {\"tz\": \"CET\"}}");
  EXPECT_EQ(m.content, "");
  expect_calls(m.tool_calls, {{"get_weather", {{"city", "Paris"}}}, {"get_time", {{"tz", "CET"}}}});
  m = tools(ToolCallFormat::kLlama3Json, "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": \"x}\"}}");
  expect_calls(m.tool_calls, {{"f", {{"q", "x}"}}}});
}

TEST(ToolCalls, Llama3JsonPlainAnswersAndObjectsAreContent) {
  for (const char* text : {"Hello there", "  {\"answer\": 42}", "{\"answer\": {\"name\": \"x\"}}", "<|eot|> hi"}) {
    ChatMessage m = tools(ToolCallFormat::kLlama3Json, text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.tool_calls.empty()) << text;
  }
}

TEST(ToolCalls, Mistral) {
  ChatMessage m = tools(ToolCallFormat::kMistral,
                        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                        "{\"name\": \"get_time\", \"arguments\": {}}]");
  expect_calls(m.tool_calls, {{"get_weather", {{"city", "Paris"}}}, {"get_time", nlohmann::json::object()}});
  for (const ToolCall& c : m.tool_calls) {
    EXPECT_EQ(c.id.size(), 9u) << "Mistral's templates need 9-character ids";
    EXPECT_EQ(c.id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
              std::string::npos);
  }
  m = tools(ToolCallFormat::kMistral, "Sure. [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}[TOOL_CALLS]f[ARGS]{}");
  EXPECT_EQ(m.content, "Sure.");
  expect_calls(m.tool_calls, {{"get_weather", {{"city", "Oslo"}}}, {"f", nlohmann::json::object()}});
}

TEST(ToolCalls, InternLM) {
  ChatMessage m = tools(ToolCallFormat::kInternLM,
                        "I will search.<|action_start|><|plugin|>\n{\"name\": \"search\", \"parameters\": "
                        "{\"query\": \"brisk\"}}<|action_end|>\n");
  EXPECT_EQ(m.content, "I will search.");
  expect_calls(m.tool_calls, {{"search", {{"query", "brisk"}}}});
}

TEST(ToolCalls, ArgumentsStreamAsTheyArrive) {
  ChatOutputParser parser(tool_options(ToolCallFormat::kHermes));
  EXPECT_TRUE(parser.feed("<tool_call>\n{\"name\": \"f").tool_calls.empty()) << "the name may go on";
  ChatDelta d = parser.feed("\", \"arguments\": {\"city\": \"Pa");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"city\": \"Pa");
  d = parser.feed("ris\"}}\n</tool_call>");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].name.empty());
  EXPECT_EQ(d.tool_calls[0].arguments, "ris\"}");
  EXPECT_TRUE(parser.has_tool_calls());
  EXPECT_TRUE(parser.finish().empty());
}

TEST(ToolCalls, FormatNamesAndDetection) {
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral,
                           ToolCallFormat::kInternLM})
    EXPECT_EQ(tool_call_format_named(tool_call_format_name(f)), f);
  EXPECT_FALSE(tool_call_format_named("pythonic"));
  const std::map<std::string, std::optional<ToolCallFormat>> expected = {
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallFormat::kHermes},
      {"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::kHermes},
      {"Qwen-Qwen3-0.6B", ToolCallFormat::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct", ToolCallFormat::kLlama3Json},
      {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallFormat::kMistral},
      {"google-gemma-2-2b-it", std::nullopt},
      {"microsoft-Phi-3.5-mini-instruct", std::nullopt},
      {"HuggingFaceTB-SmolLM3-3B", std::nullopt},
  };
  EXPECT_EQ(detect_tool_call_format("{{ '<|action_start|><|plugin|>' }}"), ToolCallFormat::kInternLM);
  BRISK_REQUIRE_SHARED_TESTDATA();
  for (const auto& [name, format] : expected) {
    const std::string source =
        testing::read_file(testing::shared_testdata_dir() / "chat-templates" / (name + ".jinja"));
    EXPECT_EQ(detect_tool_call_format(source), format) << name;
  }
}

TEST(Reasoning, SplitsThinkingFromTheAnswer) {
  ChatMessage m = parse_everywhere(reasoning_options(false), "<think>\nThe user greets.\n</think>\n\nHello!");
  EXPECT_EQ(m.reasoning, "The user greets.\n");
  EXPECT_EQ(m.content, "Hello!");
  m = parse_everywhere(reasoning_options(false), "Hello <think> is just text");
  EXPECT_EQ(m.reasoning, "");
  EXPECT_EQ(m.content, "Hello <think> is just text");
  m = parse_everywhere(reasoning_options(false), "<think>cut off while thinking");
  EXPECT_EQ(m.reasoning, "cut off while thinking");
  EXPECT_EQ(m.content, "");
}

TEST(Reasoning, PromptThatOpensThinking) {
  EXPECT_TRUE(prompt_opens_reasoning("<|Assistant|><think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<think> x"));
  ChatMessage m = parse_everywhere(reasoning_options(true), "Let me think.</think>Answer");
  EXPECT_EQ(m.reasoning, "Let me think.");
  EXPECT_EQ(m.content, "Answer");
  EXPECT_TRUE(template_has_reasoning("{{ '<think>' }} ... {{ '</think>' }}"));
  EXPECT_TRUE(is_reasoning_format_name("qwen3") && is_reasoning_format_name("deepseek_r1"));
}

TEST(Reasoning, ToolCallsInTheAnswerOnly) {
  ChatOutputOptions options = tool_options(ToolCallFormat::kHermes);
  options.reasoning = true;
  ChatMessage m = parse_everywhere(options,
                                   "<think>maybe <tool_call>{\"name\": \"x\"}</tool_call></think>\n"
                                   "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>");
  EXPECT_EQ(m.reasoning, "maybe <tool_call>{\"name\": \"x\"}</tool_call>");
  EXPECT_EQ(m.content, "");
  expect_calls(m.tool_calls, {{"f", {{"a", 1}}}});
}

// tool_choice "required": the grammar makes the output a JSON array of {"name", "parameters"}.
TEST(ToolCalls, JsonArrayOfRequiredCalls) {
  ChatMessage m = tools(ToolCallFormat::kJsonArray,
                        "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}},\n "
                        "{\"name\": \"get_time\", \"parameters\": {}}]");
  EXPECT_EQ(m.content, "");
  expect_calls(m.tool_calls, {{"get_weather", {{"city", "Paris"}}}, {"get_time", nlohmann::json::object()}});
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_TRUE(m.tool_calls[0].id.starts_with("call_"));
  m = tools(ToolCallFormat::kJsonArray, "[{\"name\":\"f\",\"parameters\":{\"a\":[1]}}]");
  expect_calls(m.tool_calls, {{"f", {{"a", {1}}}}});
}

TEST(ToolCalls, JsonArrayThatIsNotCallsIsContent) {
  // Cut off by max_tokens inside a call, or (without the grammar) anything else.
  for (const char* text : {"[{\"name\": \"f\", \"parameters\": {\"a\": 1", "[1, 2]", "[]", "{\"a\": 1}",
                           "plain text", "[{\"parameters\": {}, \"x\": 1}]"}) {
    ChatMessage m = parse_chat_output(tool_options(ToolCallFormat::kJsonArray), text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.tool_calls.empty()) << text;
  }
}

TEST(ToolCalls, MistralIdsForForcedCallsOfMistralModels) {
  ChatOutputOptions options = tool_options(ToolCallFormat::kJsonArray);
  options.tool_call_ids = ToolCallIds::kMistral;
  ChatMessage m = parse_everywhere(options, "[{\"name\": \"f\", \"parameters\": {}}]");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].id.size(), 9u);
}

// A named tool_choice: the grammar makes the whole output the function's arguments.
TEST(ToolCalls, NamedToolChoiceMakesTheOutputOneCall) {
  ChatOutputOptions options;
  options.named_tool = "get_weather";
  ChatMessage m = parse_everywhere(options, "{\"city\": \"Paris\"}");
  EXPECT_EQ(m.content, "");
  expect_calls(m.tool_calls, {{"get_weather", {{"city", "Paris"}}}});
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"city": "Paris"})");
  // Cut off by max_tokens: the arguments so far, as vLLM returns them.
  m = parse_everywhere(options, "{\"city\": \"Par");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Par");
  // Nothing but space: no call.
  m = parse_chat_output(options, " ");
  EXPECT_TRUE(m.tool_calls.empty());
  ChatOutputParser parser(options);
  EXPECT_TRUE(parser.feed("  ").empty());
  EXPECT_FALSE(parser.has_tool_calls());
  ChatDelta first = parser.feed("{");
  ASSERT_EQ(first.tool_calls.size(), 1u);
  EXPECT_EQ(first.tool_calls[0].name, "get_weather");
  EXPECT_EQ(first.tool_calls[0].arguments, "  {");
  EXPECT_TRUE(parser.has_tool_calls());
  ChatDelta next = parser.feed("}");
  ASSERT_EQ(next.tool_calls.size(), 1u);
  EXPECT_TRUE(next.tool_calls[0].id.empty() && next.tool_calls[0].name.empty());
  EXPECT_EQ(next.tool_calls[0].arguments, "}");
}

}  // namespace
}  // namespace brisk::server
