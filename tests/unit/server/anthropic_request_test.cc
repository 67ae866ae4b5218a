// Anthropic Messages requests -> chat requests: content blocks become the chat messages
// templates expect, and what brisk cannot do is a 400 naming the field.
#include <gtest/gtest.h>

#include "server/anthropic_request.h"
#include "server/api_error.h"

namespace brisk::server {
namespace {

std::string error_param(std::string_view body) {
  try {
    parse_messages_request(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.param();
  }
  ADD_FAILURE() << "accepted: " << body;
  return "";
}

TEST(AnthropicRequest, MapsMessagesToolsAndSampling) {
  ChatRequest r = parse_messages_request(R"({
    "model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
    "temperature": 0.5, "top_p": 0.9, "top_k": 20, "stop_sequences": ["END"], "stream": true,
    "thinking": {"type": "disabled"}, "tool_choice": {"type": "auto"}, "metadata": {"user_id": "u"},
    "tools": [{"name": "w", "description": "weather", "input_schema": {"type": "object"}}],
    "messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                        {"type": "text", "text": "Checking."},
                                        {"type": "tool_use", "id": "t1", "name": "w", "input": {"city": "Oslo"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
                                   {"type": "tool_result", "tool_use_id": "t2", "is_error": true,
                                    "content": [{"type": "text", "text": "timeout"}]},
                                   {"type": "text", "text": "Thanks"}]}]})");
  EXPECT_EQ(r.options.max_tokens, 64);
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 0.5f);
  EXPECT_EQ(r.options.sampling.top_k, 20);
  EXPECT_EQ(r.options.sampling.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.options.stream);
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0]["function"]["name"], "w");
  EXPECT_EQ(r.tools[0]["function"]["parameters"]["type"], "object");
  ASSERT_EQ(r.messages.size(), 6u) << r.messages.dump();
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[0]["content"], "Be brief.");
  EXPECT_EQ(r.messages[2]["content"], "Checking.");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"]["city"], "Oslo");
  EXPECT_EQ(r.messages[3]["role"], "tool");
  EXPECT_EQ(r.messages[3]["tool_call_id"], "t1");
  EXPECT_EQ(r.messages[4]["content"], "Error: timeout");
  EXPECT_EQ(r.messages[5]["role"], "user");
  EXPECT_EQ(r.messages[5]["content"], "Thanks");
}

TEST(AnthropicRequest, RejectsWhatBriskCannotDo) {
  EXPECT_EQ(error_param(R"({"messages": [{"role": "user", "content": "x"}]})"), "max_tokens");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": []})"), "messages");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]})"), "messages[0].role");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [
      {"type": "image", "source": {}}]}]})"), "messages[0].content[0]");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [
      {"type": "tool_use", "id": "a", "name": "b"}]}]})"), "messages[0].content[0]");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "bash_20250124", "name": "bash"}]})"), "tools[0]");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "tools": [{"name": "w"}]})"), "tools[0].input_schema");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "tool_choice": {"type": "tool", "name": "w"}})"), "tool_choice");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "stop_sequences": [""]})"), "stop_sequences");
  EXPECT_EQ(error_param(R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
      "system": [{"type": "image"}]})"), "system[0]");
  EXPECT_EQ(parse_count_tokens_request(R"({"messages": [{"role": "user", "content": "x"}]})").messages.size(), 1u);
}

}  // namespace
}  // namespace brisk::server
