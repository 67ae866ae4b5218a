#include "core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "core/error.h"

namespace brisk {

void set_log_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  BRISK_CHECK(parsed != spdlog::level::off || level == "off",
              "unknown log level '{}' (expected trace, debug, info, warn, error or off)", level);
  spdlog::set_level(parsed);
}

void log_to_stderr() {
  // stdout stays for results (--json, generated text, JSONL); diagnostics go to stderr.
  if (spdlog::get("brisk") == nullptr) spdlog::set_default_logger(spdlog::stderr_color_mt("brisk"));
}

}  // namespace brisk
