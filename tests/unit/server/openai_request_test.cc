// Request parsing and validation: what is accepted maps to the right engine parameters, and
// every rejection is an ApiError naming the field.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "unit/server/api_error_test_util.h"

namespace brisk::server {
namespace {

TEST(OpenAiRequest, ChatMapsEveryParameter) {
  ChatRequest r = parse_chat_request(R"({
    "model": "m", "messages": [{"role": "developer", "content": "sys"},
                               {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
    "max_tokens": 9, "max_completion_tokens": 7, "n": 2, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
    "min_p": 0.1, "presence_penalty": 0.2, "frequency_penalty": -0.3, "repetition_penalty": 1.1, "seed": -1,
    "stop": "END", "stop_token_ids": [5], "stream": true, "stream_options": {"include_usage": true},
    "logprobs": true, "top_logprobs": 3, "ignore_eos": true, "min_tokens": 2, "user": "ignored"})");
  const SamplingParams& s = r.options.sampling;
  EXPECT_EQ(r.options.model, "m");
  EXPECT_EQ(r.options.max_tokens, 7);
  EXPECT_EQ(s.n, 2);
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_FLOAT_EQ(s.top_p, 0.9f);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.presence_penalty, 0.2f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -0.3f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
  EXPECT_EQ(s.seed, static_cast<uint64_t>(-1));
  EXPECT_EQ(s.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(s.stop_token_ids, std::vector<int32_t>{5});
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_EQ(s.min_tokens, 2);
  EXPECT_EQ(s.top_logprobs, 3);
  EXPECT_TRUE(r.options.stream && r.options.include_usage && r.options.logprobs);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
}

TEST(OpenAiRequest, CompletionPromptForms) {
  auto prompts = [](const char* body) { return parse_completion_request(body).prompts; };
  EXPECT_EQ(prompts(R"({"prompt": "x"})"), std::vector<Prompt>{std::string("x")});
  EXPECT_EQ(prompts(R"({"prompt": ["x", "y"]})"), (std::vector<Prompt>{std::string("x"), std::string("y")}));
  EXPECT_EQ(prompts(R"({"prompt": [1, 2]})"), (std::vector<Prompt>{std::vector<int32_t>{1, 2}}));
  EXPECT_EQ(prompts(R"({"prompt": [[1], [2, 3]]})"),
            (std::vector<Prompt>{std::vector<int32_t>{1}, std::vector<int32_t>{2, 3}}));
  CompletionRequest r = parse_completion_request(R"({"prompt": "x", "logprobs": 2, "max_tokens": 3})");
  EXPECT_TRUE(r.options.logprobs);
  EXPECT_EQ(r.options.sampling.top_logprobs, 2);
  EXPECT_EQ(r.options.max_tokens, 3);
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "x"})").options.max_tokens);
}

TEST(OpenAiRequest, NullMeansNotGiven) {
  ChatRequest r = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "temperature": null,
                                         "stop": null, "seed": null, "logit_bias": null, "suffix": 3})");
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 1.0f);
  EXPECT_TRUE(r.options.sampling.stop.empty());
  EXPECT_FALSE(r.options.sampling.seed);
}

// Token ids as decimal strings, biases clamped to [-100, 100] (OpenAI's and vLLM's range).
TEST(OpenAiRequest, LogitBias) {
  CompletionRequest r = parse_completion_request(R"({"prompt": "x", "logit_bias": {"5": 2.5, "12": -300, "0": 101}})");
  EXPECT_EQ(r.options.sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{5, 2.5f}, {12, -100.0f}, {0, 100.0f}}));
  EXPECT_TRUE(parse_completion_request(R"({"prompt": "x", "logit_bias": {}})").options.sampling.logit_bias.empty());
}

struct BadCase {
  const char* name;  // the test's name
  const char* body;
  const char* param;
  const char* words;
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << "body " << c.body; }

class BadRequests : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRequests, NameTheField) {
  ApiError e = catch_api_error([] { parse_chat_request(GetParam().body); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), GetParam().param);
  EXPECT_NE(std::string(e.what()).find(GetParam().words), std::string::npos) << e.what();
  EXPECT_EQ(e.body()["error"]["type"], "invalid_request_error");
}

INSTANTIATE_TEST_SUITE_P(
    Chat, BadRequests,
    ::testing::Values(BadCase{"invalid_json", "{", "", "not valid JSON"},
                      BadCase{"not_an_object", "[]", "", "JSON object"},
                      BadCase{"no_messages", R"({"messages": []})", "messages", "empty"},
                      BadCase{"message_not_an_object", R"({"messages": [1]})", "messages[0]", "object"},
                      BadCase{"n_zero", R"({"messages": [{"role": "user", "content": "x"}], "n": 0})", "n", "[1, 128]"},
                      BadCase{"top_p_zero", R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p",
                              "(0, 1]"},
                      BadCase{"negative_temperature",
                              R"({"messages": [{"role": "user", "content": "x"}], "temperature": -1})", "temperature",
                              "[0, inf)"},
                      BadCase{"fractional_seed", R"({"messages": [{"role": "user", "content": "x"}], "seed": 1.5})",
                              "seed", "integer"},
                      BadCase{"logit_bias_not_an_object",
                              R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": [1, 2]})",
                              "logit_bias", "object of token ids"},
                      BadCase{"logit_bias_key",
                              R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"-1": 2}})",
                              "logit_bias", "keys must be token ids"},
                      BadCase{"logit_bias_value",
                              R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": "2"}})",
                              "logit_bias", "values must be numbers"},
                      BadCase{"logit_bias_twice",
                              R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"7": 1, "007": 2}})",
                              "logit_bias", "names token 7 twice"},
                      BadCase{"tool_call_id_not_a_string",
                              R"({"messages": [{"role": "tool", "content": "x", "tool_call_id": 3}]})",
                              "messages[0].tool_call_id", "string"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(OpenAiRequest, DeepNestingIsRejected) {
  std::string body = R"({"messages": )" + std::string(200, '[') + std::string(200, ']') + "}";
  EXPECT_NE(std::string(catch_api_error([&] { parse_chat_request(body); }).what()).find("deeper"),
            std::string::npos);
}

TEST(OpenAiRequest, TokenizeAndDetokenize) {
  TokenizeRequest t = parse_tokenize_request(R"({"prompt": "hi"})");
  EXPECT_EQ(t.prompt, "hi");
  EXPECT_TRUE(t.add_special_tokens);
  TokenizeRequest chat = parse_tokenize_request(R"({"messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(chat.chat);
  EXPECT_FALSE(chat.add_special_tokens);
  EXPECT_EQ(parse_detokenize_request(R"({"tokens": [1, 2]})").tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(catch_api_error([] { parse_detokenize_request(R"({"tokens": [1.5]})"); }).param(), "tokens");
}

// The second turn of a tool call as the openai SDK sends it: the assistant's message has
// tool_calls and "content": null, which templates must see as "" (they concatenate it).
TEST(OpenAiRequest, NullAssistantContentWithToolCallsIsEmpty) {
  ChatRequest r = parse_chat_request(R"({"messages": [{"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
       "function": {"name": "w", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1]["content"], "");
  EXPECT_EQ(r.messages[1]["tool_calls"].size(), 1u);
}

// Templates write `arguments | tojson`: the client's JSON string reaches them as the object.
TEST(OpenAiRequest, ToolCallArgumentsReachTheTemplateAsObjects) {
  ChatRequest r = parse_chat_request(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\": \"Oslo\"}"}},
      {"id": "c2", "type": "function", "function": {"name": "v", "arguments": {"n": 1}}}]}],
      "tool_choice": "none"})");
  EXPECT_EQ(r.messages[0]["tool_calls"][0]["function"]["arguments"]["city"], "Oslo");
  EXPECT_EQ(r.messages[0]["tool_calls"][1]["function"]["arguments"]["n"], 1);
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kNone);
  EXPECT_EQ(parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}]})").tool_choice.mode,
            ToolChoice::Mode::kAuto);
  for (const char* bad : {R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [
                              {"function": {"name": "w", "arguments": "{oops"}}]}]})",
                          R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]}]})",
                          R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [1]}]})"})
    EXPECT_EQ(catch_api_error([&] { parse_chat_request(bad); }).param(), "messages[0].tool_calls") << bad;
  EXPECT_EQ(catch_api_error([] { parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}],
      "tool_choice": "required"})"); }).param(), "tool_choice");
}

// lm-evaluation-harness's loglikelihood request (its local-completions model): the prompt scored
// with echo and logprobs, nothing generated.
TEST(OpenAiRequest, EchoWithLogprobsAndMaxTokensZero) {
  CompletionRequest r = parse_completion_request(R"({"model": "m", "prompt": [[1, 2, 3]], "max_tokens": 0,
      "temperature": 0, "logprobs": 1, "echo": true, "seed": 1234})");
  EXPECT_TRUE(r.echo);
  EXPECT_TRUE(r.options.logprobs);
  EXPECT_EQ(r.options.sampling.top_logprobs, 1);
  EXPECT_EQ(r.options.max_tokens, 0);
  EXPECT_FALSE(r.options.sampling.prompt_logprobs);  // the handler scores the prompt for echo
  EXPECT_EQ(r.prompts, (std::vector<Prompt>{std::vector<int32_t>{1, 2, 3}}));
}

TEST(OpenAiRequest, PromptLogprobsOnCompletionsAndChat) {
  EXPECT_EQ(parse_completion_request(R"({"prompt": "x", "prompt_logprobs": 3})").options.sampling.prompt_logprobs, 3);
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "x"})").options.sampling.prompt_logprobs);
  ChatRequest chat = parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "prompt_logprobs": 0})");
  EXPECT_EQ(chat.options.sampling.prompt_logprobs, 0);
  // As vLLM: 0 is accepted with a stream and asks for nothing.
  EXPECT_FALSE(parse_completion_request(R"({"prompt": "x", "stream": true, "prompt_logprobs": 0})")
                   .options.sampling.prompt_logprobs);
}

TEST(OpenAiRequest, PromptScoringErrorsNameTheField) {
  auto expect_error = [](auto parse, const char* param, const char* words) {
    ApiError e = catch_api_error(parse);
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), param);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  };
  expect_error([] { parse_completion_request(R"({"prompt": "x", "max_tokens": 0})"); }, "max_tokens",
               "only allowed with 'echo'");
  expect_error([] { parse_completion_request(R"({"prompt": "x", "max_tokens": -1, "echo": true})"); }, "max_tokens",
               "[0, 2147483647]");
  expect_error([] { parse_completion_request(R"({"prompt": "x", "prompt_logprobs": 21})"); }, "prompt_logprobs",
               "[0, 20]");
  expect_error([] { parse_completion_request(R"({"prompt": "x", "stream": true, "prompt_logprobs": 2})"); },
               "prompt_logprobs", "not available when 'stream' is true");
  expect_error([] { parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})"); },
               "max_tokens", "[1, 2147483647]");
}

}  // namespace
}  // namespace brisk::server
