#include "cli/bench_report.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace brisk::cli {
namespace {

nlohmann::json distribution_json(const Distribution& d) {
  return {{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}};
}

double per_second(double count, double seconds) { return seconds > 0 ? count / seconds : 0; }

void print_row(const std::string& label, const std::string& value) { fmt::print("{:<40} {:<10}\n", label, value); }

// The title centred in a 50-character rule of `fill`.
void print_heading(const std::string& title, char fill) {
  const std::string text = title.empty() ? std::string() : " " + title + " ";
  const size_t left = text.size() < 50 ? (50 - text.size()) / 2 : 0;
  const size_t right = text.size() < 50 ? 50 - text.size() - left : 0;
  fmt::print("{}{}{}\n", std::string(left, fill), text, std::string(right, fill));
}

void print_latency(const std::string& title, const std::string& name, const Distribution& d) {
  print_heading(title, '-');
  print_row(fmt::format("Mean {} (ms):", name), fmt::format("{:.2f}", d.mean));
  print_row(fmt::format("Median {} (ms):", name), fmt::format("{:.2f}", d.p50));
  print_row(fmt::format("P90 {} (ms):", name), fmt::format("{:.2f}", d.p90));
  print_row(fmt::format("P99 {} (ms):", name), fmt::format("{:.2f}", d.p99));
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100 * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (rank - static_cast<double>(below));
}

Distribution distribution(const std::vector<double>& values) {
  if (values.empty()) return {};
  Distribution d;
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.p50 = percentile(values, 50);
  d.p90 = percentile(values, 90);
  d.p99 = percentile(values, 99);
  return d;
}

BenchSummary summarize(const std::vector<RequestRecord>& records, double seconds) {
  BenchSummary s;
  s.seconds = seconds;
  std::vector<double> ttfts, tpots, itls, e2es;
  for (const RequestRecord& r : records) {
    if (!r.ok) {
      s.num_failed++;
      continue;
    }
    s.num_completed++;
    s.input_tokens += r.prompt_tokens;
    s.output_tokens += r.output_tokens;
    ttfts.push_back(r.ttft_s * 1e3);
    e2es.push_back(r.e2e_s * 1e3);
    if (r.output_tokens > 1) tpots.push_back((r.e2e_s - r.ttft_s) * 1e3 / static_cast<double>(r.output_tokens - 1));
    for (double itl : r.itl_s) itls.push_back(itl * 1e3);
  }
  s.ttft_ms = distribution(ttfts);
  s.tpot_ms = distribution(tpots);
  s.itl_ms = distribution(itls);
  s.e2e_ms = distribution(e2es);
  return s;
}

nlohmann::json summary_json(const std::string& bench, const BenchSummary& s) {
  const double total_tokens = static_cast<double>(s.input_tokens + s.output_tokens);
  return {{"bench", bench},
          {"num_requests", s.num_completed},
          {"num_failed", s.num_failed},
          {"input_tokens", s.input_tokens},
          {"output_tokens", s.output_tokens},
          {"seconds", s.seconds},
          {"requests_per_s", per_second(static_cast<double>(s.num_completed), s.seconds)},
          {"output_tokens_per_s", per_second(static_cast<double>(s.output_tokens), s.seconds)},
          {"total_tokens_per_s", per_second(total_tokens, s.seconds)},
          {"ttft_ms", distribution_json(s.ttft_ms)},
          {"tpot_ms", distribution_json(s.tpot_ms)},
          {"itl_ms", distribution_json(s.itl_ms)},
          {"e2e_ms", distribution_json(s.e2e_ms)}};
}

void print_summary_lines(const BenchSummary& s) {
  const double total_tokens = static_cast<double>(s.input_tokens + s.output_tokens);
  fmt::print("{} requests ({} input, {} output tokens) in {:.2f} s: {:.2f} req/s, {:.1f} output tok/s, "
             "{:.1f} total tok/s\n", s.num_completed, s.input_tokens, s.output_tokens, s.seconds,
             per_second(static_cast<double>(s.num_completed), s.seconds),
             per_second(static_cast<double>(s.output_tokens), s.seconds), per_second(total_tokens, s.seconds));
  fmt::print("TTFT ms p50/p90/p99 {:.1f}/{:.1f}/{:.1f} | TPOT ms p50/p90/p99 {:.2f}/{:.2f}/{:.2f}\n", s.ttft_ms.p50,
             s.ttft_ms.p90, s.ttft_ms.p99, s.tpot_ms.p50, s.tpot_ms.p90, s.tpot_ms.p99);
}

int report_failures(const std::vector<RequestRecord>& records) {
  std::vector<const RequestRecord*> failed;
  for (const RequestRecord& r : records)
    if (!r.ok) failed.push_back(&r);
  if (failed.empty()) return 0;
  fmt::print(stderr, "error: {} of {} requests failed; the first: {}\n", failed.size(), records.size(),
             failed.front()->error);
  return 1;
}

void print_serving_table(const BenchSummary& s) {
  const double total_tokens = static_cast<double>(s.input_tokens + s.output_tokens);
  print_heading("Serving Benchmark Result", '=');
  print_row("Successful requests:", fmt::format("{}", s.num_completed));
  print_row("Failed requests:", fmt::format("{}", s.num_failed));
  print_row("Benchmark duration (s):", fmt::format("{:.2f}", s.seconds));
  print_row("Total input tokens:", fmt::format("{}", s.input_tokens));
  print_row("Total generated tokens:", fmt::format("{}", s.output_tokens));
  print_row("Request throughput (req/s):",
            fmt::format("{:.2f}", per_second(static_cast<double>(s.num_completed), s.seconds)));
  print_row("Output token throughput (tok/s):",
            fmt::format("{:.2f}", per_second(static_cast<double>(s.output_tokens), s.seconds)));
  print_row("Total token throughput (tok/s):", fmt::format("{:.2f}", per_second(total_tokens, s.seconds)));
  print_latency("Time to First Token", "TTFT", s.ttft_ms);
  print_latency("Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ms);
  print_latency("Inter-token Latency", "ITL", s.itl_ms);
  print_latency("End-to-end Latency", "E2EL", s.e2e_ms);
  print_heading("", '=');
}

}  // namespace brisk::cli
