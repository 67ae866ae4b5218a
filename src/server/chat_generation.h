// What the chat-shaped endpoints share (chat completions, Anthropic messages, Responses): the
// conversation rendered by the chat template and tokenized, the sampling parameters resolved,
// and how the output is parsed into reasoning, content and tool calls.
#pragma once

#include <cstdint>
#include <vector>

#include "brisk/engine.h"
#include "server/chat_output/chat_output.h"
#include "server/openai_request.h"
#include "server/server_state.h"

namespace brisk::server {

struct PreparedChat {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  ChatOutputOptions output;
};

// The request's names for the conversation and the output limit, which errors name.
struct ChatFieldNames {
  const char* messages = "messages";
  const char* max_tokens = "max_tokens";
};

// Throws ApiError for what the client got wrong (template errors, a prompt too long, ...).
PreparedChat prepare_chat(const ServerState& state, const ChatRequest& request, const ChatFieldNames& names = {});

}  // namespace brisk::server
