// Logging through spdlog (header-only use, so GPU-machine binaries need no extra .so).
#pragma once

#include <spdlog/spdlog.h>

namespace brisk {

// Sets the global level from a name (trace, debug, info, warn, error, off); throws on others.
void set_log_level(const std::string& level);
// Sends the default logger's messages to stderr (commands print their results on stdout).
void log_to_stderr();

}  // namespace brisk
