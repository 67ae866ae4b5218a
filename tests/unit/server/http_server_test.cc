// HttpServer run inside another program (`brisk bench serve`): it answers from its own thread,
// and stop() ends run(), also when called before run().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "server/http_server.h"

namespace brisk::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

HttpHandlers plain_ok() {
  HttpHandlers handlers;
  handlers.handle = [](HttpExchange& exchange) -> asio::awaitable<void> {
    co_await exchange.respond(200, "text/plain", "ok");
  };
  handlers.on_response = [](std::string_view, int) {};
  handlers.cancel_all = [] {};
  return handlers;
}

HttpServerOptions loopback() {
  HttpServerOptions options;
  options.port = 0;
  return options;
}

// Runs the server on a thread; stop() must end run() within a few seconds.
void expect_stop_ends_run(HttpServer& server, const std::function<void()>& while_running) {
  std::atomic<bool> returned{false};
  std::thread thread([&] {
    server.run(plain_ok());
    returned = true;
  });
  while_running();
  server.stop();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!returned && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!returned) {
    thread.detach();
    FAIL() << "run() did not return after stop()";
  }
  thread.join();
}

std::string get(uint16_t port, const std::string& path) {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  asio::write(socket, asio::buffer("GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"));
  std::string response;
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(response), ec);  // to the end of the stream
  return response;
}

TEST(HttpServer, AnswersUntilStopped) {
  HttpServer server(loopback());
  expect_stop_ends_run(server, [&] {
    const std::string response = get(server.port(), "/anything");
    EXPECT_TRUE(response.starts_with("HTTP/1.1 200")) << response;
    EXPECT_TRUE(response.ends_with("ok")) << response;
  });
}

TEST(HttpServer, StopBeforeRun) {
  HttpServer server(loopback());
  server.stop();
  expect_stop_ends_run(server, [] {});
}

}  // namespace
}  // namespace brisk::server
