// The Prometheus registry: values, label escaping, cumulative histogram buckets, exposition text.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "server/metrics.h"
#include "test_util.h"

namespace brisk::server {
namespace {

TEST(Metrics, CountersAndGaugesRender) {
  MetricsRegistry registry;
  registry.counter("requests_total", "Requests", {{"status", "200"}}).inc();
  registry.counter("requests_total", "Requests", {{"status", "200"}}).inc(2);
  registry.counter("requests_total", "Requests", {{"status", "400"}}).inc();
  registry.gauge("running", "Running now").set(3.5);
  EXPECT_EQ(registry.render(),
            "# HELP requests_total Requests\n# TYPE requests_total counter\n"
            "requests_total{status=\"200\"} 3\nrequests_total{status=\"400\"} 1\n"
            "# HELP running Running now\n# TYPE running gauge\nrunning 3.5\n");
}

TEST(Metrics, HistogramBucketsAreCumulativeAndInclusive) {
  MetricsRegistry registry;
  Histogram& h = registry.histogram("latency_seconds", "Latency", {0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 2.0}) h.observe(v);
  EXPECT_EQ(registry.render(),
            "# HELP latency_seconds Latency\n# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{le=\"0.1\"} 2\nlatency_seconds_bucket{le=\"1\"} 3\n"
            "latency_seconds_bucket{le=\"+Inf\"} 4\nlatency_seconds_sum 2.65\nlatency_seconds_count 4\n");
}

TEST(Metrics, LabelValuesAndHelpAreEscaped) {
  MetricsRegistry registry;
  registry.counter("c", "line one\nback\\slash", {{"path", "a\"b\\c\nd"}}).inc();
  std::string text = registry.render();
  EXPECT_NE(text.find("# HELP c line one\\nback\\\\slash\n"), std::string::npos) << text;
  EXPECT_NE(text.find("c{path=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos) << text;
}

TEST(Metrics, ConflictingRegistrationsAreRejected) {
  MetricsRegistry registry;
  registry.counter("x", "X");
  testing::expect_error([&] { registry.gauge("x", "X"); }, ErrorCode::kInvalidArgument, {"'x'"});
  registry.histogram("h", "H", {1.0});
  testing::expect_error([&] { registry.histogram("h", "H", {2.0}); }, ErrorCode::kInvalidArgument, {"'h'"});
  testing::expect_error([] { Histogram bad({2.0, 1.0}); }, ErrorCode::kInvalidArgument, {"increasing"});
}

TEST(Metrics, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry registry;
  Counter& counter = registry.counter("n", "N");
  Histogram& histogram = registry.histogram("h", "H", {0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.inc();
        histogram.observe(1.0);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter.value(), 40000);
  EXPECT_EQ(histogram.snapshot().count, 40000u);
}

}  // namespace
}  // namespace brisk::server
