// An assistant message's parts from the model's output text: reasoning (between <think> tags),
// content, and tool calls (in the model's format, or the one call a named tool_choice forces),
// each parser optional. Streaming feeds text pieces and gets what each adds; a whole output is
// parsed at once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat_output/named_tool_call.h"
#include "server/chat_output/reasoning_parser.h"
#include "server/chat_output/tool_call_parser.h"

namespace brisk::server {

struct ChatOutputOptions {
  std::optional<ToolCallFormat> tool_calls;  // set: parse tool calls in this format
  bool reasoning = false;                    // split off <think> reasoning
  bool reasoning_open = false;               // the prompt opened <think>: the output starts in it
  // Set: tool_choice named this function, and the content is that one call's arguments
  // (tool_calls is then unset).
  std::string named_tool;
  std::optional<ToolCallIds> tool_call_ids;  // unset: the format's own (OpenAI's for named_tool)
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
  bool has_tool_calls() const {
    return (tools_ && !tools_->calls().empty()) || (named_ && !named_->calls().empty());
  }

 private:
  ChatDelta route(ReasoningStep step, bool end);

  std::optional<ReasoningParser> reasoning_;
  std::optional<ToolCallParser> tools_;
  std::optional<NamedToolCall> named_;
};

ChatMessage parse_chat_output(const ChatOutputOptions& options, std::string_view text);

}  // namespace brisk::server
