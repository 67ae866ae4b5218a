// Turns a running Generation into the HTTP response of completions or chat: one JSON body, or
// server-sent events (chunks as tokens arrive, the usage chunk with include_usage, [DONE]).
// The event stream starts with the first engine event, so a request the engine rejects still
// gets a plain 400 error instead of a stream.
#pragma once

#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "server/generation.h"
#include "server/http_exchange.h"
#include "server/openai_response.h"
#include "server/server_state.h"

namespace brisk::server {

struct ResponseShape {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  int32_t num_samples = 1;
  ResponseMeta meta;
  // Completions with echo: each prompt's text, which its choices start with (with logprobs, also
  // its scored tokens).
  std::vector<std::string> echo;
  ChatOutputOptions chat_output;  // chat: how each choice's text is parsed
};

// The shared first steps of completions and chat: the model name checked, the sampling
// parameters with max_tokens resolved and the output constraint compiled, the response's metadata.
SamplingParams resolve_sampling(const ServerState& state, const GenerationOptions& options,
                                int64_t default_max_tokens);
ResponseMeta response_meta(const ServerState& state, const GenerationOptions& options, const char* id_prefix);

// The generation's engine error as the client sees it: 400 when the engine refused the request,
// 500 when it failed running it.
ApiError generation_error(const Generation& generation);

boost::asio::awaitable<void> respond_with_generation(Generation& generation, HttpExchange& exchange,
                                                     const ResponseShape& shape);

}  // namespace brisk::server
