// What `GET /metrics` reports, named like vLLM's metrics (brisk_ instead of vllm:) so existing
// dashboards map over: HTTP requests by route and status, finished requests by reason, prompt
// and generation tokens, latency histograms (time to first token, inter-token, end to end),
// and engine gauges read at scrape time (running and waiting requests, KV cache usage, prefix
// cache hit rate). The gauges the inference gateway's endpoint picker reads are also exported
// under vLLM's own names and labels (vllm:..., docs/scaling.md), so a brisk replica joins an
// InferencePool as a vLLM one does.
#pragma once

#include <string>
#include <string_view>

#include "brisk/engine.h"
#include "server/metrics.h"

namespace brisk::server {

class ServerMetrics {
 public:
  // `model_name`: the served model's name, the model_name label of the vllm: gauges.
  explicit ServerMetrics(std::string model_name);

  // status 0: the client left before a response started (reported as nginx's 499).
  void record_response(std::string_view path, int status);
  void record_finish(FinishReason reason);

  Counter& prompt_tokens() { return *prompt_tokens_; }
  Counter& generation_tokens() { return *generation_tokens_; }
  Histogram& time_to_first_token() { return *ttft_; }
  Histogram& inter_token_latency() { return *itl_; }
  Histogram& e2e_latency() { return *e2e_; }

  // The exposition text, with engine gauges refreshed from `stats`.
  std::string render(const EngineStats& stats);

 private:
  void render_vllm_gauges(const EngineStats& stats, double kv_cache_usage);

  const std::string model_name_;
  MetricsRegistry registry_;
  Counter* prompt_tokens_;
  Counter* generation_tokens_;
  Histogram* ttft_;
  Histogram* itl_;
  Histogram* e2e_;
};

}  // namespace brisk::server
