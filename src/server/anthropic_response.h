// Response bodies and stream events of Anthropic's Messages API, built from a parsed assistant
// message (reasoning -> thinking block, content -> text block, tool calls -> tool_use blocks).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/chat_output/chat_output.h"
#include "server/openai_response.h"

namespace brisk::server {

// end_turn, max_tokens, stop_sequence (a stop string ended it) or tool_use.
std::string anthropic_stop_reason(const ChoiceOutput& choice, bool tool_calls);
// Anthropic counts cache reads apart from input_tokens.
nlohmann::json anthropic_usage(const Usage& usage);
nlohmann::json anthropic_message(const std::string& id, const std::string& model, const ChatMessage& message,
                                 const ChoiceOutput& choice, const Usage& usage);
// {"type": "error", "error": {"type": "invalid_request_error", "message": ...}}.
nlohmann::json anthropic_error(const ApiError& error);

// The events of one streamed message: a content block is opened when the output turns to
// thinking, text or a new tool call, and closed when it turns away.
class AnthropicEventWriter {
 public:
  AnthropicEventWriter(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}

  // message_start, then a ping.
  std::string start(const Usage& usage) const;
  std::string add(const ChatDelta& delta);
  // The open block closed, message_delta (stop reason, usage), message_stop.
  std::string finish(const ChoiceOutput& choice, bool tool_calls, const Usage& usage);

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  std::string open(Block block, nlohmann::json content_block);
  std::string close();
  std::string block_delta(nlohmann::json delta) const;

  std::string id_;
  std::string model_;
  Block block_ = Block::kNone;
  int index_ = -1;  // of the open (or last) block
};

}  // namespace brisk::server
