#include "server/chat_output/chat_output.h"

namespace brisk::server {

ChatOutputParser::ChatOutputParser(const ChatOutputOptions& options) {
  if (options.reasoning) reasoning_.emplace(options.reasoning_open);
  if (options.tool_calls) tools_.emplace(*options.tool_calls, options.tool_call_ids);
  if (!options.named_tool.empty())
    named_.emplace(options.named_tool, options.tool_call_ids.value_or(ToolCallIds::kOpenAI));
}

ChatDelta ChatOutputParser::feed(std::string_view text) {
  return route(reasoning_ ? reasoning_->feed(text) : ReasoningStep{"", std::string(text)}, false);
}

ChatDelta ChatOutputParser::finish() { return route(reasoning_ ? reasoning_->finish() : ReasoningStep{}, true); }

ChatDelta ChatOutputParser::feed(std::string_view text, bool last) {
  ChatDelta delta = feed(text);
  if (!last) return delta;
  ChatDelta rest = finish();
  delta.reasoning += rest.reasoning;
  delta.content += rest.content;
  delta.tool_calls.insert(delta.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
  return delta;
}

// Reasoning goes out as it is; content passes through the tool-call parser.
ChatDelta ChatOutputParser::route(ReasoningStep step, bool end) {
  ChatDelta delta;
  delta.reasoning = std::move(step.reasoning);
  if (named_) {
    delta.tool_calls = named_->feed(step.content).calls;
    return delta;
  }
  if (!tools_) {
    delta.content = std::move(step.content);
    return delta;
  }
  ToolCallStep calls = tools_->feed(step.content);
  if (end) {
    ToolCallStep rest = tools_->finish();
    calls.content += rest.content;
    calls.calls.insert(calls.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  delta.content = std::move(calls.content);
  delta.tool_calls = std::move(calls.calls);
  return delta;
}

ChatMessage parse_chat_output(const ChatOutputOptions& options, std::string_view text) {
  ChatMessage message;
  std::string content(text);
  if (options.reasoning) {
    ReasoningParser parser(options.reasoning_open);
    ReasoningStep first = parser.feed(text);
    ReasoningStep last = parser.finish();
    message.reasoning = first.reasoning + last.reasoning;
    content = first.content + last.content;
  }
  if (!options.named_tool.empty()) {
    message.tool_calls = parse_named_tool_call(options.named_tool,
                                               options.tool_call_ids.value_or(ToolCallIds::kOpenAI), content);
    if (message.tool_calls.empty()) message.content = std::move(content);
  } else if (options.tool_calls) {
    ParsedToolCalls parsed = parse_tool_calls(*options.tool_calls, content, options.tool_call_ids);
    message.content = std::move(parsed.content);
    message.tool_calls = std::move(parsed.calls);
  } else {
    message.content = std::move(content);
  }
  return message;
}

}  // namespace brisk::server
