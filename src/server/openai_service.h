// The OpenAI-compatible API on one engine: routes requests to their handlers, turns ApiError
// into OpenAI error bodies, and serves the small endpoints (/v1/models, /health, /metrics,
// /version). The HttpServer calls it; it knows nothing about sockets.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "server/http_exchange.h"
#include "server/http_server.h"
#include "server/server_state.h"

namespace brisk::server {

class OpenAiService {
 public:
  OpenAiService(Engine& engine, std::string model_name, const std::filesystem::path& model_dir,
                const ChatParsing& parsing = {});

  boost::asio::awaitable<void> handle(HttpExchange& exchange);
  // The HttpServer's view of this service.
  HttpHandlers handlers();
  ServerState& state() { return state_; }

 private:
  boost::asio::awaitable<void> route(HttpExchange& exchange);
  nlohmann::json models() const;

  ServerState state_;
  std::string model_dir_;
  int64_t created_;
};

}  // namespace brisk::server
