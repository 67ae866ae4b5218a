// POST /v1/messages (Anthropic's Messages API) and /v1/messages/count_tokens: the conversation
// rendered with the model's chat template like a chat completion, the output as Anthropic's
// content blocks, errors in Anthropic's shape.
#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/chat_generation.h"
#include "server/generation_response.h"
#include "server/handlers.h"

namespace brisk::server {
namespace {

namespace asio = boost::asio;

asio::awaitable<void> respond_anthropic_error(HttpExchange& exchange, const ApiError& error) {
  co_await exchange.respond_json(error.status(), anthropic_error(error));
}

asio::awaitable<void> respond_once(Generation& g, HttpExchange& exchange, const PreparedChat& chat,
                                   const std::string& id, const std::string& model) {
  while (!g.done())
    if (!co_await g.next(exchange)) co_return;
  if (g.error()) co_return co_await respond_anthropic_error(exchange, generation_error(g));
  const ChoiceOutput& choice = g.choices()[0];
  co_await exchange.respond_json(200, anthropic_message(id, model, parse_chat_output(chat.output, choice.text), choice,
                                                        g.usage()));
}

asio::awaitable<void> respond_streaming(Generation& g, HttpExchange& exchange, const PreparedChat& chat,
                                        const std::string& id, const std::string& model) {
  AnthropicEventWriter writer(id, model);
  ChatOutputParser parser(chat.output);
  bool started = false;
  while (!g.done()) {
    std::optional<std::vector<ChoiceDelta>> deltas = co_await g.next(exchange);
    if (!deltas) co_return;
    std::string text;
    if (!started) {
      if (g.error()) co_return co_await respond_anthropic_error(exchange, generation_error(g));
      started = true;
      if (!co_await exchange.start_events()) co_return;
      text = writer.start(g.usage());
    }
    for (const ChoiceDelta& d : *deltas) {
      text += writer.add(parser.feed(d.delta.text, d.delta.finish_reason.has_value()));
      if (d.delta.finish_reason && !g.error())
        text += writer.finish(g.choices()[0], parser.has_tool_calls(), g.usage());
    }
    if (g.error()) text += sse_event("error", dump_json(anthropic_error(generation_error(g))));
    if (!co_await exchange.send_events(text)) co_return;
  }
  co_await exchange.end_events();
}

asio::awaitable<void> respond_messages(ServerState& state, HttpExchange& exchange) {
  ChatRequest request = parse_messages_request(exchange.request().body());
  PreparedChat chat = prepare_chat(state, request);
  const std::string id = make_response_id("msg", '_');
  std::vector<std::vector<int32_t>> prompts{chat.prompt};
  Generation generation(state, std::move(prompts), chat.sampling, co_await asio::this_coro::executor);
  if (request.options.stream) co_await respond_streaming(generation, exchange, chat, id, state.model_name());
  else co_await respond_once(generation, exchange, chat, id, state.model_name());
}

nlohmann::json count_body(size_t num_tokens) { return {{"input_tokens", num_tokens}}; }

}  // namespace

asio::awaitable<void> handle_messages(ServerState& state, HttpExchange& exchange) {
  std::optional<ApiError> error;
  try {
    co_await respond_messages(state, exchange);
  } catch (const ApiError& e) {
    error = e;
  }
  if (error && exchange.status() == 0) co_await respond_anthropic_error(exchange, *error);
}

asio::awaitable<void> handle_count_tokens(ServerState& state, HttpExchange& exchange) {
  std::optional<ApiError> error;
  size_t num_tokens = 0;
  try {
    ChatRequest request = parse_count_tokens_request(exchange.request().body());
    state.check_model(request.options.model);
    num_tokens = state.encode_chat(request).size();
  } catch (const ApiError& e) {
    error = e;
  }
  if (error) co_return co_await respond_anthropic_error(exchange, *error);
  co_await exchange.respond_json(200, count_body(num_tokens));
}

}  // namespace brisk::server
