// Response bodies and SSE chunks of the OpenAI-compatible API, built from what the engine
// produced for each choice. Pure functions of their inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "server/chat_output/chat_output.h"
#include "tokenizer/tokenizer.h"

namespace brisk::server {

struct TokenOutput {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top_logprobs;
};

// One choice's output so far, or (in streaming) what is new since the last chunk.
struct ChoiceOutput {
  std::string text;
  // Completions with echo and logprobs: the echoed prompt's tokens, whose logprobs come before
  // those of `tokens` (the first prompt token's are null).
  std::vector<PromptLogprob> prompt_tokens;
  std::vector<TokenOutput> tokens;
  std::optional<FinishReason> finish_reason;  // set once the choice has ended
  std::string stop_string;                    // the stop string that ended it, if one did
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_prompt_tokens = 0;
};

// What every body of one response shares.
struct ResponseMeta {
  std::string id;            // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;       // unix seconds
  std::string model;
  const Tokenizer* tokenizer = nullptr;  // token strings in logprobs; null: "token_id:N"
  bool logprobs = false;     // include logprobs
  int32_t top_logprobs = 0;
  std::optional<int32_t> prompt_logprobs;  // the request's prompt_logprobs: vLLM's field in the response
  bool usage_in_chunks = false;  // stream_options.include_usage: every chunk has "usage" (null)
  bool reasoning = false;        // chat messages carry "reasoning_content"
  // tool_choice named a function: the finish reason after its call stays "stop", as OpenAI and
  // vLLM report it ("tool_calls" is for calls the model chose to make).
  bool named_tool_choice = false;
};

// "prefix-" (or "prefix_", Anthropic's style) and 24 random hex digits.
std::string make_response_id(std::string_view prefix, char separator = '-');
int64_t unix_time_now();
// OpenAI's names: stop, length; a cancelled request reports vLLM's "abort".
std::string_view finish_reason_text(FinishReason reason);

nlohmann::json usage_json(const Usage& usage);
nlohmann::json completion_response(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                                   const Usage& usage);
// `text_offset`: where the delta's text starts in the choice's whole text (logprobs' offsets).
nlohmann::json completion_chunk(const ResponseMeta& meta, int64_t index, const ChoiceOutput& delta,
                                int64_t text_offset);
// `messages`: each choice's text parsed into reasoning, content and tool calls.
nlohmann::json chat_response(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                             const std::vector<ChatMessage>& messages, const Usage& usage);
// `delta`: the choice's new tokens (their logprobs) and its finish; `message`: what its text adds,
// parsed; `tool_calls`: the choice has made tool calls (its finish reason is then "tool_calls",
// unless meta.named_tool_choice).
// `with_role`: the choice's first chunk carries {"role": "assistant"}.
nlohmann::json chat_chunk(const ResponseMeta& meta, int64_t index, const ChoiceOutput& delta, const ChatDelta& message,
                          bool tool_calls, bool with_role);
// OpenAI's finish reason of a chat choice: "tool_calls" when it stopped after making calls.
nlohmann::json chat_finish_reason(const std::optional<FinishReason>& reason, bool tool_calls);
// The last chunk before [DONE] with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseMeta& meta, bool chat, const Usage& usage);

// Serializes a body; invalid UTF-8 (never expected) becomes U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json& body);
// One server-sent event: "data: <payload>\n\n".
std::string sse_event(std::string_view payload);
// A named one (the Anthropic and Responses streams): "event: <name>\ndata: <payload>\n\n".
std::string sse_event(std::string_view name, std::string_view payload);

}  // namespace brisk::server
