#include "server/chat_output/named_tool_call.h"

#include "server/chat_output/text_markers.h"

namespace brisk::server {

ToolCallStep NamedToolCall::feed(std::string_view text) {
  ToolCallStep out;
  if (calls_.empty()) {
    leading_space_ += text;
    if (leading_space_length(leading_space_) == leading_space_.size()) return out;
    calls_.push_back({make_tool_call_id(ids_), name_, ""});
    out.calls.push_back({0, calls_[0].id, name_, ""});
    text = leading_space_;
  }
  if (text.empty()) return out;
  calls_[0].arguments += text;
  if (out.calls.empty()) out.calls.push_back({0, "", "", ""});
  out.calls[0].arguments += text;
  return out;
}

std::vector<ToolCall> parse_named_tool_call(const std::string& name, ToolCallIds ids, std::string_view text) {
  NamedToolCall call(name, ids);
  call.feed(text);
  return call.calls();
}

}  // namespace brisk::server
