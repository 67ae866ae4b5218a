#include "server/responses_stream.h"

#include "server/responses_output.h"

namespace brisk::server {

using Json = nlohmann::json;

std::string ResponsesStream::event(std::string_view type, Json body) {
  body["type"] = type;
  body["sequence_number"] = sequence_++;
  return sse_event(type, dump_json(body));
}

Json ResponsesStream::item(std::string_view status) const {
  switch (kind_) {
    case Kind::kReasoning: return reasoning_item(item_id_, text_, status);
    case Kind::kMessage: return message_item(item_id_, text_, status);
    case Kind::kFunctionCall: {
      ToolCall call = call_;
      call.arguments = text_;
      return function_call_item(item_id_, call, status);
    }
    case Kind::kNone: break;
  }
  return nullptr;
}

Json ResponsesStream::part() const {
  return kind_ == Kind::kReasoning ? reasoning_text_part(text_) : output_text_part(text_);
}

Json ResponsesStream::where() const {
  Json body = {{"item_id", item_id_}, {"output_index", output_.size()}};
  if (kind_ != Kind::kFunctionCall) body["content_index"] = 0;
  return body;
}

std::string ResponsesStream::start() {
  std::string text = event("response.created", {{"response", response_}});
  return text + event("response.in_progress", {{"response", response_}});
}

std::string ResponsesStream::open(Kind kind, const ToolCallDelta* call) {
  std::string text = close("completed");
  kind_ = kind;
  text_.clear();
  if (kind == Kind::kFunctionCall) call_ = {call->id, call->name, ""};
  item_id_ = make_item_id(kind == Kind::kReasoning ? "rs" : kind == Kind::kMessage ? "msg" : "fc");
  text += event("response.output_item.added", {{"output_index", output_.size()}, {"item", item("in_progress")}});
  if (kind != Kind::kFunctionCall) {
    Json body = where();
    body["part"] = part();
    text += event("response.content_part.added", std::move(body));
  }
  return text;
}

std::string ResponsesStream::append(const std::string& piece) {
  text_ += piece;
  Json body = where();
  body["delta"] = piece;
  switch (kind_) {
    case Kind::kReasoning: return event("response.reasoning_text.delta", std::move(body));
    case Kind::kMessage:
      body["logprobs"] = Json::array();
      return event("response.output_text.delta", std::move(body));
    case Kind::kFunctionCall: return event("response.function_call_arguments.delta", std::move(body));
    case Kind::kNone: break;
  }
  return {};
}

std::string ResponsesStream::close(std::string_view status) {
  if (kind_ == Kind::kNone) return {};
  std::string text;
  Json body = where();
  if (kind_ == Kind::kFunctionCall) {
    body["arguments"] = text_;
    text += event("response.function_call_arguments.done", std::move(body));
  } else {
    Json done = body;
    done["text"] = text_;
    if (kind_ == Kind::kMessage) done["logprobs"] = Json::array();
    text += event(kind_ == Kind::kMessage ? "response.output_text.done" : "response.reasoning_text.done", done);
    body["part"] = part();
    text += event("response.content_part.done", std::move(body));
  }
  Json finished = item(status);
  text += event("response.output_item.done", {{"output_index", output_.size()}, {"item", finished}});
  output_.push_back(std::move(finished));
  kind_ = Kind::kNone;
  return text;
}

std::string ResponsesStream::add(const ChatDelta& delta) {
  std::string text;
  if (!delta.reasoning.empty()) {
    if (kind_ != Kind::kReasoning) text += open(Kind::kReasoning);
    text += append(delta.reasoning);
  }
  if (!delta.content.empty()) {
    if (kind_ != Kind::kMessage) text += open(Kind::kMessage);
    text += append(delta.content);
  }
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (!call.id.empty()) text += open(Kind::kFunctionCall, &call);  // a call's first delta
    if (kind_ == Kind::kFunctionCall && !call.arguments.empty()) text += append(call.arguments);
  }
  return text;
}

std::string ResponsesStream::finish(std::optional<FinishReason> finish, const Usage& usage) {
  std::string text;
  if (kind_ == Kind::kNone && output_.empty()) text += open(Kind::kMessage);
  text += close(last_item_status(finish));
  complete_response(response_, output_, finish, usage);
  const char* name = response_["status"] == "completed" ? "response.completed" : "response.incomplete";
  return text + event(name, {{"response", response_}});
}

std::string ResponsesStream::fail(const std::string& message, const Usage& usage) {
  std::string text = close("incomplete");
  response_["status"] = "failed";
  response_["error"] = {{"code", "server_error"}, {"message", message}};
  response_["output"] = output_;
  response_["usage"] = responses_usage(usage);
  return text + event("response.failed", {{"response", response_}});
}

}  // namespace brisk::server
