#include "server/server_metrics.h"

#include <array>

namespace brisk::server {
namespace {

// vLLM's buckets, so the same dashboards and alert thresholds apply.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                          0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                         0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBuckets = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0,
                                         20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0};

// Routes with their own label; anything else is "other", so scanners cannot explode the series.
constexpr std::array kRoutes = {"/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/messages",
                                "/v1/messages/count_tokens", "/v1/models", "/health", "/metrics", "/tokenize",
                                "/detokenize", "/version"};

}  // namespace

ServerMetrics::ServerMetrics(std::string model_name)
    : model_name_(std::move(model_name)),
      prompt_tokens_(&registry_.counter("brisk_prompt_tokens_total", "Prompt tokens of submitted requests")),
      generation_tokens_(&registry_.counter("brisk_generation_tokens_total", "Generated tokens")),
      ttft_(&registry_.histogram("brisk_time_to_first_token_seconds", "Time from request arrival to its first token",
                                 kTtftBuckets)),
      itl_(&registry_.histogram("brisk_inter_token_latency_seconds", "Time between consecutive tokens of a sample",
                                kItlBuckets)),
      e2e_(&registry_.histogram("brisk_e2e_request_latency_seconds", "Time from request arrival to its last token",
                                kE2eBuckets)) {
  // Gauges exist from the start so a scrape before the first request sees them.
  render(EngineStats{});
}

void ServerMetrics::record_response(std::string_view path, int status) {
  std::string route = "other";
  for (const char* r : kRoutes)
    if (path == r) route = r;
  registry_.counter("brisk_http_requests_total", "HTTP requests by route and status",
                    {{"route", route}, {"status", std::to_string(status == 0 ? 499 : status)}})
      .inc();
}

void ServerMetrics::record_finish(FinishReason reason) {
  registry_.counter("brisk_request_success_total", "Finished samples by finish reason",
                    {{"finished_reason", std::string(finish_reason_name(reason))}})
      .inc();
}

std::string ServerMetrics::render(const EngineStats& s) {
  auto gauge = [&](const char* name, const char* help, double value) { registry_.gauge(name, help).set(value); };
  gauge("brisk_num_requests_running", "Requests running in the engine", static_cast<double>(s.num_running));
  gauge("brisk_num_requests_waiting", "Requests waiting to be scheduled", static_cast<double>(s.num_waiting));
  const double kv_cache_usage = s.num_blocks > 0 ? static_cast<double>(s.num_blocks_in_use) / s.num_blocks : 0.0;
  gauge("brisk_kv_cache_usage_perc", "Fraction of KV cache blocks in use (1 = full)", kv_cache_usage);
  gauge("brisk_kv_cache_blocks_in_use", "KV cache blocks held by requests", static_cast<double>(s.num_blocks_in_use));
  gauge("brisk_kv_cache_blocks_total", "KV cache blocks", static_cast<double>(s.num_blocks));
  gauge("brisk_kv_cache_capacity_tokens", "Tokens the KV cache holds (its --kv-cache-dtype decides how many fit)",
        static_cast<double>(s.kv_capacity_tokens));
  gauge("brisk_prefix_cache_hit_rate", "Prompt tokens served by the prefix cache / prompt tokens looked up",
        s.num_prefix_queried_tokens > 0 ? static_cast<double>(s.num_prefix_hit_tokens) / s.num_prefix_queried_tokens
                                        : 0.0);
  auto total = [&](const char* name, const char* help, int64_t value) {
    registry_.counter(name, help).set(static_cast<double>(value));
  };
  total("brisk_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache",
        s.num_prefix_queried_tokens);
  total("brisk_prefix_cache_hits_total", "Prompt tokens found in the prefix cache", s.num_prefix_hit_tokens);
  total("brisk_num_preemptions_total", "Requests preempted (recomputed later) for lack of KV blocks",
        s.num_preemptions);
  render_vllm_gauges(s, kv_cache_usage);
  return registry_.render();
}

void ServerMetrics::render_vllm_gauges(const EngineStats& s, double kv_cache_usage) {
  // The endpoint picker's defaults (llm-d-router's "vllm" engine config, the Gateway API Inference
  // Extension's model server protocol) name vLLM's metrics; vLLM labels them with the served
  // model and its engine index. Each has the value of the brisk_ gauge beside it in this render.
  const Labels labels = {{"model_name", model_name_}, {"engine", "0"}};
  auto gauge = [&](const char* name, const char* help, double value) {
    registry_.gauge(name, help, labels).set(value);
  };
  gauge("vllm:num_requests_running", "Requests in the engine's running batch (brisk_num_requests_running)",
        static_cast<double>(s.num_running));
  gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled (brisk_num_requests_waiting)",
        static_cast<double>(s.num_waiting));
  gauge("vllm:kv_cache_usage_perc", "KV cache usage, 1 = full (brisk_kv_cache_usage_perc)", kv_cache_usage);
  // vLLM's name before 0.9, still the KV metric of older endpoint pickers.
  gauge("vllm:gpu_cache_usage_perc", "KV cache usage, 1 = full (brisk_kv_cache_usage_perc)", kv_cache_usage);
  // An info metric (value 1): the picker's prefix-cache scorer reads block_size and num_gpu_blocks
  // from its labels, and counts a scrape without it as an extraction error. Registered once the
  // cache exists, so no series with zero blocks lingers.
  if (s.num_blocks > 0)
    registry_
        .gauge("vllm:cache_config_info", "KV cache configuration (labels); value 1",
               {{"block_size", std::to_string(s.block_size)}, {"num_gpu_blocks", std::to_string(s.num_blocks)},
                {"engine", "0"}})
        .set(1.0);
}

}  // namespace brisk::server
