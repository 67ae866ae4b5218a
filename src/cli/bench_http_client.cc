#include "cli/bench_http_client.h"

#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cmath>
#include <exception>
#include <optional>
#include <random>
#include <string_view>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace brisk::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Clipped to a year: --request-timeout inf must not overflow the clock.
Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(seconds, 3.2e7)));
}

// Thousands of streams need as many sockets (twice that with the server in this process): the
// soft limit on open files (often 1024) is raised to the hard one.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Server-sent events: the data of each complete event, from bytes that arrive in any pieces.
class SseParser {
 public:
  void feed(std::string_view bytes, std::vector<std::string>& payloads) {
    for (char c : bytes)
      if (c != '\r') pending_ += c;
    for (size_t end; (end = pending_.find("\n\n")) != std::string::npos; pending_.erase(0, end + 2)) {
      std::string_view event(pending_.data(), end);
      std::string data;
      for (size_t pos = 0; pos <= event.size();) {
        const size_t eol = std::min(event.find('\n', pos), event.size());
        std::string_view line = event.substr(pos, eol - pos);
        pos = eol + 1;
        if (!line.starts_with("data:")) continue;
        line.remove_prefix(line.starts_with("data: ") ? 6 : 5);
        if (!data.empty()) data += '\n';
        data += line;
      }
      if (!data.empty()) payloads.push_back(std::move(data));
    }
  }

 private:
  std::string pending_;
};

// What one completion stream delivered.
struct StreamState {
  std::vector<Clock::time_point> chunk_times;  // chunks with a choice
  bool last_chunk_finishes = false;            // the last of them carried a finish_reason
  std::optional<int64_t> usage_tokens;         // completion_tokens of the usage chunk
  bool done = false;                           // [DONE] arrived
  std::string error;                           // an error event
};

void on_event(const std::string& payload, Clock::time_point now, StreamState& s) {
  if (payload == "[DONE]") {
    s.done = true;
    return;
  }
  nlohmann::json j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    s.error = fmt::format("the server sent an event that is not JSON: {}", payload.substr(0, 200));
    return;
  }
  if (j.contains("error")) s.error = fmt::format("error event: {}", j["error"].dump().substr(0, 300));
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const nlohmann::json& choice = j["choices"][0];
    s.chunk_times.push_back(now);
    s.last_chunk_finishes = choice.contains("finish_reason") && !choice["finish_reason"].is_null();
  }
  if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens"))
    s.usage_tokens = j["usage"]["completion_tokens"].get<int64_t>();
}

RequestRecord finish_record(StreamState& s, Clock::time_point sent, int64_t prompt_tokens) {
  RequestRecord r;
  r.prompt_tokens = prompt_tokens;
  if (!s.error.empty()) r.error = s.error;
  else if (!s.done) r.error = "the stream ended without data: [DONE]";
  if (!r.error.empty()) return r;
  std::vector<Clock::time_point>& times = s.chunk_times;
  r.output_tokens = s.usage_tokens.value_or(static_cast<int64_t>(times.size()));
  // brisk's server ends a stream with a chunk of its own for the finish reason (vLLM puts it on
  // the last token's chunk): that chunk is no token's arrival.
  if (static_cast<int64_t>(times.size()) > r.output_tokens && s.last_chunk_finishes) times.pop_back();
  if (times.empty() || r.output_tokens == 0) {
    r.error = "the stream held no tokens";
    return r;
  }
  r.ok = true;
  r.ttft_s = seconds_between(sent, times.front());
  r.e2e_s = seconds_between(sent, times.back());
  for (size_t i = 1; i < times.size(); ++i) r.itl_s.push_back(seconds_between(times[i - 1], times[i]));
  return r;
}

// "HTTP 400: <the message of an OpenAI or vLLM error body>".
std::string http_error(unsigned status, const std::string& body) {
  std::string message = body.substr(0, 300);
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* field = nullptr;
  if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message"))
    field = &j["error"]["message"];
  else if (j.is_object() && j.contains("message"))
    field = &j["message"];
  if (field != nullptr) message = field->is_string() ? field->get<std::string>() : field->dump();
  return fmt::format("HTTP {}: {}", status, message);
}

template <typename T>
T run_to_completion(asio::io_context& io, asio::awaitable<T> task) {
  std::optional<T> result;
  std::exception_ptr error;
  asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T value) {
    error = e;
    if (!e) result = std::move(value);
  });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

}  // namespace

std::string ServerAddress::url() const { return fmt::format("http://{}:{}{}", host, port, path_prefix); }

ServerAddress parse_base_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  BRISK_CHECK(url.starts_with(kScheme), "--base-url '{}' must look like http://HOST:PORT (https is not supported)",
              url);
  std::string_view rest = std::string_view(url).substr(kScheme.size());
  ServerAddress a;
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) a.path_prefix = std::string(rest.substr(slash));
  while (!a.path_prefix.empty() && a.path_prefix.back() == '/') a.path_prefix.pop_back();
  const size_t colon = authority.rfind(':');
  a.host = std::string(authority.substr(0, colon));
  a.port = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
  BRISK_CHECK(!a.host.empty() && !a.port.empty() && a.port.find_first_not_of("0123456789") == std::string::npos,
              "--base-url '{}' must look like http://HOST:PORT", url);
  return a;
}

struct BenchHttpClient::Impl {
  Impl(ServerAddress a, LoadOptions o) : address(std::move(a)), options(std::move(o)) {}

  ServerAddress address;
  LoadOptions options;
  asio::io_context io;
  tcp::resolver::results_type endpoints;

  http::request<http::string_body> make_request(http::verb verb, const std::string& path, std::string body) const {
    http::request<http::string_body> request{verb, address.path_prefix + path, 11};
    request.set(http::field::host, address.host + ":" + address.port);
    request.set(http::field::user_agent, "brisk-bench");
    if (!options.api_key.empty()) request.set(http::field::authorization, "Bearer " + options.api_key);
    if (verb == http::verb::post) request.set(http::field::content_type, "application/json");
    request.keep_alive(false);
    request.body() = std::move(body);
    request.prepare_payload();
    return request;
  }

  std::string describe(const beast::error_code& ec, const std::string& doing) const {
    if (ec == beast::error::timeout)
      return fmt::format("{} {}: no answer for {} s (--request-timeout)", doing, address.url(),
                         options.request_timeout_s);
    return fmt::format("{} {}: {}", doing, address.url(), ec.message());
  }

  // An error message, or nothing once connected.
  asio::awaitable<std::optional<std::string>> connect(beast::tcp_stream& stream) {
    stream.expires_after(to_duration(options.request_timeout_s));
    auto [ec, endpoint] = co_await stream.async_connect(endpoints, use_tuple);
    if (ec) co_return describe(ec, "cannot connect to");
    co_return std::nullopt;
  }

  asio::awaitable<std::string> fetch_model_name();
  asio::awaitable<RequestRecord> send(std::string body, int64_t prompt_tokens);
  asio::awaitable<LoadResult> dispatch(const std::vector<BenchRequest>& requests, const std::string& model);
};

asio::awaitable<std::string> BenchHttpClient::Impl::fetch_model_name() {
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  const std::string url = address.url() + "/v1/models";
  if (auto error = co_await connect(stream)) throw_error(ErrorCode::kNotFound, "{} (GET /v1/models)", *error);
  auto [ec, n] = co_await http::async_write(stream, make_request(http::verb::get, "/v1/models", ""), use_tuple);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  if (!ec) std::tie(ec, n) = co_await http::async_read(stream, buffer, response, use_tuple);
  if (ec) throw_error(ErrorCode::kNotFound, "{} (GET /v1/models)", describe(ec, "no model list from"));
  if (response.result_int() != 200)
    throw_error(ErrorCode::kInvalidArgument, "GET {}: {}", url, http_error(response.result_int(), response.body()));
  nlohmann::json j = nlohmann::json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].is_object() || !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
    throw_error(ErrorCode::kCorruptData, "GET {}: expected a model list {{\"data\": [{{\"id\": ...}}]}}, got {}", url,
                response.body().substr(0, 300));
  co_return j["data"][0]["id"].get<std::string>();
}

asio::awaitable<RequestRecord> BenchHttpClient::Impl::send(std::string body, int64_t prompt_tokens) {
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  const Clock::time_point sent = Clock::now();
  RequestRecord failed;
  failed.prompt_tokens = prompt_tokens;
  if (auto error = co_await connect(stream)) {
    failed.error = *error;
    co_return failed;
  }
  const auto timeout = to_duration(options.request_timeout_s);
  stream.expires_after(timeout);
  auto [ec, n] = co_await http::async_write(stream, make_request(http::verb::post, "/v1/completions", std::move(body)),
                                            use_tuple);
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  if (!ec) std::tie(ec, n) = co_await http::async_read_header(stream, buffer, parser, use_tuple);
  const unsigned status = ec ? 0 : parser.get().result_int();
  std::string error_body;
  StreamState state;
  SseParser sse;
  std::array<char, 16384> chunk;
  std::vector<std::string> events;
  while (!ec && !parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    stream.expires_after(timeout);
    std::tie(ec, n) = co_await http::async_read_some(stream, buffer, parser, use_tuple);
    if (ec == http::error::need_buffer) ec = {};
    const Clock::time_point now = Clock::now();
    const std::string_view got(chunk.data(), chunk.size() - parser.get().body().size);
    if (status != 200) {
      error_body.append(got);
      continue;
    }
    events.clear();
    sse.feed(got, events);
    for (const std::string& event : events) on_event(event, now, state);
  }
  if (ec) failed.error = describe(ec, "streaming from");
  else if (status != 200) failed.error = http_error(status, error_body);
  if (!failed.error.empty()) co_return failed;
  co_return finish_record(state, sent, prompt_tokens);
}

asio::awaitable<LoadResult> BenchHttpClient::Impl::dispatch(const std::vector<BenchRequest>& requests,
                                                            const std::string& model) {
  // Bodies are serialized before the clock starts.
  std::vector<std::string> bodies;
  for (const BenchRequest& r : requests) {
    nlohmann::json body = {{"model", model}, {"prompt", r.prompt_ids}, {"max_tokens", r.output_len},
                           {"temperature", 0}, {"ignore_eos", true}, {"stream", true},
                           {"stream_options", {{"include_usage", true}}}};
    bodies.push_back(body.dump());
  }
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer arrival(executor), request_done(executor);
  std::mt19937_64 rng(options.seed);
  const bool poisson = std::isfinite(options.request_rate);
  std::exponential_distribution<double> gap(poisson ? options.request_rate : 1.0);
  LoadResult result;
  result.records.resize(requests.size());
  size_t num_in_flight = 0, num_done = 0;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_done = start;
  double arrival_s = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (poisson && i > 0) {
      arrival_s += gap(rng);
      arrival.expires_at(start + to_duration(arrival_s));
      co_await arrival.async_wait(use_tuple);
    }
    while (options.max_concurrency > 0 && num_in_flight >= static_cast<size_t>(options.max_concurrency)) {
      request_done.expires_at(Clock::time_point::max());
      co_await request_done.async_wait(use_tuple);  // woken by cancel() when a request ends
    }
    num_in_flight++;
    const auto prompt_tokens = static_cast<int64_t>(requests[i].prompt_ids.size());
    asio::co_spawn(executor, send(std::move(bodies[i]), prompt_tokens),
                   [&, i, prompt_tokens](std::exception_ptr error, RequestRecord record) {
                     if (error) {
                       record = {};
                       record.prompt_tokens = prompt_tokens;
                       try {
                         std::rethrow_exception(error);
                       } catch (const std::exception& e) {
                         record.error = e.what();
                       }
                     }
                     result.records[i] = std::move(record);
                     num_in_flight--;
                     num_done++;
                     last_done = Clock::now();
                     request_done.cancel();
                   });
  }
  while (num_done < requests.size()) {
    request_done.expires_at(Clock::time_point::max());
    co_await request_done.async_wait(use_tuple);
  }
  result.seconds = seconds_between(start, last_done);
  co_return result;
}

BenchHttpClient::BenchHttpClient(ServerAddress address, LoadOptions options)
    : impl_(std::make_unique<Impl>(std::move(address), std::move(options))) {
  boost::system::error_code ec;
  impl_->endpoints = tcp::resolver(impl_->io).resolve(impl_->address.host, impl_->address.port, ec);
  if (ec) throw_error(ErrorCode::kNotFound, "--base-url {}: cannot resolve '{}': {}", impl_->address.url(),
                      impl_->address.host, ec.message());
}

BenchHttpClient::~BenchHttpClient() = default;

std::string BenchHttpClient::model_name() { return run_to_completion(impl_->io, impl_->fetch_model_name()); }

LoadResult BenchHttpClient::run(const std::vector<BenchRequest>& requests, const std::string& model) {
  raise_open_file_limit();
  return run_to_completion(impl_->io, impl_->dispatch(requests, model));
}

}  // namespace brisk::cli
