// `brisk serve`: the OpenAI-compatible HTTP server (drop-in for vLLM's and LMDeploy's
// api_server): /v1/completions, /v1/chat/completions, /v1/responses, /v1/models, /tokenize,
// /detokenize, /health, /metrics.
#include <algorithm>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "brisk/engine.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/error.h"
#include "server/http_server.h"
#include "server/openai_service.h"

namespace brisk::cli {
namespace {

struct ServeArgs {
  EngineOptions engine;
  server::HttpServerOptions http;
  server::ChatParsing parsing;
  std::string served_model_name;
};

int run_serve(ServeArgs& args) {
  if (args.served_model_name.empty()) args.served_model_name = args.engine.model_dir;
  // Bind before loading the model: a taken port fails in a second, not after the load.
  server::HttpServer http(args.http);
  show_load_progress(args.engine);
  auto engine = Engine::create(args.engine);
  server::OpenAiService service(*engine, args.served_model_name, args.engine.model_dir, args.parsing);
  const EngineStats stats = engine->stats();
  fmt::print(stderr, "brisk serve: model '{}' ({} tokens of context, KV cache of {} tokens)\n",
             args.served_model_name, engine->max_model_len(), stats.kv_capacity_tokens);
  fmt::print(stderr, "brisk serve: chat output: {}\n", service.state().chat_output_summary());
  fmt::print(stderr, "brisk serve: listening on http://{}:{} (Ctrl-C to stop)\n", args.http.host, http.port());
  std::fflush(stderr);
  http.run(service.handlers());
  engine->shutdown();
  fmt::print(stderr, "brisk serve: stopped\n");
  return 0;
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions, ...)");
  cmd->footer("Example:\n  brisk serve --model ~/models/Llama-3.2-1B-Instruct --port 8000\n"
              "  curl http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\\n"
              "       -d '{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}'");
  add_engine_options(cmd, args->engine);
  cmd->add_option("--served-model-name", args->served_model_name,
                  "the model name clients send in \"model\" (default: the --model path)")
      ->group("Model");
  cmd->add_option("--tool-call-parser", args->parsing.tool_call_parser,
                  "how tool calls are read from chat output: hermes (Hermes, Qwen2.5, Qwen3), llama3_json "
                  "(Llama 3.1-3.3), mistral, internlm (InternLM2); auto: the chat template's; none: never")
      ->check(CLI::IsMember(server::kToolCallParserNames))
      ->capture_default_str()
      ->group("Chat output");
  cmd->add_option("--reasoning-parser", args->parsing.reasoning_parser,
                  "put <think>...</think> reasoning in reasoning_content: qwen3 or deepseek_r1 (the same "
                  "format); auto: when the chat template has <think>; none: leave it in the content")
      ->check(CLI::IsMember(server::kReasoningParserNames))
      ->capture_default_str()
      ->group("Chat output");
  server::HttpServerOptions& h = args->http;
  h.num_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  cmd->add_option("--host", h.host, "IP address to listen on (0.0.0.0: every interface)")
      ->capture_default_str()
      ->group("Server");
  cmd->add_option("--port", h.port, "TCP port (0: any free port, printed at start-up)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str()
      ->group("Server");
  cmd->add_option("--api-key", h.api_key, "require 'Authorization: Bearer <key>' on /v1 routes")
      ->envname("BRISK_API_KEY")
      ->group("Server");
  cmd->add_option("--max-request-bytes", h.max_body_bytes, "largest request body accepted (413 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group("Server");
  cmd->add_option("--allowed-origins", h.allowed_origins,
                  "CORS: origins whose web pages may call the API, e.g. https://app.example.com (\"*\": any); "
                  "default: none")
      ->delimiter(',')
      ->group("Server");
  cmd->add_option("--shutdown-timeout", h.shutdown_grace_seconds,
                  "seconds in-flight requests may run after SIGINT/SIGTERM before they are cancelled")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group("Server");
  return [args] { return run_serve(*args); };
}

}  // namespace brisk::cli
