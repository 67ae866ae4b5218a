// POST /tokenize and POST /detokenize, in vLLM's request and response shapes.
#include "server/handlers.h"

namespace brisk::server {
namespace {

// (Bodies are built outside the coroutines: GCC 12 miscompiles braced lists next to co_await.)
nlohmann::json tokenize_body(const std::vector<int32_t>& tokens, int64_t max_model_len) {
  return {{"count", tokens.size()}, {"max_model_len", max_model_len}, {"tokens", tokens}};
}

nlohmann::json detokenize_body(std::string text) { return {{"prompt", std::move(text)}}; }

}  // namespace

boost::asio::awaitable<void> handle_tokenize(ServerState& state, HttpExchange& exchange) {
  TokenizeRequest request = parse_tokenize_request(exchange.request().body());
  state.check_model(request.model);
  std::vector<int32_t> tokens;
  if (request.chat) {
    tokens = state.encode_chat(*request.chat, request.add_special_tokens);
  } else {
    tokens = state.need_tokenizer("prompt").encode(*request.prompt, request.add_special_tokens);
  }
  co_await exchange.respond_json(200, tokenize_body(tokens, state.engine().max_model_len()));
}

boost::asio::awaitable<void> handle_detokenize(ServerState& state, HttpExchange& exchange) {
  DetokenizeRequest request = parse_detokenize_request(exchange.request().body());
  state.check_model(request.model);
  const Tokenizer& tokenizer = state.need_tokenizer("tokens");
  for (size_t i = 0; i < request.tokens.size(); ++i)
    if (request.tokens[i] >= tokenizer.vocab_size())
      throw_invalid("tokens", "token {} at index {} is outside the vocabulary [0, {})", request.tokens[i], i,
                    tokenizer.vocab_size());
  co_await exchange.respond_json(200, detokenize_body(tokenizer.decode(request.tokens, /*skip_special_tokens=*/false)));
}

}  // namespace brisk::server
