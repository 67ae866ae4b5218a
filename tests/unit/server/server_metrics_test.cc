// What /metrics reports: vLLM's names for the gauges the inference gateway's endpoint picker reads
// carry exactly the values of brisk's own gauges, with vLLM's labels, and the exposition stays
// valid text format with the colons in their names.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "server/server_metrics.h"
#include "test_util.h"

namespace brisk::server {
namespace {

// Sample lines ("name{labels} value") of an exposition, by "name{labels}"; fails the test on a
// line the text format does not allow.
std::map<std::string, std::string> samples(const std::string& text) {
  static const std::regex kComment(
      R"(# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram)))");
  static const std::regex kSample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)"  // name
                                   R"((\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*")"  // {first label
                                   R"((,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*")*\})?) (\S+))");  // more}, value
  std::map<std::string, std::string> out;
  std::istringstream lines(text);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, kComment)) continue;
    if (std::regex_match(line, m, kSample)) {
      EXPECT_TRUE(out.emplace(m[1], m[6]).second) << "duplicate sample: " << line;
      continue;
    }
    ADD_FAILURE() << "not valid Prometheus text: " << line;
  }
  return out;
}

EngineStats busy_engine() {
  EngineStats s;
  s.num_running = 7;
  s.num_waiting = 3;
  s.num_blocks = 400;
  s.num_blocks_in_use = 150;
  s.block_size = 64;
  s.kv_capacity_tokens = 400 * 64;
  return s;
}

TEST(ServerMetrics, VllmGaugesMirrorBriskGauges) {
  ServerMetrics metrics("llama-8b");
  const std::string text = metrics.render(busy_engine());
  const auto values = samples(text);
  const std::string labels = R"({model_name="llama-8b",engine="0"})";
  const std::pair<const char*, const char*> aliases[] = {
      {"vllm:num_requests_running", "brisk_num_requests_running"},
      {"vllm:num_requests_waiting", "brisk_num_requests_waiting"},
      {"vllm:kv_cache_usage_perc", "brisk_kv_cache_usage_perc"},
      {"vllm:gpu_cache_usage_perc", "brisk_kv_cache_usage_perc"}};
  for (const auto& [alias, own] : aliases) {
    EXPECT_NE(text.find(std::string("# TYPE ") + alias + " gauge\n"), std::string::npos) << alias;
    ASSERT_TRUE(values.count(alias + labels)) << alias << " missing:\n" << text;
    ASSERT_TRUE(values.count(own)) << own;
    EXPECT_EQ(values.at(alias + labels), values.at(own)) << alias;
  }
  EXPECT_EQ(values.at("brisk_num_requests_running"), "7");
  EXPECT_EQ(values.at("brisk_kv_cache_usage_perc"), "0.375");
  EXPECT_EQ(values.at(R"(vllm:cache_config_info{block_size="64",num_gpu_blocks="400",engine="0"})"), "1");
}

TEST(ServerMetrics, VllmGaugesFollowEveryScrape) {
  ServerMetrics metrics("m");
  metrics.render(busy_engine());
  EngineStats idle = busy_engine();
  idle.num_running = idle.num_waiting = idle.num_blocks_in_use = 0;
  const auto values = samples(metrics.render(idle));
  for (const char* alias : {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"})
    EXPECT_EQ(values.at(std::string(alias) + R"({model_name="m",engine="0"})"), "0") << alias;
}

TEST(ServerMetrics, CacheConfigInfoWaitsForTheCache) {
  // Before the engine reports its cache (the constructor's render) there is no series with zero
  // blocks for the picker to read.
  ServerMetrics metrics("m");
  const std::string text = metrics.render(EngineStats{});
  EXPECT_EQ(text.find("vllm:cache_config_info"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(vllm:num_requests_waiting{model_name="m",engine="0"} 0)"), std::string::npos) << text;
}

TEST(ServerMetrics, ModelNameLabelIsEscaped) {
  ServerMetrics metrics("/models/a \"quoted\" \\ name");
  const auto values = samples(metrics.render(busy_engine()));
  EXPECT_EQ(values.at(R"(vllm:num_requests_waiting{model_name="/models/a \"quoted\" \\ name",engine="0"})"), "3");
}

TEST(Metrics, NamesFollowTheTextFormat) {
  MetricsRegistry registry;
  registry.gauge("vllm:num_requests_running", "colons are allowed in metric names", {{"model_name", "x"}}).set(1);
  EXPECT_NE(registry.render().find("vllm:num_requests_running{model_name=\"x\"} 1\n"), std::string::npos);
  for (const char* bad : {"", "1st", "with-dash", "with space", "dot.ted"})
    testing::expect_error([&] { registry.gauge(bad, "bad"); }, ErrorCode::kInvalidArgument, {"metric name"});
  for (const char* bad : {"", "a:b", "9x", "a-b"})
    testing::expect_error([&] { registry.gauge("g", "G", {{bad, "v"}}); }, ErrorCode::kInvalidArgument,
                          {"label name"});
}

}  // namespace
}  // namespace brisk::server
