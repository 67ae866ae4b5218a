// POST /v1/chat/completions: messages rendered with the model's chat template; the output split
// into reasoning, content and tool calls where the server parses them.
#include "server/generation_response.h"
#include "server/handlers.h"

namespace brisk::server {

boost::asio::awaitable<void> handle_chat_completions(ServerState& state, HttpExchange& exchange) {
  ChatRequest request = parse_chat_request(exchange.request().body());
  state.check_model(request.options.model);
  const std::string rendered = state.render_chat(request);
  std::vector<int32_t> prompt = state.need_tokenizer("messages").encode(rendered, /*add_special_tokens=*/false);
  // Without max_tokens a chat may use the rest of the context, as vLLM allows.
  const int64_t room = state.engine().max_model_len() - static_cast<int64_t>(prompt.size());
  SamplingParams sampling = resolve_sampling(request.options, std::max<int64_t>(room, 1));
  state.check_prompt(prompt, sampling.max_tokens, "messages");
  ResponseShape shape;
  shape.chat = true;
  shape.chat_output = state.chat_output(request, rendered);
  // Some formats mark calls with special tokens, which the text must then keep.
  if (shape.chat_output.tool_calls && tool_call_format_needs_special_tokens(*shape.chat_output.tool_calls))
    sampling.skip_special_tokens = false;
  shape.stream = request.options.stream;
  shape.include_usage = request.options.include_usage;
  shape.num_samples = sampling.n;
  shape.meta = response_meta(state, request.options, "chatcmpl");
  shape.meta.reasoning = shape.chat_output.reasoning;
  std::vector<std::vector<int32_t>> prompts{std::move(prompt)};
  Generation generation(state, std::move(prompts), sampling, co_await boost::asio::this_coro::executor);
  co_await respond_with_generation(generation, exchange, shape);
}

}  // namespace brisk::server
