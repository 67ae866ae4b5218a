#include "server/http_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"

namespace brisk::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr auto kIdleTimeout = std::chrono::seconds(300);  // a keep-alive connection with no request

// The last resort before a process-wide crash: a handler that threw past its own error handling.
ApiError internal_error(const std::string& what) {
  return ApiError(500, "internal_server_error", "", "", fmt::format("internal error: {}", what));
}

}  // namespace

struct HttpServer::Connection {
  explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;  // may hold the start of a pipelined next request
  bool idle = true;  // waiting for a request (strand only)
};

HttpServer::HttpServer(HttpServerOptions options)
    : options_(std::move(options)), control_(asio::make_strand(io_)),
      acceptor_(control_), signals_(control_) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(options_.host, ec);
  BRISK_CHECK(!ec, "--host: '{}' is not an IP address ({})", options_.host, ec.message());
  tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw_error(ErrorCode::kInvalidArgument, "cannot listen on {}:{}: {}", options_.host, options_.port, ec.message());
  port_ = acceptor_.local_endpoint().port();
}

HttpServer::~HttpServer() = default;

void HttpServer::run(HttpHandlers handlers) {
  handlers_ = std::move(handlers);
  // Only now: a signal during the model load still ends the process the usual way.
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  asio::co_spawn(control_, accept_loop(), asio::detached);
  asio::co_spawn(control_, shutdown_on_signal(), asio::detached);
  std::vector<std::thread> threads;
  for (int i = 1; i < options_.num_threads; ++i) threads.emplace_back([this] { io_.run(); });
  io_.run();
  for (auto& t : threads) t.join();
}

// Failed accepts (out of file descriptors, say) are retried after a pause that doubles up to
// kAcceptMaxPause, and logged at most once per kAcceptLogInterval with the count since: a
// connection waiting in the backlog would otherwise fail the accept again at once, spinning a core
// and flooding the log, until descriptors free up.
namespace {
constexpr auto kAcceptFirstPause = std::chrono::milliseconds(10);
constexpr auto kAcceptMaxPause = std::chrono::milliseconds(500);
constexpr auto kAcceptLogInterval = std::chrono::seconds(5);
}  // namespace

asio::awaitable<void> HttpServer::accept_loop() {
  asio::steady_timer pause(control_);
  auto wait = kAcceptFirstPause;
  int failures = 0;  // since the last log line
  auto last_log = std::chrono::steady_clock::time_point{};
  while (!stopping_) {
    auto [ec, socket] = co_await acceptor_.async_accept(asio::make_strand(io_), use_tuple);
    if (ec) {
      if (stopping_ || ec == asio::error::operation_aborted) break;
      ++failures;
      const auto now = std::chrono::steady_clock::now();
      if (now - last_log >= kAcceptLogInterval) {
        spdlog::warn("accept failed {} time(s): {}; retrying every {} ms at most", failures, ec.message(),
                     kAcceptMaxPause.count());
        failures = 0;
        last_log = now;
      }
      pause.expires_after(wait);
      co_await pause.async_wait(use_tuple);
      wait = std::min(2 * wait, std::chrono::duration_cast<std::chrono::milliseconds>(kAcceptMaxPause));
      continue;
    }
    wait = kAcceptFirstPause;
    socket.set_option(tcp::no_delay(true), ec);
    auto connection = std::make_shared<Connection>(std::move(socket));
    {
      std::lock_guard<std::mutex> lock(connections_mutex_);
      connections_.insert(connection);
    }
    asio::co_spawn(connection->stream.get_executor(), serve(connection), asio::detached);
  }
}

asio::awaitable<void> HttpServer::serve(std::shared_ptr<Connection> connection) {
  try {
    while (!stopping_ && co_await serve_one(*connection)) {
    }
  } catch (const std::exception& e) {
    spdlog::error("connection failed: {}", e.what());
  }
  boost::system::error_code ec;
  connection->stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  connection->stream.close();
  std::lock_guard<std::mutex> lock(connections_mutex_);
  connections_.erase(connection);
}

bool HttpServer::authorized(const HttpRequest& request) const {
  std::string_view target(request.target().data(), request.target().size());
  if (options_.api_key.empty() || !target.starts_with("/v1")) return true;
  auto matches = [](std::string_view given, const std::string& expected) {
    if (given.size() != expected.size()) return false;
    unsigned char diff = 0;  // constant time: no early exit on the first wrong byte
    for (size_t i = 0; i < expected.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
    return diff == 0;
  };
  const auto bearer = request[http::field::authorization];
  // Anthropic's clients send the key as x-api-key.
  const auto x_api_key = request["x-api-key"];
  return matches({bearer.data(), bearer.size()}, "Bearer " + options_.api_key) ||
         matches({x_api_key.data(), x_api_key.size()}, options_.api_key);
}

std::string HttpServer::cors_origin(const HttpRequest& request) const {
  const std::string_view origin(request[http::field::origin].data(), request[http::field::origin].size());
  if (origin.empty()) return "";
  for (const std::string& allowed : options_.allowed_origins) {
    if (allowed == "*") return "*";
    if (allowed == origin) return std::string(origin);
  }
  return "";
}

asio::awaitable<bool> HttpServer::serve_one(Connection& connection) {
  http::request_parser<http::string_body> parser;
  parser.body_limit(options_.max_body_bytes);
  connection.idle = true;
  connection.stream.expires_after(kIdleTimeout);
  auto [ec, n] = co_await http::async_read_header(connection.stream, connection.buffer, parser, use_tuple);
  connection.idle = false;
  if (!ec && parser.get()[http::field::expect] == "100-continue") {
    http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
    std::tie(ec, n) = co_await http::async_write(connection.stream, go_on, use_tuple);
  }
  if (!ec) std::tie(ec, n) = co_await http::async_read(connection.stream, connection.buffer, parser, use_tuple);
  connection.stream.expires_never();
  if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
      ec == asio::error::eof || ec == asio::error::connection_reset)
    co_return false;
  HttpRequest request = parser.release();
  HttpExchange exchange(connection.stream, request);
  const std::string cors = ec ? "" : cors_origin(request);
  exchange.set_cors_origin(cors);
  if (!ec && !cors.empty() && request.method() == http::verb::options) {
    // A browser's preflight: no API key (browsers send none with it), any route.
    co_await exchange.respond_preflight();
  } else if (ec == http::error::body_limit) {
    co_await exchange.respond_error(ApiError(413, "invalid_request_error", "", "request_too_large",
                                             fmt::format("the request body is larger than the limit of {} bytes",
                                                         options_.max_body_bytes)));
  } else if (ec) {
    co_await exchange.respond_error(ApiError(400, "invalid_request_error", "", "", fmt::format(
                                                 "malformed HTTP request: {}", ec.message())));
  } else if (!authorized(request)) {
    co_await exchange.respond_error(ApiError(
        401, "authentication_error", "", "invalid_api_key",
        "missing or wrong API key: send 'Authorization: Bearer <key>' (or 'x-api-key: <key>')"));
  } else {
    std::string what;
    try {
      co_await handlers_.handle(exchange);
    } catch (const std::exception& e) {
      what = e.what();
    }
    if (!what.empty()) {
      spdlog::error("{} {}: {}", std::string(request.method_string()), std::string(exchange.path()), what);
      if (exchange.status() == 0) co_await exchange.respond_error(internal_error(what));
      else co_return false;  // mid-stream: the body cannot be completed
    }
  }
  handlers_.on_response(exchange.path(), exchange.status());
  co_return !ec && exchange.keep_alive() && !stopping_;
}

void HttpServer::for_each_connection(const std::function<void(Connection&)>& fn) {
  std::lock_guard<std::mutex> lock(connections_mutex_);
  for (const auto& c : connections_) asio::post(c->stream.get_executor(), [c, fn] { fn(*c); });
}

asio::awaitable<bool> HttpServer::drain(double seconds) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(connections_mutex_);
      if (connections_.empty()) co_return true;
    }
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(use_tuple);
  }
  std::lock_guard<std::mutex> lock(connections_mutex_);
  co_return connections_.empty();
}

void HttpServer::stop() { asio::co_spawn(control_, shut_down(), asio::detached); }

asio::awaitable<void> HttpServer::shutdown_on_signal() {
  if (stopping_) co_return;  // stop() came first (both run on the control strand)
  auto [ec, signal] = co_await signals_.async_wait(use_tuple);
  if (ec) co_return;
  fmt::print(stderr, "brisk serve: signal {}: shutting down (in-flight requests get {} s; a second signal exits now)\n",
             signal, options_.shutdown_grace_seconds);
  asio::co_spawn(control_, exit_on_second_signal(), asio::detached);
  co_await shut_down();
}

asio::awaitable<void> HttpServer::exit_on_second_signal() {
  auto [ec, signal] = co_await signals_.async_wait(use_tuple);
  if (ec) co_return;  // the shutdown finished (it cancels the wait)
  fmt::print(stderr, "brisk serve: second signal {}: exiting now\n", signal);
  std::fflush(stderr);
  std::_Exit(128 + signal);
}

asio::awaitable<void> HttpServer::shut_down() {
  if (stopping_.exchange(true)) co_return;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  // Idle keep-alive connections close now; busy ones after their response.
  for_each_connection([](Connection& c) {
    if (c.idle) c.stream.cancel();
  });
  if (!co_await drain(options_.shutdown_grace_seconds)) {
    spdlog::warn("grace period over: cancelling the requests still running");
    handlers_.cancel_all();
    if (!co_await drain(5.0)) {
      for_each_connection([](Connection& c) {
        boost::system::error_code e;
        c.stream.socket().close(e);
      });
    }
  }
  signals_.cancel(ignored);
}

}  // namespace brisk::server
