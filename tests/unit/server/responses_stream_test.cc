// The streamed /v1/responses events: items open and close as the output switches between
// reasoning, content and tool calls, every event is named and numbered in order, and the final
// response holds what the deltas added up to.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/responses_output.h"
#include "server/responses_stream.h"

namespace brisk::server {
namespace {

using Json = nlohmann::json;

struct Event {
  std::string name;
  Json data;
};

// "event: NAME\ndata: JSON\n\n"... -> events; each data's "type" must be its name.
std::vector<Event> parse_events(const std::string& text) {
  std::vector<Event> events;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos);
    std::string block = text.substr(pos, end - pos);
    size_t newline = block.find('\n');
    EXPECT_EQ(block.rfind("event: ", 0), 0u) << block;
    EXPECT_EQ(block.compare(newline + 1, 6, "data: "), 0) << block;
    Event e{block.substr(7, newline - 7), Json::parse(block.substr(newline + 7))};
    EXPECT_EQ(e.data["type"], e.name);
    events.push_back(std::move(e));
    pos = end + 2;
  }
  return events;
}

std::vector<std::string> names(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(e.name);
  return out;
}

Json in_progress() {
  return {{"id", "resp_1"}, {"object", "response"}, {"status", "in_progress"}, {"output", Json::array()}};
}

ChatDelta reasoning(std::string text) { return {std::move(text), "", {}}; }
ChatDelta content(std::string text) { return {"", std::move(text), {}}; }
ChatDelta call(int32_t index, std::string id, std::string name, std::string arguments) {
  return {"", "", {ToolCallDelta{index, std::move(id), std::move(name), std::move(arguments)}}};
}

Usage usage() { return {5, 7, 2}; }

TEST(ResponsesStream, ReasoningThenToolCalls) {
  ResponsesStream stream(in_progress());
  std::string text = stream.start();
  text += stream.add(reasoning("think "));
  text += stream.add(reasoning("hard"));
  text += stream.add(call(0, "call_a", "f", "{\"x\": "));
  text += stream.add(call(0, "", "", "1}"));
  text += stream.add(call(1, "call_b", "g", ""));
  text += stream.add({});
  text += stream.finish(FinishReason::kStop, usage());
  std::vector<Event> events = parse_events(text);
  EXPECT_EQ(names(events), (std::vector<std::string>{
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.delta", "response.reasoning_text.done", "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.done", "response.output_item.done",
      "response.completed"}));
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i);
  EXPECT_EQ(events[0].data["response"], in_progress());
  EXPECT_EQ(events[2].data["item"]["type"], "reasoning");
  EXPECT_EQ(events[2].data["item"]["status"], "in_progress");
  EXPECT_EQ(events[4].data["delta"], "think ");
  EXPECT_EQ(events[4].data["item_id"], events[2].data["item"]["id"]);
  EXPECT_EQ(events[6].data["text"], "think hard");
  EXPECT_EQ(events[9].data["output_index"], 1);
  EXPECT_EQ(events[9].data["item"]["call_id"], "call_a");
  EXPECT_EQ(events[9].data["item"]["name"], "f");
  EXPECT_EQ(events[12].data["arguments"], "{\"x\": 1}");
  EXPECT_EQ(events[15].data["arguments"], "");
  const Json& response = events.back().data["response"];
  EXPECT_EQ(response["status"], "completed");
  EXPECT_EQ(response["usage"]["input_tokens"], 5);
  EXPECT_EQ(response["usage"]["output_tokens"], 7);
  EXPECT_EQ(response["usage"]["input_tokens_details"]["cached_tokens"], 2);
  ASSERT_EQ(response["output"].size(), 3u);
  EXPECT_EQ(response["output"][0]["content"], Json::parse(R"([{"type": "reasoning_text", "text": "think hard"}])"));
  EXPECT_EQ(response["output"][1]["arguments"], "{\"x\": 1}");
  EXPECT_EQ(response["output"][1]["status"], "completed");
  EXPECT_EQ(response["output"][2]["call_id"], "call_b");
  EXPECT_EQ(response["output"][1]["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(response["output"][0]["id"].get<std::string>().rfind("rs_", 0), 0u);
  EXPECT_EQ(stream.response(), response);
}

TEST(ResponsesStream, MessageCutByLengthIsIncomplete) {
  ResponsesStream stream(in_progress());
  std::string text = stream.start();  // (one call a statement: operands of + run in any order)
  text += stream.add(content("Hel"));
  text += stream.add(content("lo"));
  text += stream.finish(FinishReason::kLength, usage());
  std::vector<Event> events = parse_events(text);
  EXPECT_EQ(names(events), (std::vector<std::string>{
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
      "response.content_part.done", "response.output_item.done", "response.incomplete"}));
  EXPECT_EQ(events[2].data["item"]["content"], Json::array());
  EXPECT_EQ(events[3].data["part"], Json::parse(R"({"type": "output_text", "text": "", "annotations": [], "logprobs": []})"));
  EXPECT_EQ(events[6].data["text"], "Hello");
  EXPECT_EQ(events[7].data["part"]["text"], "Hello");
  EXPECT_EQ(events[8].data["item"]["status"], "incomplete");
  const Json& response = events.back().data["response"];
  EXPECT_EQ(response["status"], "incomplete");
  EXPECT_EQ(response["incomplete_details"], Json::parse(R"({"reason": "max_output_tokens"})"));
  EXPECT_EQ(response["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(response["output"][0]["id"].get<std::string>().rfind("msg_", 0), 0u);
}

TEST(ResponsesStream, EmptyOutputIsAnEmptyMessage) {
  ResponsesStream stream(in_progress());
  std::string text = stream.start();
  text += stream.finish(FinishReason::kStop, usage());
  const Json response = parse_events(text).back().data["response"];
  ASSERT_EQ(response["output"].size(), 1u);
  EXPECT_EQ(response["output"][0]["type"], "message");
  EXPECT_EQ(response["output"][0]["content"][0]["text"], "");
}

TEST(ResponsesStream, FailureClosesTheOpenItemIncomplete) {
  ResponsesStream stream(in_progress());
  std::string text = stream.start();
  text += stream.add(content("Hi"));
  text += stream.fail("engine broke", usage());
  std::vector<Event> events = parse_events(text);
  EXPECT_EQ(events[events.size() - 2].data["item"]["status"], "incomplete");
  EXPECT_EQ(events.back().name, "response.failed");
  EXPECT_EQ(events.back().data["response"]["status"], "failed");
  EXPECT_EQ(events.back().data["response"]["error"], Json::parse(R"({"code": "server_error", "message": "engine broke"})"));
}

TEST(ResponsesOutput, WholeOutputItemsInOrder) {
  ChatMessage message{"r", "c", {ToolCall{"call_1", "f", "{}"}}};
  Json items = output_items(message, FinishReason::kStop);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0]["type"], "reasoning");
  EXPECT_EQ(items[1]["content"][0]["text"], "c");
  EXPECT_EQ(items[2], (Json{{"id", items[2]["id"]}, {"type", "function_call"}, {"call_id", "call_1"}, {"name", "f"},
                            {"arguments", "{}"}, {"status", "completed"}}));
  Json calls_only = output_items(ChatMessage{"", "", {ToolCall{"call_1", "f", "{}"}}}, FinishReason::kLength);
  ASSERT_EQ(calls_only.size(), 1u);
  EXPECT_EQ(calls_only[0]["status"], "incomplete");
  EXPECT_EQ(output_items(ChatMessage{}, FinishReason::kStop)[0]["type"], "message");
}

}  // namespace
}  // namespace brisk::server
