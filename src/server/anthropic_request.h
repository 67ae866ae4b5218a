// Request bodies of Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) ->
// the chat request brisk renders with the model's chat template. Content blocks map to OpenAI
// chat messages: text joined, tool_use blocks to an assistant's tool_calls, tool_result blocks to
// tool messages, thinking blocks dropped (templates drop past reasoning). Images, documents and
// server tools are rejected with a 400 naming the field. A forced tool_choice ("any", "tool")
// constrains the output (tool_choice.h).
#pragma once

#include <string_view>

#include "server/openai_request.h"

namespace brisk::server {

// `max_tokens` is required, as Anthropic's API requires it.
ChatRequest parse_messages_request(std::string_view body);
// The same fields, without max_tokens (the request is only counted).
ChatRequest parse_count_tokens_request(std::string_view body);

}  // namespace brisk::server
