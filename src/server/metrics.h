// A small Prometheus registry: counters, gauges and histograms with fixed label sets, rendered
// in the text exposition format (version 0.0.4) that Prometheus and vLLM's dashboards scrape.
// Updates are lock-free or take a per-metric lock; registration takes the registry lock. A
// metric returned by the registry lives as long as the registry (references stay valid).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace brisk::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  // For a counter mirrored from a monotonic source (the engine's statistics).
  void set(double total) { value_.store(total, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, increasing; +Inf is implied.
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative_counts;  // per bound, then +Inf
    double sum = 0.0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), the last is +Inf
  double sum_ = 0.0;
};

class MetricsRegistry {
 public:
  // The same name and labels return the same metric; a name registered as another type, or
  // with other histogram bounds, throws kInvalidArgument.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const std::vector<double>& bounds,
                       const Labels& labels = {});

  // Every metric in the text exposition format, families in registration order.
  std::string render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    std::string name, help;
    Type type;
    std::vector<double> bounds;  // histograms
    // Label text ({a="x",b="y"} or empty) -> metric, in first-use order.
    std::vector<std::pair<std::string, std::unique_ptr<Counter>>> counters;
    std::vector<std::pair<std::string, std::unique_ptr<Gauge>>> gauges;
    std::vector<std::pair<std::string, std::unique_ptr<Histogram>>> histograms;
  };
  Family& family(const std::string& name, const std::string& help, Type type, const std::vector<double>& bounds);
  void render_family(const Family& f, std::string& out) const;

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Family>> families_;
  std::map<std::string, Family*> by_name_;
};

// "a=\"x\",b=\"y\"" with Prometheus escaping of backslash, quote and newline (no braces).
std::string format_labels(const Labels& labels);

}  // namespace brisk::server
