#include "server/anthropic_response.h"

namespace brisk::server {
namespace {

using Json = nlohmann::json;

std::string event(std::string_view name, const Json& body) { return sse_event(name, dump_json(body)); }

// A tool call's arguments as the object Anthropic clients expect: valid JSON here, except for a
// forced call cut off by max_tokens, whose input is then empty.
Json tool_input(const std::string& arguments) {
  Json input = Json::parse(arguments, nullptr, false);
  return input.is_object() ? input : Json::object();
}

Json message_envelope(const std::string& id, const std::string& model, Json content, Json stop_reason,
                      Json stop_sequence, const Usage& usage) {
  return {{"id", id}, {"type", "message"}, {"role", "assistant"}, {"model", model}, {"content", std::move(content)},
          {"stop_reason", std::move(stop_reason)}, {"stop_sequence", std::move(stop_sequence)},
          {"usage", anthropic_usage(usage)}};
}

Json stop_sequence(const ChoiceOutput& choice) {
  return choice.stop_string.empty() ? Json(nullptr) : Json(choice.stop_string);
}

const char* error_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return "api_error";
  }
}

}  // namespace

std::string anthropic_stop_reason(const ChoiceOutput& choice, bool tool_calls) {
  if (choice.finish_reason == FinishReason::kLength) return "max_tokens";
  if (!choice.stop_string.empty()) return "stop_sequence";
  return tool_calls ? "tool_use" : "end_turn";
}

Json anthropic_usage(const Usage& usage) {
  return {{"input_tokens", usage.prompt_tokens - usage.cached_prompt_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", usage.cached_prompt_tokens},
          {"output_tokens", usage.completion_tokens}};
}

Json anthropic_message(const std::string& id, const std::string& model, const ChatMessage& message,
                       const ChoiceOutput& choice, const Usage& usage) {
  Json content = Json::array();
  if (!message.reasoning.empty())
    content.push_back({{"type", "thinking"}, {"thinking", message.reasoning}, {"signature", ""}});
  if (!message.content.empty()) content.push_back({{"type", "text"}, {"text", message.content}});
  for (const ToolCall& call : message.tool_calls)
    content.push_back(
        {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", tool_input(call.arguments)}});
  const bool tool_calls = !message.tool_calls.empty();
  return message_envelope(id, model, std::move(content), anthropic_stop_reason(choice, tool_calls),
                          stop_sequence(choice), usage);
}

Json anthropic_error(const ApiError& error) {
  return {{"type", "error"}, {"error", {{"type", error_type(error.status())}, {"message", error.what()}}}};
}

std::string AnthropicEventWriter::start(const Usage& usage) const {
  return event("message_start", {{"type", "message_start"},
                                 {"message", message_envelope(id_, model_, Json::array(), nullptr, nullptr, usage)}}) +
         event("ping", {{"type", "ping"}});
}

std::string AnthropicEventWriter::add(const ChatDelta& delta) {
  std::string out;
  if (!delta.reasoning.empty()) {
    if (block_ != Block::kThinking)
      out += open(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
    out += block_delta({{"type", "thinking_delta"}, {"thinking", delta.reasoning}});
  }
  if (!delta.content.empty()) {
    if (block_ != Block::kText) out += open(Block::kText, {{"type", "text"}, {"text", ""}});
    out += block_delta({{"type", "text_delta"}, {"text", delta.content}});
  }
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (!call.id.empty())
      out += open(Block::kToolUse,
                  {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", Json::object()}});
    if (!call.arguments.empty()) out += block_delta({{"type", "input_json_delta"}, {"partial_json", call.arguments}});
  }
  return out;
}

std::string AnthropicEventWriter::finish(const ChoiceOutput& choice, bool tool_calls, const Usage& usage) {
  std::string out = close();
  out += event("message_delta", {{"type", "message_delta"},
                                 {"delta", {{"stop_reason", anthropic_stop_reason(choice, tool_calls)},
                                            {"stop_sequence", stop_sequence(choice)}}},
                                 {"usage", anthropic_usage(usage)}});
  out += event("message_stop", {{"type", "message_stop"}});
  return out;
}

std::string AnthropicEventWriter::open(Block block, Json content_block) {
  std::string out = close();
  block_ = block;
  ++index_;
  out += event("content_block_start", {{"type", "content_block_start"}, {"index", index_},
                                       {"content_block", std::move(content_block)}});
  return out;
}

std::string AnthropicEventWriter::close() {
  if (block_ == Block::kNone) return {};
  block_ = Block::kNone;
  return event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
}

std::string AnthropicEventWriter::block_delta(Json delta) const {
  return event("content_block_delta",
               {{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}});
}

}  // namespace brisk::server
