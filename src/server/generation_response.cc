#include "server/generation_response.h"

#include "server/prompt_logprobs_json.h"

namespace brisk::server {
namespace {

namespace asio = boost::asio;

// The echoed prompt a completions choice starts with ("" without echo).
const std::string& echo_text(const ResponseShape& shape, int64_t choice) {
  static const std::string kNone;
  return shape.echo.empty() ? kNone : shape.echo[choice / shape.num_samples];
}

// The chunk each chat choice starts with: the assistant role.
std::string opening_events(const ResponseShape& shape, size_t num_choices) {
  std::string text;
  for (size_t i = 0; shape.chat && i < num_choices; ++i)
    text += sse_event(dump_json(chat_chunk(shape.meta, static_cast<int64_t>(i), {}, {}, false, true)));
  return text;
}

// A chat choice's chunk: its text parsed into reasoning, content and tool-call deltas. Chunks
// with nothing to say are skipped, unless they carry logprobs or the finish.
std::string chat_event(const ResponseShape& shape, const ChoiceDelta& d, ChatOutputParser& parser) {
  const ChatDelta message = parser.feed(d.delta.text, d.delta.finish_reason.has_value());
  if (message.empty() && !d.delta.finish_reason && (d.delta.tokens.empty() || !shape.meta.logprobs)) return {};
  return sse_event(dump_json(chat_chunk(shape.meta, d.index, d.delta, message, parser.has_tool_calls(), false)));
}

// A completions chunk goes out for every token, also one whose text is held back (an
// incomplete UTF-8 character, or no tokenizer), as vLLM sends them: clients time and count
// tokens by chunks. Its text_offset counts the echoed prompt before the choice's text.
std::string completion_event(const ResponseShape& shape, const ChoiceDelta& d) {
  if (d.delta.text.empty() && !d.delta.finish_reason && d.delta.tokens.empty()) return {};
  return sse_event(dump_json(completion_chunk(
      shape.meta, d.index, d.delta, d.text_offset + static_cast<int64_t>(echo_text(shape, d.index).size()))));
}

// A completions choice's echoed prompt, sent just before its first delta: by then the prompt's
// scores (with logprobs) have arrived, on the first event of its sample 0, which starts before
// the prompt's other samples.
std::string echo_event(const Generation& g, const ResponseShape& shape, int64_t choice) {
  ChoiceOutput echo;
  echo.text = echo_text(shape, choice);
  if (shape.meta.logprobs) echo.prompt_tokens = g.prompt_logprobs(choice / shape.num_samples);
  if (echo.text.empty() && echo.prompt_tokens.empty()) return {};
  return sse_event(dump_json(completion_chunk(shape.meta, choice, echo, 0)));
}

// vLLM's "prompt_logprobs" fields (shape.meta.prompt_logprobs set): per choice in completions,
// once for the response's single prompt in chat.
void add_prompt_logprobs(const Generation& g, const ResponseShape& shape, nlohmann::json& body) {
  const int32_t num_top = *shape.meta.prompt_logprobs;
  if (shape.chat) {
    body["prompt_logprobs"] = prompt_logprobs_json(g.prompt_logprobs(0), num_top, shape.meta.tokenizer);
    return;
  }
  for (size_t i = 0; i < body["choices"].size(); ++i)
    body["choices"][i]["prompt_logprobs"] =
        prompt_logprobs_json(g.prompt_logprobs(i / shape.num_samples), num_top, shape.meta.tokenizer);
}

asio::awaitable<void> respond_once(Generation& g, HttpExchange& exchange, const ResponseShape& shape) {
  while (!g.done())
    if (!co_await g.next(exchange)) co_return;
  if (g.error()) co_return co_await exchange.respond_error(generation_error(g));
  std::vector<ChoiceOutput> choices = g.choices();
  for (size_t i = 0; i < choices.size() && !shape.echo.empty(); ++i) {
    choices[i].text = shape.echo[i / shape.num_samples] + choices[i].text;
    if (shape.meta.logprobs) choices[i].prompt_tokens = g.prompt_logprobs(i / shape.num_samples);
  }
  nlohmann::json body;
  if (shape.chat) {
    std::vector<ChatMessage> messages;
    for (const ChoiceOutput& c : choices) messages.push_back(parse_chat_output(shape.chat_output, c.text));
    body = chat_response(shape.meta, choices, messages, g.usage());
  } else {
    body = completion_response(shape.meta, choices, g.usage());
  }
  if (shape.meta.prompt_logprobs) add_prompt_logprobs(g, shape, body);
  co_await exchange.respond_json(200, body);
}

asio::awaitable<void> respond_streaming(Generation& g, HttpExchange& exchange, const ResponseShape& shape) {
  std::vector<ChatOutputParser> parsers(g.choices().size(), ChatOutputParser(shape.chat_output));
  bool started = false;
  std::vector<bool> echoed(shape.echo.empty() ? 0 : g.choices().size(), false);
  while (!g.done()) {
    std::optional<std::vector<ChoiceDelta>> deltas = co_await g.next(exchange);
    if (!deltas) co_return;
    std::string text;
    if (!started) {
      if (g.error()) co_return co_await exchange.respond_error(generation_error(g));  // nothing sent yet
      started = true;
      if (!co_await exchange.start_events()) co_return;
      text = opening_events(shape, g.choices().size());
    }
    for (const ChoiceDelta& d : *deltas) {
      if (!echoed.empty() && !echoed[d.index]) {
        echoed[d.index] = true;
        text += echo_event(g, shape, d.index);
      }
      text += shape.chat ? chat_event(shape, d, parsers[d.index]) : completion_event(shape, d);
    }
    if (g.error()) {
      // Mid-stream the status is already sent: the error travels as an event, as vLLM sends it.
      text += sse_event(dump_json(generation_error(g).body()));
      g.cancel();
    }
    if (!co_await exchange.send_events(text)) co_return;
  }
  std::string tail;
  if (shape.include_usage) tail += sse_event(dump_json(usage_chunk(shape.meta, shape.chat, g.usage())));
  tail += sse_event("[DONE]");
  if (co_await exchange.send_events(tail)) co_await exchange.end_events();
}

}  // namespace

ApiError generation_error(const Generation& g) {
  if (g.error_rejected()) return ApiError(400, "invalid_request_error", "", "", *g.error());
  return ApiError(500, "internal_server_error", "", "", *g.error());
}

SamplingParams resolve_sampling(const ServerState& state, const GenerationOptions& options,
                                int64_t default_max_tokens) {
  SamplingParams sampling = options.sampling;
  sampling.max_tokens = options.max_tokens.value_or(default_max_tokens);
  sampling.logprobs = options.logprobs;
  if (sampling.min_tokens > sampling.max_tokens)
    throw_invalid("min_tokens", "'min_tokens' ({}) must not exceed max_tokens ({})", sampling.min_tokens,
                  sampling.max_tokens);
  const int64_t vocab = state.engine().vocab_size();
  for (const auto& [token, bias] : sampling.logit_bias)
    if (token >= vocab)
      throw_invalid("logit_bias", "logit_bias token {} is outside the vocabulary [0, {})", token, vocab);
  if (options.constraint) sampling.grammar = state.compile(*options.constraint);
  return sampling;
}

ResponseMeta response_meta(const ServerState& state, const GenerationOptions& options, const char* id_prefix) {
  ResponseMeta meta;
  meta.id = make_response_id(id_prefix);
  meta.created = unix_time_now();
  meta.model = state.model_name();
  meta.tokenizer = state.tokenizer();
  meta.logprobs = options.logprobs;
  meta.top_logprobs = options.sampling.top_logprobs;
  meta.prompt_logprobs = options.sampling.prompt_logprobs;
  meta.usage_in_chunks = options.stream && options.include_usage;
  return meta;
}

asio::awaitable<void> respond_with_generation(Generation& generation, HttpExchange& exchange,
                                              const ResponseShape& shape) {
  if (shape.stream) co_await respond_streaming(generation, exchange, shape);
  else co_await respond_once(generation, exchange, shape);
}

}  // namespace brisk::server
