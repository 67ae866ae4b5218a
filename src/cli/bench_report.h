// What `brisk bench throughput` and `brisk bench serve` measure per request, and the summary
// both print: request and token rates, TTFT / TPOT / ITL distributions (mean and percentiles,
// as vLLM's benchmarks report them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace brisk::cli {

// One request as the client saw it; times in seconds from the request's send (or submit) time.
struct RequestRecord {
  bool ok = false;
  std::string error;          // why it failed (ok == false)
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  double ttft_s = 0;          // first token
  double e2e_s = 0;           // last token
  std::vector<double> itl_s;  // gaps between consecutive token arrivals (chunks, over HTTP)
};

struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

// Linear interpolation between the closest ranks, as numpy.percentile (vLLM's reports); 0 for
// no values.
double percentile(std::vector<double> values, double p);
Distribution distribution(const std::vector<double>& values);

// Failed requests count only in num_failed: their tokens and times are not in the figures.
struct BenchSummary {
  int64_t num_completed = 0;
  int64_t num_failed = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double seconds = 0;  // the whole run: first send to last completion
  Distribution ttft_ms;
  Distribution tpot_ms;  // per request (e2e - ttft) / (output_tokens - 1), requests of 2+ tokens
  Distribution itl_ms;
  Distribution e2e_ms;
};

BenchSummary summarize(const std::vector<RequestRecord>& records, double seconds);

// {"bench", "num_requests" (completed), "num_failed", "input_tokens", "output_tokens", "seconds",
//  "requests_per_s", "output_tokens_per_s", "total_tokens_per_s", "ttft_ms": {"mean", "p50",
//  "p90", "p99"}, "tpot_ms", "itl_ms", "e2e_ms"}. scripts/gpu-check reads these keys: keep them.
nlohmann::json summary_json(const std::string& bench, const BenchSummary& summary);

// Prints how many requests failed and the first error (stderr); the exit code: 1 if any failed.
int report_failures(const std::vector<RequestRecord>& records);

// Two lines: rates, then TTFT and TPOT percentiles.
void print_summary_lines(const BenchSummary& summary);
// The table of `vllm bench serve`: counts, rates, then TTFT, TPOT, ITL and E2E latency.
void print_serving_table(const BenchSummary& summary);

}  // namespace brisk::cli
