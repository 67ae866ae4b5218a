// The response object of POST /v1/responses and its output items, in OpenAI's shape: reasoning
// ("rs_..."), message ("msg_...", one output_text part) and function_call ("fc_...") items, usage
// in input/output tokens, the request's settings echoed as the SDK's Response type expects them.
// Pure functions of their inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "server/chat_output/chat_output.h"
#include "server/openai_response.h"
#include "server/responses_request.h"

namespace brisk::server {

// "prefix_" and 24 random hex digits, as OpenAI spells response and item ids.
std::string make_item_id(std::string_view prefix);

// Status of an item or a response: "in_progress", "completed" or "incomplete".
nlohmann::json reasoning_item(const std::string& id, const std::string& text, std::string_view status);
nlohmann::json message_item(const std::string& id, const std::string& text, std::string_view status);
nlohmann::json function_call_item(const std::string& id, const ToolCall& call, std::string_view status);
// The content part of a message ({"type": "output_text", ...}) or a reasoning item.
nlohmann::json output_text_part(const std::string& text);
nlohmann::json reasoning_text_part(const std::string& text);

// A whole output parsed at once -> its items in order: reasoning, message, function calls. The
// message comes when there is content, or nothing else.
nlohmann::json output_items(const ChatMessage& message, std::optional<FinishReason> finish);
// The status of the item the output ended in: "incomplete" when cut by length, else "completed".
std::string_view last_item_status(std::optional<FinishReason> finish);

// The response in progress: status "in_progress", no output, no usage.
nlohmann::json response_object(const ResponsesRequest& request, const std::string& id, int64_t created_at,
                               const std::string& model);
// Sets output, usage and the status the finish gives (incomplete_details with it).
void complete_response(nlohmann::json& response, nlohmann::json output, std::optional<FinishReason> finish,
                       const Usage& usage);
// "incomplete" when cut by length (max_output_tokens), "cancelled", else "completed".
std::string_view response_status(std::optional<FinishReason> finish);
nlohmann::json responses_usage(const Usage& usage);

}  // namespace brisk::server
