// POST /v1/chat/completions: messages rendered with the model's chat template; the output split
// into reasoning, content and tool calls where the server parses them.
#include "server/chat_generation.h"
#include "server/generation_response.h"
#include "server/handlers.h"

namespace brisk::server {

boost::asio::awaitable<void> handle_chat_completions(ServerState& state, HttpExchange& exchange) {
  ChatRequest request = parse_chat_request(exchange.request().body());
  PreparedChat chat = prepare_chat(state, request);
  ResponseShape shape;
  shape.chat = true;
  shape.stream = request.options.stream;
  shape.include_usage = request.options.include_usage;
  shape.num_samples = chat.sampling.n;
  shape.meta = response_meta(state, request.options, "chatcmpl");
  shape.meta.reasoning = chat.output.reasoning;
  shape.meta.named_tool_choice = !chat.output.named_tool.empty();
  shape.chat_output = chat.output;
  std::vector<std::vector<int32_t>> prompts{std::move(chat.prompt)};
  Generation generation(state, std::move(prompts), chat.sampling, co_await boost::asio::this_coro::executor);
  co_await respond_with_generation(generation, exchange, shape);
}

}  // namespace brisk::server
