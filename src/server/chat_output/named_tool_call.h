// The output of a request whose tool_choice names a function: the grammar makes the whole
// output (after any reasoning) that function's arguments, so it is reported as one call to it,
// its id and name with the first text, the text as it arrives as the arguments (as vLLM streams
// a named tool choice).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/chat_output/tool_call_parser.h"

namespace brisk::server {

class NamedToolCall {
 public:
  NamedToolCall(std::string name, ToolCallIds ids) : name_(std::move(name)), ids_(ids) {}

  // The call's start (with the first text that is not space) and its new argument text.
  ToolCallStep feed(std::string_view text);
  // The call, once begun (an output of only space makes none).
  const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  std::string name_;
  ToolCallIds ids_;
  std::string leading_space_;  // held until the call begins
  std::vector<ToolCall> calls_;
};

// A whole output as the call it makes (none for an output of only space).
std::vector<ToolCall> parse_named_tool_call(const std::string& name, ToolCallIds ids, std::string_view text);

}  // namespace brisk::server
