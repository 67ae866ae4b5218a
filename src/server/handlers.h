// The endpoint handlers of the OpenAI-compatible API. Each parses and validates its request
// (ApiError on bad input, before anything reaches the engine), then responds.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "server/http_exchange.h"
#include "server/server_state.h"

namespace brisk::server {

boost::asio::awaitable<void> handle_completions(ServerState& state, HttpExchange& exchange);
boost::asio::awaitable<void> handle_chat_completions(ServerState& state, HttpExchange& exchange);
// Anthropic's Messages API; its errors are Anthropic-shaped.
boost::asio::awaitable<void> handle_messages(ServerState& state, HttpExchange& exchange);
boost::asio::awaitable<void> handle_count_tokens(ServerState& state, HttpExchange& exchange);
boost::asio::awaitable<void> handle_responses(ServerState& state, HttpExchange& exchange);
boost::asio::awaitable<void> handle_tokenize(ServerState& state, HttpExchange& exchange);
boost::asio::awaitable<void> handle_detokenize(ServerState& state, HttpExchange& exchange);

}  // namespace brisk::server
