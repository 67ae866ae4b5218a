// POST /v1/responses (OpenAI's Responses API): the input items rendered as a chat, the output
// parsed into reasoning, message and function_call items, returned as one response object or
// streamed as events. Nothing is stored. One sample per request.
#include "server/chat_generation.h"
#include "server/generation.h"
#include "server/generation_response.h"
#include "server/handlers.h"
#include "server/responses_output.h"
#include "server/responses_request.h"
#include "server/responses_stream.h"

namespace brisk::server {
namespace {

namespace asio = boost::asio;

// (Outside the coroutine: GCC 12 miscompiles braced lists next to co_await.)
constexpr ChatFieldNames kFieldNames{"input", "max_output_tokens"};

asio::awaitable<void> respond_once(Generation& g, HttpExchange& exchange, nlohmann::json response,
                                   const ChatOutputOptions& output) {
  while (!g.done())
    if (!co_await g.next(exchange)) co_return;
  if (g.error()) co_return co_await exchange.respond_error(generation_error(g));
  const ChoiceOutput& choice = g.choices().front();
  const ChatMessage message = parse_chat_output(output, choice.text);
  complete_response(response, output_items(message, choice.finish_reason), choice.finish_reason, g.usage());
  co_await exchange.respond_json(200, response);
}

// Events start with the first engine event, so a request the engine rejects gets a plain 400.
asio::awaitable<void> respond_streaming(Generation& g, HttpExchange& exchange, nlohmann::json response,
                                        const ChatOutputOptions& output) {
  ResponsesStream stream(std::move(response));
  ChatOutputParser parser(output);
  bool started = false;
  bool failed = false;
  while (!g.done()) {
    std::optional<std::vector<ChoiceDelta>> deltas = co_await g.next(exchange);
    if (!deltas) co_return;
    std::string text;
    if (!started) {
      if (g.error()) co_return co_await exchange.respond_error(generation_error(g));
      started = true;
      if (!co_await exchange.start_events()) co_return;
      text = stream.start();
    }
    for (const ChoiceDelta& d : *deltas) {
      if (failed) break;
      text += stream.add(parser.feed(d.delta.text, d.delta.finish_reason.has_value()));
    }
    if (g.error() && !failed) {
      // Mid-stream the status is already sent: the error ends the stream as response.failed.
      text += stream.fail(*g.error(), g.usage());
      failed = true;
      g.cancel();
    }
    if (!co_await exchange.send_events(text)) co_return;
  }
  std::string tail = failed ? "" : stream.finish(g.choices().front().finish_reason, g.usage());
  if (co_await exchange.send_events(tail)) co_await exchange.end_events();
}

}  // namespace

asio::awaitable<void> handle_responses(ServerState& state, HttpExchange& exchange) {
  const ResponsesRequest request = parse_responses_request(exchange.request().body());
  PreparedChat chat = prepare_chat(state, request.chat, kFieldNames);
  nlohmann::json response = response_object(request, make_item_id("resp"), unix_time_now(), state.model_name());
  std::vector<std::vector<int32_t>> prompts{std::move(chat.prompt)};
  Generation generation(state, std::move(prompts), chat.sampling, co_await asio::this_coro::executor);
  if (request.chat.options.stream) co_await respond_streaming(generation, exchange, std::move(response), chat.output);
  else co_await respond_once(generation, exchange, std::move(response), chat.output);
}

}  // namespace brisk::server
