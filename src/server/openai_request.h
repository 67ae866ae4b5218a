// Request bodies of the OpenAI-compatible API -> validated requests. Pure functions (no engine,
// no tokenizer), so they are unit-tested and fuzzed on their own. Every problem throws ApiError
// (400 naming the field) and nothing else: malformed JSON, wrong types, values out of range, and
// fields brisk does not support that would change what the client gets (suffix, beam search,
// ...). Unknown fields are ignored, as vLLM does, so clients that send extras keep working.
// Structured output (response_format, guided_*, structured_outputs, a forced tool_choice) is
// converted to a grammar here: output_constraint.h, tool_choice.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "server/output_constraint.h"
#include "server/tool_choice.h"

namespace brisk::server {

// What completions and chat share: sampling, streaming and logprobs.
struct GenerationOptions {
  std::string model;                 // empty: the served model
  SamplingParams sampling;           // max_tokens unset here: see max_tokens
  // none: the endpoint's default. 0 (completions with echo): the prompt is scored, nothing generated.
  // sampling.prompt_logprobs: what the client asked for (the response's "prompt_logprobs").
  std::optional<int64_t> max_tokens;
  bool stream = false;
  bool include_usage = false;        // stream_options.include_usage
  bool logprobs = false;             // report the chosen tokens' logprobs
  // Structured output: what the output must follow (the server compiles it into sampling.grammar).
  std::optional<OutputConstraint> constraint;
};

// A completions prompt: text, or token ids.
using Prompt = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest {
  GenerationOptions options;
  std::vector<Prompt> prompts;  // one choice group per prompt
  bool echo = false;            // with logprobs, the logprobs cover the echoed prompt too
};

struct ChatRequest {
  GenerationOptions options;
  // Messages as the chat template expects them: "content" flattened to a string (text parts
  // joined), other keys (name, tool_calls, tool_call_id) kept.
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;  // null or a list
  // A forced choice (required, a named function) also sets options.constraint.
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  bool add_generation_prompt = true;
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
};

// POST /tokenize: {"prompt": str} or {"messages": [...]} (vLLM's shape).
struct TokenizeRequest {
  std::string model;
  std::optional<std::string> prompt;
  std::optional<ChatRequest> chat;  // messages (+ tools, add_generation_prompt, chat_template_kwargs)
  bool add_special_tokens = true;   // default false for messages (the template holds BOS)
};

// POST /detokenize: {"tokens": [int]}.
struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

CompletionRequest parse_completion_request(std::string_view body);
ChatRequest parse_chat_request(std::string_view body);
TokenizeRequest parse_tokenize_request(std::string_view body);
DetokenizeRequest parse_detokenize_request(std::string_view body);

}  // namespace brisk::server
