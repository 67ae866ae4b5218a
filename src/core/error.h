// Helpers to throw brisk::Error with fmt-formatted messages.
#pragma once

#include <fmt/format.h>

#include "brisk/status.h"

namespace brisk {

template <typename... Args>
[[noreturn]] void throw_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace brisk

// Checks an invariant; on failure throws kInvalidArgument with the formatted message.
#define BRISK_CHECK(cond, ...)                                             \
  do {                                                                     \
    if (!(cond)) ::brisk::throw_error(::brisk::ErrorCode::kInvalidArgument, __VA_ARGS__); \
  } while (0)

// Like BRISK_CHECK but for broken internal invariants (a bug in brisk, not the caller).
#define BRISK_ASSERT(cond)                                                              \
  do {                                                                                  \
    if (!(cond))                                                                        \
      ::brisk::throw_error(::brisk::ErrorCode::kInternal, "internal invariant failed: {} ({}:{})", \
                           #cond, __FILE__, __LINE__);                                  \
  } while (0)
