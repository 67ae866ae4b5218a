#include "server/openai_service.h"

#include <utility>

#include <spdlog/spdlog.h>

#include "server/handlers.h"
#include "server/openai_response.h"

namespace brisk::server {
namespace {

namespace asio = boost::asio;
// Every route and the methods it takes (GET routes answer HEAD too), for 405's Allow header.
constexpr std::pair<const char*, const char*> kRoutes[] = {
    {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"}, {"/v1/responses", "POST"},
    {"/v1/messages", "POST"}, {"/v1/messages/count_tokens", "POST"}, {"/tokenize", "POST"}, {"/detokenize", "POST"},
    {"/v1/models", "GET, HEAD"}, {"/health", "GET, HEAD"},        {"/version", "GET, HEAD"}, {"/metrics", "GET, HEAD"}};

ApiError not_found(std::string_view method, std::string_view path) {
  return ApiError(404, "invalid_request_error", "", "not_found",
                  fmt::format("no route for {} {}; see GET /v1/models, POST /v1/completions, "
                              "POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, POST /tokenize, "
                              "POST /detokenize, GET /health, GET /metrics",
                              method, path));
}

// (Bodies are built outside the coroutines: GCC 12 miscompiles braced lists next to co_await.)
nlohmann::json version_body() { return {{"version", "0.1.0"}}; }

}  // namespace

OpenAiService::OpenAiService(Engine& engine, std::string model_name, const std::filesystem::path& model_dir,
                             const ChatParsing& parsing)
    : state_(engine, std::move(model_name), model_dir, parsing),
      model_dir_(model_dir.string()),
      created_(unix_time_now()) {}

HttpHandlers OpenAiService::handlers() {
  HttpHandlers h;
  h.handle = [this](HttpExchange& exchange) { return handle(exchange); };
  h.on_response = [this](std::string_view path, int status) { state_.metrics().record_response(path, status); };
  h.cancel_all = [this] { state_.cancel_all(); };
  return h;
}

nlohmann::json OpenAiService::models() const {
  nlohmann::json model = {{"id", state_.model_name()}, {"object", "model"}, {"created", created_},
                          {"owned_by", "brisk"}, {"root", model_dir_},
                          {"max_model_len", state_.engine().max_model_len()}};
  return {{"object", "list"}, {"data", nlohmann::json::array({model})}};
}

asio::awaitable<void> OpenAiService::route(HttpExchange& exchange) {
  const std::string_view path = exchange.path();
  const bool get = exchange.request().method() == http::verb::get || exchange.request().method() == http::verb::head;
  const bool post = exchange.request().method() == http::verb::post;
  if (post && path == "/v1/completions") co_return co_await handle_completions(state_, exchange);
  if (post && path == "/v1/chat/completions") co_return co_await handle_chat_completions(state_, exchange);
  if (post && path == "/v1/responses") co_return co_await handle_responses(state_, exchange);
  if (post && path == "/v1/messages") co_return co_await handle_messages(state_, exchange);
  if (post && path == "/v1/messages/count_tokens") co_return co_await handle_count_tokens(state_, exchange);
  if (post && path == "/tokenize") co_return co_await handle_tokenize(state_, exchange);
  if (post && path == "/detokenize") co_return co_await handle_detokenize(state_, exchange);
  if (get && path == "/v1/models") co_return co_await exchange.respond_json(200, models());
  if (get && path == "/health") co_return co_await exchange.respond(200, "text/plain", "");
  if (get && path == "/version") co_return co_await exchange.respond_json(200, version_body());
  if (get && path == "/metrics")
    co_return co_await exchange.respond(200, "text/plain; version=0.0.4; charset=utf-8",
                                        state_.metrics().render(state_.engine().stats()));
  const std::string_view method(exchange.request().method_string().data(), exchange.request().method_string().size());
  for (const auto& [known, methods] : kRoutes) {
    if (path != known) continue;
    exchange.set_allow(methods);
    throw ApiError(405, "invalid_request_error", "", "method_not_allowed",
                   fmt::format("{} does not accept {}; it takes {}", path, method, methods));
  }
  throw not_found(method, path);
}

asio::awaitable<void> OpenAiService::handle(HttpExchange& exchange) {
  std::optional<ApiError> error;
  try {
    co_await route(exchange);
  } catch (const ApiError& e) {
    error = e;
  } catch (const Error& e) {
    // brisk errors past validation (e.g. a tokenizer failure) are the server's fault.
    spdlog::error("{}: {}", std::string(exchange.path()), e.what());
    error = ApiError(500, "internal_server_error", "", "", e.what());
  }
  if (error && exchange.status() == 0) co_await exchange.respond_error(*error);
}

}  // namespace brisk::server
