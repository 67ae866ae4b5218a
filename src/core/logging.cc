#include "core/logging.h"

#include "core/error.h"

namespace brisk {

void set_log_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  BRISK_CHECK(parsed != spdlog::level::off || level == "off",
              "unknown log level '{}' (expected trace, debug, info, warn, error or off)", level);
  spdlog::set_level(parsed);
}

}  // namespace brisk
