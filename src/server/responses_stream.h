// The server-sent events of one streamed /v1/responses response, from the parsed deltas of its
// output, in OpenAI's order: response.created and response.in_progress; per output item
// output_item.added, its content part added (reasoning and message items), text or argument
// deltas, their done events, output_item.done; then response.completed (or .incomplete, or
// .failed). An item opens when the output switches between reasoning, content and a tool call
// and closes when the next opens or the output ends. Every event is named and numbered
// ("sequence_number"). Pure: each call returns the events' text, for the handler to send.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "server/chat_output/chat_output.h"
#include "server/openai_response.h"

namespace brisk::server {

class ResponsesStream {
 public:
  // `response`: response_object(...), in progress.
  explicit ResponsesStream(nlohmann::json response) : response_(std::move(response)) {}

  std::string start();
  std::string add(const ChatDelta& delta);
  // Closes the open item (an empty message when the output had none) and completes the response.
  std::string finish(std::optional<FinishReason> finish, const Usage& usage);
  // An engine error mid-stream: the open item closes incomplete, response.failed carries it.
  std::string fail(const std::string& message, const Usage& usage);

  // The response as the last event sent it.
  const nlohmann::json& response() const { return response_; }

 private:
  enum class Kind { kNone, kReasoning, kMessage, kFunctionCall };

  std::string event(std::string_view type, nlohmann::json body);
  std::string open(Kind kind, const ToolCallDelta* call = nullptr);
  std::string append(const std::string& piece);
  std::string close(std::string_view status);
  nlohmann::json item(std::string_view status) const;  // the open item as it stands
  nlohmann::json part() const;                          // the open item's content part
  nlohmann::json where() const;                         // item_id, output_index (+ content_index)

  nlohmann::json response_;
  nlohmann::json output_ = nlohmann::json::array();  // the closed items
  Kind kind_ = Kind::kNone;
  std::string item_id_;
  std::string text_;  // the open item's text, or its call's arguments
  ToolCall call_;     // the open function call (id, name)
  int64_t sequence_ = 0;
};

}  // namespace brisk::server
