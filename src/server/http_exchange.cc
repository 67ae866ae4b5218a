#include "server/http_exchange.h"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "server/openai_response.h"

namespace brisk::server {
namespace {

namespace asio = boost::asio;
constexpr auto kWriteTimeout = std::chrono::seconds(60);
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

std::string_view HttpExchange::path() const {
  std::string_view target(request_.target().data(), request_.target().size());
  return target.substr(0, target.find('?'));
}

template <typename Write>
asio::awaitable<bool> HttpExchange::timed_write(Write write) {
  if (client_gone_) co_return false;
  stream_.expires_after(kWriteTimeout);
  boost::system::error_code ec = co_await write();
  stream_.expires_never();
  if (ec) client_gone_ = true;
  co_return !ec;
}

template <typename Response>
void HttpExchange::set_common_headers(Response& response) const {
  response.set(http::field::server, "brisk");
  if (cors_origin_.empty()) return;
  response.set(http::field::access_control_allow_origin, cors_origin_);
  if (cors_origin_ != "*") response.set(http::field::vary, "Origin");
}

asio::awaitable<void> HttpExchange::respond_preflight() {
  status_ = 204;
  http::response<http::empty_body> response{http::status::no_content, request_.version()};
  set_common_headers(response);
  response.set(http::field::access_control_allow_methods, "GET, HEAD, POST, OPTIONS");
  const auto asked = request_[http::field::access_control_request_headers];
  response.set(http::field::access_control_allow_headers,
               asked.empty() ? std::string_view("Authorization, Content-Type") : std::string_view(asked.data(), asked.size()));
  response.set(http::field::access_control_max_age, "600");
  response.keep_alive(request_.keep_alive());
  response.prepare_payload();
  co_await timed_write([&]() -> asio::awaitable<boost::system::error_code> {
    auto [ec, n] = co_await http::async_write(stream_, response, use_tuple);
    co_return ec;
  });
}

asio::awaitable<void> HttpExchange::respond(int status, std::string_view content_type, std::string body) {
  status_ = status;
  http::response<http::string_body> response{static_cast<http::status>(status), request_.version()};
  set_common_headers(response);
  response.set(http::field::content_type, content_type);
  response.keep_alive(request_.keep_alive());
  if (!allow_.empty()) response.set(http::field::allow, allow_);
  response.body() = std::move(body);
  response.prepare_payload();
  if (request_.method() == http::verb::head) {  // the headers of the GET response, no body
    http::response_serializer<http::string_body> serializer{response};
    co_await timed_write([&]() -> asio::awaitable<boost::system::error_code> {
      auto [ec, n] = co_await http::async_write_header(stream_, serializer, use_tuple);
      co_return ec;
    });
    co_return;
  }
  co_await timed_write([&]() -> asio::awaitable<boost::system::error_code> {
    auto [ec, n] = co_await http::async_write(stream_, response, use_tuple);
    co_return ec;
  });
}

asio::awaitable<void> HttpExchange::respond_json(int status, const nlohmann::json& body) {
  co_await respond(status, "application/json", dump_json(body));
}

asio::awaitable<void> HttpExchange::respond_error(const ApiError& error) {
  co_await respond_json(error.status(), error.body());
}

asio::awaitable<bool> HttpExchange::start_events() {
  status_ = 200;
  http::response<http::empty_body> response{http::status::ok, request_.version()};
  set_common_headers(response);
  response.set(http::field::content_type, "text/event-stream");
  response.set(http::field::cache_control, "no-cache");
  close_delimited_ = request_.version() < 11;  // HTTP/1.0 has no chunked encoding
  response.keep_alive(request_.keep_alive() && !close_delimited_);
  response.chunked(!close_delimited_);
  http::response_serializer<http::empty_body> serializer{response};
  co_return co_await timed_write([&]() -> asio::awaitable<boost::system::error_code> {
    auto [ec, n] = co_await http::async_write_header(stream_, serializer, use_tuple);
    co_return ec;
  });
}

asio::awaitable<bool> HttpExchange::send_events(std::string_view text) {
  if (text.empty()) co_return !client_gone_;  // a chunk of size 0 would end the body
  co_return co_await timed_write([&]() -> asio::awaitable<boost::system::error_code> {
    const auto bytes = asio::buffer(text.data(), text.size());
    if (close_delimited_) {
      auto [ec, n] = co_await asio::async_write(stream_, bytes, use_tuple);
      co_return ec;
    }
    auto [ec, n] = co_await asio::async_write(stream_, http::make_chunk(bytes), use_tuple);
    co_return ec;
  });
}

asio::awaitable<void> HttpExchange::end_events() {
  if (close_delimited_) co_return;  // the server closes the connection
  co_await timed_write([&]() -> asio::awaitable<boost::system::error_code> {
    auto [ec, n] = co_await asio::async_write(stream_, http::make_chunk_last(), use_tuple);
    co_return ec;
  });
}

bool HttpExchange::peer_closed() {
  char byte;
  ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

asio::awaitable<bool> HttpExchange::wait(EventInbox& inbox) {
  using namespace asio::experimental::awaitable_operators;
  while (!client_gone_) {
    if (!watch_socket_) {
      co_await inbox.signal().async_receive(use_tuple);
      co_return true;
    }
    auto result = co_await (inbox.signal().async_receive(use_tuple) ||
                            stream_.socket().async_wait(asio::ip::tcp::socket::wait_read, use_tuple));
    if (result.index() == 0) co_return true;
    if (peer_closed()) {
      client_gone_ = true;
    } else {
      // Bytes of a pipelined next request: stop watching (they are read after this response).
      watch_socket_ = false;
    }
  }
  co_return false;
}

}  // namespace brisk::server
