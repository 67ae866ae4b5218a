#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/error.h"

namespace brisk::server {
namespace {

std::string escape(const std::string& text, bool quotes) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quotes) out += "\\\"";
    else out += c;
  }
  return out;
}

// Prometheus floats: integers without a fraction, +Inf/-Inf/NaN spelled its way.
std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

// The text format's names: metrics [a-zA-Z_:][a-zA-Z0-9_:]* (vLLM's have a colon), labels the same
// without colons. A bad name would make every scraper reject the whole exposition.
bool valid_name(const std::string& name, bool colons) {
  auto ok = [&](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colons && c == ':') ||
           (!first && c >= '0' && c <= '9');
  };
  if (name.empty() || !ok(name[0], true)) return false;
  return std::all_of(name.begin() + 1, name.end(), [&](char c) { return ok(c, false); });
}

std::string braces(const std::string& labels) { return labels.empty() ? "" : "{" + labels + "}"; }

std::string join_labels(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + "," + b;
}

template <typename Metric>
Metric& find_or_add(std::vector<std::pair<std::string, std::unique_ptr<Metric>>>& metrics, const std::string& key,
                    const std::function<std::unique_ptr<Metric>()>& make) {
  for (auto& [k, m] : metrics)
    if (k == key) return *m;
  metrics.emplace_back(key, make());
  return *metrics.back().second;
}

}  // namespace

std::string format_labels(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    BRISK_CHECK(valid_name(name, false), "'{}' is not a valid Prometheus label name", name);
    if (!out.empty()) out += ',';
    out += fmt::format("{}=\"{}\"", name, escape(value, true));
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  BRISK_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()) &&
                  std::adjacent_find(bounds_.begin(), bounds_.end()) == bounds_.end(),
              "histogram bounds must be strictly increasing");
}

void Histogram::observe(double value) {
  // Upper bounds are inclusive (le): the first bound >= value.
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mutex_);
  counts_[bucket]++;
  sum_ += value;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = 0;
  for (uint64_t c : counts_) s.cumulative_counts.push_back(total += c);
  s.count = total;
  s.sum = sum_;
  return s;
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help, Type type,
                                                 const std::vector<double>& bounds) {
  BRISK_CHECK(valid_name(name, true), "'{}' is not a valid Prometheus metric name", name);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    BRISK_CHECK(it->second->type == type && it->second->bounds == bounds,
                "metric '{}' is already registered with another type or other buckets", name);
    return *it->second;
  }
  families_.push_back(std::make_unique<Family>(Family{name, help, type, bounds, {}, {}, {}}));
  by_name_[name] = families_.back().get();
  return *families_.back();
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_or_add<Counter>(family(name, help, Type::kCounter, {}).counters, format_labels(labels),
                              [] { return std::make_unique<Counter>(); });
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_or_add<Gauge>(family(name, help, Type::kGauge, {}).gauges, format_labels(labels),
                            [] { return std::make_unique<Gauge>(); });
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      const std::vector<double>& bounds, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_or_add<Histogram>(family(name, help, Type::kHistogram, bounds).histograms, format_labels(labels),
                                [&] { return std::make_unique<Histogram>(bounds); });
}

void MetricsRegistry::render_family(const Family& f, std::string& out) const {
  static const char* kTypeNames[] = {"counter", "gauge", "histogram"};
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, escape(f.help, false), f.name,
                     kTypeNames[static_cast<int>(f.type)]);
  for (const auto& [labels, c] : f.counters) out += fmt::format("{}{} {}\n", f.name, braces(labels), format_value(c->value()));
  for (const auto& [labels, g] : f.gauges) out += fmt::format("{}{} {}\n", f.name, braces(labels), format_value(g->value()));
  for (const auto& [labels, h] : f.histograms) {
    Histogram::Snapshot s = h->snapshot();
    for (size_t i = 0; i <= s.bounds.size(); ++i) {
      std::string le = i < s.bounds.size() ? format_value(s.bounds[i]) : "+Inf";
      out += fmt::format("{}_bucket{{{}}} {}\n", f.name, join_labels(labels, "le=\"" + le + "\""),
                         s.cumulative_counts[i]);
    }
    out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", f.name, braces(labels), format_value(s.sum), f.name,
                       braces(labels), s.count);
  }
}

std::string MetricsRegistry::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& f : families_) render_family(*f, out);
  return out;
}

}  // namespace brisk::server
