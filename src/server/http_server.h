// The HTTP/1.1 server under `brisk serve`: Boost.Beast on Asio with C++20 coroutines. A few
// threads run every connection (each on its own strand), so open streams cost memory, not
// threads. The server owns transport concerns: keep-alive, the body size limit (413), API-key
// authentication of /v1 routes (401), and graceful shutdown on SIGINT/SIGTERM: stop accepting,
// close idle connections, let in-flight requests finish for a grace period, then ask the
// application to cancel them, and return once every connection is closed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>

#include "server/http_exchange.h"

namespace brisk::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;          // 0: any free port (printed at start-up)
  std::string api_key;           // non-empty: /v1 routes need "Authorization: Bearer <key>"
  uint64_t max_body_bytes = 32ull << 20;
  int num_threads = 2;
  double shutdown_grace_seconds = 10.0;  // in-flight requests may finish this long after a signal
  // CORS: origins whose browsers may call the API ("*": any); empty: no CORS headers, and OPTIONS
  // preflights get 405 like any other unknown method.
  std::vector<std::string> allowed_origins;
};

struct HttpHandlers {
  // Answers one request (must respond, or start and end an event stream).
  std::function<boost::asio::awaitable<void>(HttpExchange&)> handle;
  // Called after every response with the route and status (metrics).
  std::function<void(std::string_view path, int status)> on_response;
  // The grace period ended with requests still running: cancel them (they then end quickly).
  std::function<void()> cancel_all;
};

class HttpServer {
 public:
  // Binds at once (before a long model load); throws brisk::Error naming host:port on failure.
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();

  uint16_t port() const { return port_; }
  // Serves until SIGINT, SIGTERM or stop(), then shuts down gracefully and returns.
  void run(HttpHandlers handlers);
  // Starts the graceful shutdown a signal starts (a server run inside another program, such as
  // `brisk bench serve`'s); callable from any thread, before or during run().
  void stop();

 private:
  struct Connection;
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(std::shared_ptr<Connection> connection);
  // One request on the connection; false when the connection must close.
  boost::asio::awaitable<bool> serve_one(Connection& connection);
  boost::asio::awaitable<void> shutdown_on_signal();
  // During the shutdown's grace period: a second SIGINT / SIGTERM ends the process at once.
  boost::asio::awaitable<void> exit_on_second_signal();
  boost::asio::awaitable<void> shut_down();
  // Waits up to `seconds` for every connection to close; returns whether they all did.
  boost::asio::awaitable<bool> drain(double seconds);
  void for_each_connection(const std::function<void(Connection&)>& fn);
  bool authorized(const HttpRequest& request) const;
  // The Access-Control-Allow-Origin value for the request's Origin ("" when CORS does not apply).
  std::string cors_origin(const HttpRequest& request) const;

  HttpServerOptions options_;
  HttpHandlers handlers_;
  boost::asio::io_context io_;
  boost::asio::strand<boost::asio::io_context::executor_type> control_;  // acceptor and signals
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::signal_set signals_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex connections_mutex_;
  std::set<std::shared_ptr<Connection>> connections_;
};

}  // namespace brisk::server
