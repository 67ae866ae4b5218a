// POST /v1/responses request bodies (OpenAI's Responses API) -> a chat request, plus what the
// response object echoes. Pure, like openai_request.h: every problem throws ApiError (400
// naming the field). brisk keeps no responses, so what needs server-side state is refused
// (previous_response_id, conversation, background, item references), as are tools other than
// functions; settings that change nothing here (store, include, reasoning effort, metadata) are
// accepted. Structured output: text.format (json_schema, json_object) and a forced tool_choice
// ("required", {"type": "function", "name": ...}) set chat.options.constraint.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace brisk::server {

struct ResponsesRequest {
  // The conversation as chat messages (instructions first, as a system message), the tools in
  // chat's shape, sampling (temperature, top_p; max_output_tokens as max_tokens), stream.
  ChatRequest chat;
  // Echoed in the response object as the client sent them.
  std::optional<std::string> instructions;
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // Responses' shape
  nlohmann::ordered_json tool_choice = "auto";                        // Responses' shape
  nlohmann::ordered_json text_format = {{"type", "text"}};
  nlohmann::ordered_json metadata;   // null or an object
  nlohmann::ordered_json reasoning;  // null or an object ({"effort": ...}: no effect here)
  std::optional<std::string> user;
  std::string truncation = "disabled";
};

ResponsesRequest parse_responses_request(std::string_view body);

}  // namespace brisk::server
