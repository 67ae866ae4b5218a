#include "server/responses_output.h"

namespace brisk::server {

using Json = nlohmann::json;

std::string make_item_id(std::string_view prefix) {
  std::string id = make_response_id(prefix);  // "prefix-<hex>"
  id[prefix.size()] = '_';
  return id;
}

Json output_text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
}

Json reasoning_text_part(const std::string& text) { return {{"type", "reasoning_text"}, {"text", text}}; }

Json reasoning_item(const std::string& id, const std::string& text, std::string_view status) {
  Json content = Json::array();
  if (!text.empty() || status != "in_progress") content.push_back(reasoning_text_part(text));
  return {{"id", id}, {"type", "reasoning"}, {"summary", Json::array()}, {"content", std::move(content)},
          {"encrypted_content", nullptr}, {"status", status}};
}

Json message_item(const std::string& id, const std::string& text, std::string_view status) {
  Json content = Json::array();
  if (!text.empty() || status != "in_progress") content.push_back(output_text_part(text));
  return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

Json function_call_item(const std::string& id, const ToolCall& call, std::string_view status) {
  return {{"id", id}, {"type", "function_call"}, {"call_id", call.id}, {"name", call.name},
          {"arguments", call.arguments}, {"status", status}};
}

std::string_view last_item_status(std::optional<FinishReason> finish) {
  return finish == FinishReason::kLength ? "incomplete" : "completed";
}

Json output_items(const ChatMessage& message, std::optional<FinishReason> finish) {
  Json items = Json::array();
  if (!message.reasoning.empty()) items.push_back(reasoning_item(make_item_id("rs"), message.reasoning, "completed"));
  if (!message.content.empty() || message.tool_calls.empty())
    items.push_back(message_item(make_item_id("msg"), message.content, "completed"));
  for (const ToolCall& call : message.tool_calls)
    items.push_back(function_call_item(make_item_id("fc"), call, "completed"));
  items.back()["status"] = last_item_status(finish);
  return items;
}

Json response_object(const ResponsesRequest& request, const std::string& id, int64_t created_at,
                     const std::string& model) {
  const GenerationOptions& options = request.chat.options;
  const Json reasoning = request.reasoning.is_null() ? Json{{"effort", nullptr}, {"summary", nullptr}}
                                                     : Json(request.reasoning);
  return {{"id", id},
          {"object", "response"},
          {"created_at", created_at},
          {"status", "in_progress"},
          {"background", false},
          {"error", nullptr},
          {"incomplete_details", nullptr},
          {"instructions", request.instructions ? Json(*request.instructions) : Json(nullptr)},
          {"max_output_tokens", options.max_tokens ? Json(*options.max_tokens) : Json(nullptr)},
          {"max_tool_calls", nullptr},
          {"model", model},
          {"output", Json::array()},
          {"parallel_tool_calls", request.chat.parallel_tool_calls},
          {"previous_response_id", nullptr},
          {"reasoning", reasoning},
          {"store", false},  // nothing is kept, whatever the request asked
          {"temperature", options.sampling.temperature},
          {"text", {{"format", Json(request.text_format)}}},
          {"tool_choice", Json(request.tool_choice)},
          {"tools", Json(request.tools)},
          {"top_p", options.sampling.top_p},
          {"truncation", request.truncation},
          {"usage", nullptr},
          {"user", request.user ? Json(*request.user) : Json(nullptr)},
          {"metadata", request.metadata.is_null() ? Json::object() : Json(request.metadata)}};
}

std::string_view response_status(std::optional<FinishReason> finish) {
  if (finish == FinishReason::kLength) return "incomplete";
  if (finish == FinishReason::kCancelled) return "cancelled";  // the server is shutting down
  return "completed";
}

Json responses_usage(const Usage& usage) {
  return {{"input_tokens", usage.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", usage.cached_prompt_tokens}, {"cache_write_tokens", 0}}},
          {"output_tokens", usage.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},  // reasoning tokens are not counted apart
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

void complete_response(Json& response, Json output, std::optional<FinishReason> finish, const Usage& usage) {
  response["status"] = response_status(finish);
  if (finish == FinishReason::kLength) response["incomplete_details"] = {{"reason", "max_output_tokens"}};
  response["output"] = std::move(output);
  response["usage"] = responses_usage(usage);
}

}  // namespace brisk::server
