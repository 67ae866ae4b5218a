// An assistant message's parts from the model's output text: reasoning (between <think> tags),
// content, and tool calls, each parser optional. Streaming feeds text pieces and gets what each
// adds; a whole output is parsed at once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat_output/reasoning_parser.h"
#include "server/chat_output/tool_call_parser.h"

namespace brisk::server {

struct ChatOutputOptions {
  std::optional<ToolCallFormat> tool_calls;  // set: parse tool calls in this format
  bool reasoning = false;                    // split off <think> reasoning
  bool reasoning_open = false;               // the prompt opened <think>: the output starts in it
};

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

struct ChatMessage {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;
};

class ChatOutputParser {
 public:
  explicit ChatOutputParser(const ChatOutputOptions& options);

  ChatDelta feed(std::string_view text);
  ChatDelta finish();
  // feed(text), then finish() too when `last`, as one delta.
  ChatDelta feed(std::string_view text, bool last);
  bool has_tool_calls() const { return tools_ && !tools_->calls().empty(); }

 private:
  ChatDelta route(ReasoningStep step, bool end);

  std::optional<ReasoningParser> reasoning_;
  std::optional<ToolCallParser> tools_;
};

ChatMessage parse_chat_output(const ChatOutputOptions& options, std::string_view text);

}  // namespace brisk::server
