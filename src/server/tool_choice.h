// tool_choice: whether the model must call a tool, and which. "auto" and "none" leave the output
// free (calls are parsed when the server knows the model's tool-call format). "required" and a
// named function constrain the output with a JSON schema built from the tools, as vLLM does:
//   a named function  the function's parameters schema: the output is that one call's arguments
//   "required"        [{"name": <a tool's name>, "parameters": <its parameters>}, ...]: an anyOf
//                     over the tools, at least one call (at most one without parallel tool calls)
// and the output is returned as tool calls whatever the model's own tool-call format.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/output_constraint.h"

namespace brisk::server {

struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kFunction };
  Mode mode = Mode::kAuto;
  std::string function;  // kFunction: the function's name

  bool forced() const { return mode == Mode::kRequired || mode == Mode::kFunction; }
};

// Chat's "tool_choice": "none", "auto", "required" or {"type": "function", "function": {"name": ...}}.
ToolChoice read_chat_tool_choice(const nlohmann::ordered_json& value);

// The constraint a forced choice puts on the output; nullopt for auto and none. `tools`: chat's
// shape (null or a list of {"type": "function", "function": {"name", "parameters"?}}). Throws
// ApiError naming tool_choice when the choice needs tools the request lacks or names a function
// that is not among them, or naming the tool whose parameters are not a schema brisk can follow.
std::optional<OutputConstraint> tool_choice_constraint(const ToolChoice& choice, const nlohmann::ordered_json& tools,
                                                       bool parallel_tool_calls);

}  // namespace brisk::server
