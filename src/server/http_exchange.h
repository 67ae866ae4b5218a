// One HTTP request and its response, as handlers see it: a JSON or text response, or a stream of
// server-sent events. Runs on the connection's strand; every method is a coroutine step.
// A client that goes away is noticed when a write fails or, while waiting for engine events,
// when its socket reports end-of-file; handlers then cancel their engine requests.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/event_pump.h"

namespace brisk::server {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;

class HttpExchange {
 public:
  HttpExchange(boost::beast::tcp_stream& stream, const HttpRequest& request) : stream_(stream), request_(request) {}

  const HttpRequest& request() const { return request_; }
  // The target without its query string.
  std::string_view path() const;

  // A HEAD request gets the headers (Content-Length included) without the body.
  boost::asio::awaitable<void> respond(int status, std::string_view content_type, std::string body);
  boost::asio::awaitable<void> respond_json(int status, const nlohmann::json& body);
  boost::asio::awaitable<void> respond_error(const ApiError& error);

  // The methods a 405 names in its Allow header (set before responding with it).
  void set_allow(std::string_view methods) { allow_ = methods; }
  // CORS: the Access-Control-Allow-Origin every response carries ("": none).
  void set_cors_origin(std::string origin) { cors_origin_ = std::move(origin); }
  // The 204 answer to a CORS preflight (OPTIONS): the methods and request headers allowed.
  boost::asio::awaitable<void> respond_preflight();

  // Server-sent events: the 200 header, then events, then the end of the chunked body (HTTP/1.0
  // clients, which cannot read chunks, get a body that ends when the connection closes). Each
  // returns false when the client has gone away (nothing more can be sent).
  boost::asio::awaitable<bool> start_events();
  boost::asio::awaitable<bool> send_events(std::string_view text);
  boost::asio::awaitable<void> end_events();

  // Waits until `inbox` signals new events (true) or the client closes its connection (false).
  boost::asio::awaitable<bool> wait(EventInbox& inbox);

  int status() const { return status_; }  // 0 until a response started
  bool keep_alive() const { return !client_gone_ && !close_delimited_ && request_.keep_alive(); }
  bool client_gone() const { return client_gone_; }

 private:
  // Writes with a deadline, so a client that stops reading cannot hold a stream forever.
  template <typename Write>
  boost::asio::awaitable<bool> timed_write(Write write);
  // The socket is readable: end-of-file or an error means the peer closed it.
  bool peer_closed();

  boost::beast::tcp_stream& stream_;
  const HttpRequest& request_;
  int status_ = 0;
  bool client_gone_ = false;
  bool watch_socket_ = true;  // off once pipelined bytes make the socket readable
  bool close_delimited_ = false;  // an event stream to an HTTP/1.0 client: the body ends at close
  std::string_view allow_;
  std::string cors_origin_;
  // Server and CORS headers shared by every response.
  template <typename Response>
  void set_common_headers(Response& response) const;
};

}  // namespace brisk::server
