#include "server/openai_response.h"

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>

namespace brisk::server {
namespace {

using Json = nlohmann::json;

std::string token_text(const ResponseMeta& meta, int32_t token) {
  if (!meta.tokenizer) return fmt::format("token_id:{}", token);
  const int32_t ids[] = {token};
  return meta.tokenizer->decode(ids, /*skip_special_tokens=*/false);
}

Json utf8_bytes(const std::string& text) {
  Json bytes = Json::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

Json finish_json(const ChoiceOutput& choice) {
  return choice.finish_reason ? Json(finish_reason_text(*choice.finish_reason)) : Json(nullptr);
}

// vLLM's "stop_reason": the stop string that ended the choice, else null.
Json stop_reason_json(const ChoiceOutput& choice) {
  return choice.stop_string.empty() ? Json(nullptr) : Json(choice.stop_string);
}

// Legacy completions logprobs: parallel lists, top alternatives as {token: logprob} maps that
// also hold the chosen token (as OpenAI and vLLM return them). An echoed prompt's tokens come
// first, the first of them with null logprob and alternatives (as vLLM returns them).
Json completion_logprobs(const ResponseMeta& meta, const ChoiceOutput& choice, int64_t text_offset) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(), offsets = Json::array();
  auto add = [&](int32_t token, std::optional<float> logprob, const std::vector<TokenLogprob>& alternatives) {
    std::string text = token_text(meta, token);
    tokens.push_back(text);
    token_logprobs.push_back(logprob ? Json(*logprob) : Json(nullptr));
    Json best = Json::object();
    const size_t count = std::min(alternatives.size(), static_cast<size_t>(std::max(meta.top_logprobs, 0)));
    for (size_t j = 0; j < count; ++j) best[token_text(meta, alternatives[j].token)] = alternatives[j].logprob;
    if (logprob) best[text] = *logprob;
    top.push_back(logprob ? std::move(best) : Json(nullptr));
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(text.size());
  };
  for (const PromptLogprob& p : choice.prompt_tokens)
    add(p.token, p.rank == 0 ? std::nullopt : std::optional<float>(p.logprob), p.top_logprobs);
  for (const TokenOutput& t : choice.tokens) add(t.token, t.logprob, t.top_logprobs);
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

Json chat_logprobs(const ResponseMeta& meta, const ChoiceOutput& choice) {
  Json content = Json::array();
  for (const TokenOutput& t : choice.tokens) {
    std::string text = token_text(meta, t.token);
    Json top = Json::array();
    for (const TokenLogprob& alt : t.top_logprobs) {
      std::string alt_text = token_text(meta, alt.token);
      top.push_back({{"token", alt_text}, {"logprob", alt.logprob}, {"bytes", utf8_bytes(alt_text)}});
    }
    content.push_back({{"token", text}, {"logprob", t.logprob}, {"bytes", utf8_bytes(text)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

Json envelope(const ResponseMeta& meta, const char* object, Json choices) {
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model},
          {"choices", std::move(choices)}};
}

}  // namespace

std::string make_response_id(std::string_view prefix, char separator) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{}{:016x}{:08x}", prefix, separator, rng(), static_cast<uint32_t>(rng()));
}

int64_t unix_time_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string_view finish_reason_text(FinishReason reason) {
  return reason == FinishReason::kCancelled ? "abort" : finish_reason_name(reason);
}

Json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_prompt_tokens}}}};
}

Json completion_response(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices, const Usage& usage) {
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    list.push_back({{"index", i}, {"text", c.text},
                    {"logprobs", meta.logprobs ? completion_logprobs(meta, c, 0) : Json(nullptr)},
                    {"finish_reason", finish_json(c)}, {"stop_reason", stop_reason_json(c)}});
  }
  Json body = envelope(meta, "text_completion", std::move(list));
  body["usage"] = usage_json(usage);
  return body;
}

Json completion_chunk(const ResponseMeta& meta, int64_t index, const ChoiceOutput& delta, int64_t text_offset) {
  Json choice = {{"index", index}, {"text", delta.text},
                 {"logprobs", meta.logprobs ? completion_logprobs(meta, delta, text_offset) : Json(nullptr)},
                 {"finish_reason", finish_json(delta)}, {"stop_reason", stop_reason_json(delta)}};
  Json body = envelope(meta, "text_completion", Json::array({std::move(choice)}));
  if (meta.usage_in_chunks) body["usage"] = nullptr;
  return body;
}

Json chat_finish_reason(const std::optional<FinishReason>& reason, bool tool_calls) {
  if (!reason) return nullptr;
  if (tool_calls && *reason == FinishReason::kStop) return "tool_calls";
  return finish_reason_text(*reason);
}

Json chat_response(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                   const std::vector<ChatMessage>& messages, const Usage& usage) {
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    const ChatMessage& m = messages[i];
    Json calls = Json::array();
    for (const ToolCall& call : m.tool_calls)
      calls.push_back({{"id", call.id}, {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    // OpenAI sends null content beside tool calls when the model wrote none.
    Json message = {{"role", "assistant"},
                    {"content", m.content.empty() && !calls.empty() ? Json(nullptr) : Json(m.content)}};
    if (meta.reasoning) message["reasoning_content"] = m.reasoning.empty() ? Json(nullptr) : Json(m.reasoning);
    message["tool_calls"] = std::move(calls);
    list.push_back({{"index", i}, {"message", std::move(message)},
                    {"logprobs", meta.logprobs ? chat_logprobs(meta, c) : Json(nullptr)},
                    {"finish_reason",
                     chat_finish_reason(c.finish_reason, !m.tool_calls.empty() && !meta.named_tool_choice)},
                    {"stop_reason", stop_reason_json(c)}});
  }
  Json body = envelope(meta, "chat.completion", std::move(list));
  body["usage"] = usage_json(usage);
  return body;
}

Json chat_chunk(const ResponseMeta& meta, int64_t index, const ChoiceOutput& delta, const ChatDelta& message,
                bool tool_calls, bool with_role) {
  Json out = Json::object();
  if (with_role) out["role"] = "assistant";
  if (with_role || !message.content.empty()) out["content"] = message.content;
  if (!message.reasoning.empty()) out["reasoning_content"] = message.reasoning;
  if (!message.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCallDelta& call : message.tool_calls) {
      Json item = {{"index", call.index}};
      Json function = Json::object();
      if (!call.id.empty()) {
        item["id"] = call.id;
        item["type"] = "function";
        function["name"] = call.name;
      }
      function["arguments"] = call.arguments;
      item["function"] = std::move(function);
      calls.push_back(std::move(item));
    }
    out["tool_calls"] = std::move(calls);
  }
  Json choice = {{"index", index}, {"delta", std::move(out)},
                 {"logprobs", meta.logprobs && !delta.tokens.empty() ? chat_logprobs(meta, delta) : Json(nullptr)},
                 {"finish_reason", chat_finish_reason(delta.finish_reason, tool_calls && !meta.named_tool_choice)},
                 {"stop_reason", stop_reason_json(delta)}};
  Json body = envelope(meta, "chat.completion.chunk", Json::array({std::move(choice)}));
  if (meta.usage_in_chunks) body["usage"] = nullptr;
  return body;
}

Json usage_chunk(const ResponseMeta& meta, bool chat, const Usage& usage) {
  Json body = envelope(meta, chat ? "chat.completion.chunk" : "text_completion", Json::array());
  body["usage"] = usage_json(usage);
  return body;
}

std::string dump_json(const Json& body) { return body.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string sse_event(std::string_view payload) { return fmt::format("data: {}\n\n", payload); }

std::string sse_event(std::string_view name, std::string_view payload) {
  return fmt::format("event: {}\ndata: {}\n\n", name, payload);
}

}  // namespace brisk::server
