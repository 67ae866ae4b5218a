// POST /v1/completions: text or token-id prompts (several per request), echo (with the prompt's
// logprobs when logprobs is set), logprobs, prompt_logprobs, n, max_tokens 0 with echo (scoring only).
#include <algorithm>

#include "server/generation_response.h"
#include "server/handlers.h"

namespace brisk::server {
namespace {

// OpenAI's default for completions.
constexpr int64_t kDefaultMaxTokens = 16;

}  // namespace

boost::asio::awaitable<void> handle_completions(ServerState& state, HttpExchange& exchange) {
  CompletionRequest request = parse_completion_request(exchange.request().body());
  state.check_model(request.options.model);
  SamplingParams sampling = resolve_sampling(state, request.options, kDefaultMaxTokens);
  // The prompt is scored for echo with logprobs (its logprobs lead the choice's), and for
  // max_tokens 0, which the engine only allows when it scores.
  auto score_prompt = [&](int32_t num_top) {
    sampling.prompt_logprobs = std::max(sampling.prompt_logprobs.value_or(0), num_top);
  };
  if (request.echo && request.options.logprobs) score_prompt(sampling.top_logprobs);
  if (sampling.max_tokens == 0) score_prompt(0);
  std::vector<std::vector<int32_t>> prompts;
  ResponseShape shape;
  for (const Prompt& prompt : request.prompts) {
    if (const auto* text = std::get_if<std::string>(&prompt)) {
      prompts.push_back(state.need_tokenizer("prompt").encode(*text, /*add_special_tokens=*/true));
      if (request.echo) shape.echo.push_back(*text);
    } else {
      prompts.push_back(std::get<std::vector<int32_t>>(prompt));
      if (request.echo)
        shape.echo.push_back(state.tokenizer() ? state.tokenizer()->decode(prompts.back(), false) : std::string());
    }
    state.check_prompt(prompts.back(), sampling.max_tokens, "prompt");
  }
  shape.stream = request.options.stream;
  shape.include_usage = request.options.include_usage;
  shape.num_samples = sampling.n;
  shape.meta = response_meta(state, request.options, "cmpl");
  Generation generation(state, std::move(prompts), sampling, co_await boost::asio::this_coro::executor);
  co_await respond_with_generation(generation, exchange, shape);
}

}  // namespace brisk::server
