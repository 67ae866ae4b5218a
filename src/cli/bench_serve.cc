// `brisk bench serve`: the workload of `bench throughput` sent over HTTP to an OpenAI-compatible
// server, as `vllm bench serve` sends it: streaming /v1/completions with token-id prompts,
// ignore_eos and max_tokens = the output length, Poisson arrivals (--request-rate) under an
// optional concurrency cap, and TTFT / TPOT / ITL / end-to-end latency on the client's clock.
// The server is --base-url's (brisk serve, vLLM, ...), or brisk's own for --model, started in
// this process on a free loopback port and stopped at the end.
#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "cli/bench_dataset.h"
#include "cli/bench_http_client.h"
#include "cli/bench_report.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/step_profile_report.h"
#include "core/error.h"
#include "server/http_server.h"
#include "server/openai_service.h"

namespace brisk::cli {
namespace {

struct ServeBenchArgs {
  EngineOptions engine;
  WorkloadOptions workload;
  LoadOptions load;
  std::string base_url;
  bool json = false;
};

// brisk's server for one model on 127.0.0.1 (a free port), answering on threads of its own from
// construction until destruction, which stops it and the engine.
class LocalServer {
 public:
  explicit LocalServer(const EngineOptions& options)
      : http_(loopback()), engine_(Engine::create(options)),
        service_(*engine_, options.model_dir, options.model_dir),
        thread_([this] { http_.run(service_.handlers()); }) {}
  ~LocalServer() {
    http_.stop();
    thread_.join();
    engine_->shutdown();
  }
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  const Engine& engine() const { return *engine_; }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", http_.port()); }

 private:
  static server::HttpServerOptions loopback() {
    server::HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.num_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
    return options;
  }

  server::HttpServer http_;  // bound first: its port is known before the model loads
  std::unique_ptr<Engine> engine_;
  server::OpenAiService service_;
  std::thread thread_;
};

// With ignore_eos every request should get exactly max_tokens; a server that stops early (it
// ignores ignore_eos, or the context is full) makes the figures those of another workload.
void warn_short_outputs(const std::vector<BenchRequest>& requests, const std::vector<RequestRecord>& records) {
  int64_t num_short = 0;
  for (size_t i = 0; i < records.size(); ++i)
    if (records[i].ok && records[i].output_tokens != requests[i].output_len) num_short++;
  if (num_short > 0)
    fmt::print(stderr, "warning: {} requests got another number of tokens than their max_tokens (does the server "
               "honour ignore_eos?)\n", num_short);
}

nlohmann::json serve_json(const BenchSummary& summary, const std::string& url, const std::string& model,
                          const LoadOptions& load) {
  nlohmann::json out = summary_json("serve", summary);
  out["base_url"] = url;
  out["model"] = model;
  out["request_rate"] = std::isfinite(load.request_rate) ? nlohmann::json(load.request_rate) : nlohmann::json("inf");
  out["max_concurrency"] = load.max_concurrency > 0 ? nlohmann::json(load.max_concurrency) : nlohmann::json(nullptr);
  return out;
}

int run_bench_serve(ServeBenchArgs& args) {
  BRISK_CHECK(!args.base_url.empty() || !args.engine.model_dir.empty(),
              "bench serve needs --base-url (a running server) or --model (brisk's own server in this process)");
  if (!args.base_url.empty()) parse_base_url(args.base_url);  // a bad URL fails before anything loads
  std::unique_ptr<LocalServer> local;
  ModelLimits limits;  // a remote server's model is unknown: it checks the ids itself
  std::string url = args.base_url;
  if (url.empty()) {
    show_load_progress(args.engine);
    local = std::make_unique<LocalServer>(args.engine);
    limits = model_limits(local->engine(), args.engine.model_dir);
    url = local->url();
    fmt::print(stderr, "bench serve: brisk's server for {} on {}\n", args.engine.model_dir, url);
  }
  args.load.seed = args.workload.seed;
  BenchHttpClient client(parse_base_url(url), args.load);
  const std::string model = client.model_name();
  const Workload workload = make_workload(args.workload, limits);
  fmt::print(stderr, "{}\n", workload.description);
  fmt::print(stderr, "bench serve: {} requests to {} (model '{}'), request rate {}, max concurrency {}\n",
             workload.requests.size(), url, model, args.load.request_rate,
             args.load.max_concurrency > 0 ? fmt::format("{}", args.load.max_concurrency) : "none");
  const LoadResult result = client.run(workload.requests, model);
  warn_short_outputs(workload.requests, result.records);
  const BenchSummary summary = summarize(result.records, result.seconds);
  nlohmann::json out = serve_json(summary, url, model, args.load);
  if (local) report_step_profile(local->engine(), args.engine, out);
  if (args.json) fmt::print("{}\n", out.dump());
  else print_serving_table(summary);
  return report_failures(result.records);
}

// CLI11's PositiveNumber refuses inf (the default rate) and prints DBL_MAX when it refuses.
CLI::Validator positive_seconds_or_rate() {
  return CLI::Validator(
      [](const std::string& text) {
        double value = 0;
        return CLI::detail::lexical_cast(text, value) && value > 0 ? std::string()
                                                                    : "must be a number > 0 (inf allowed), got " + text;
      },
      "> 0");
}

}  // namespace

Runner add_bench_serve_command(CLI::App& bench) {
  auto args = std::make_shared<ServeBenchArgs>();
  CLI::App* cmd = bench.add_subcommand(
      "serve", "Requests over HTTP to an OpenAI-compatible server (a running one, or brisk's own for --model): "
               "throughput, TTFT, TPOT and ITL as `vllm bench serve` reports them");
  cmd->footer("Examples:\n"
              "  brisk bench serve --model DIR --dataset sharegpt.json --num-prompts 500 --request-rate 20\n"
              "  brisk bench serve --base-url http://127.0.0.1:8000 --dataset sharegpt.json --tokenizer DIR\n"
              "Requests stream /v1/completions with token-id prompts, ignore_eos and max_tokens = the output length.\n"
              "With --base-url the server's vocabulary is unknown here: ids are sent as the tokenizer makes them.");
  add_engine_options(cmd, args->engine);
  CLI::Option* model = cmd->get_option("--model");
  model->required(false)->description(
      "Hugging Face model folder: brisk's server for it runs in this process (instead of --base-url)");
  cmd->add_option("--base-url", args->base_url, "a running OpenAI-compatible server: http://HOST:PORT")
      ->excludes(model)
      ->group("Target");
  add_workload_options(cmd, args->workload);
  LoadOptions& load = args->load;
  cmd->add_option("--request-rate", load.request_rate,
                  "requests per second, Poisson arrivals seeded with --seed (inf: all at once)")
      ->check(positive_seconds_or_rate())
      ->capture_default_str()
      ->group("Load");
  cmd->add_option("--max-concurrency", load.max_concurrency, "most requests in flight (0: no cap)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group("Load");
  cmd->add_option("--request-timeout", load.request_timeout_s,
                  "seconds a request may wait for the server's next bytes before it counts as failed")
      ->check(positive_seconds_or_rate())
      ->capture_default_str()
      ->group("Load");
  cmd->add_option("--api-key", load.api_key, "sent as 'Authorization: Bearer <key>'")->group("Target");
  cmd->add_flag("--json", args->json, "print one JSON object");
  return [args] { return run_bench_serve(*args); };
}

}  // namespace brisk::cli
