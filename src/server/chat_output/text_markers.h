// Helpers for text that streams in with markers in it (<think>, <tool_call>, ...): what to hold
// back because the next piece of text may complete a marker.
#pragma once

#include <cstddef>
#include <string_view>

namespace brisk::server {

// Length of the longest suffix of `text` that is a proper prefix of `marker`.
inline size_t partial_marker_length(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

inline size_t trailing_space_length(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && std::string_view(" \t\r\n").find(text[text.size() - 1 - n]) != std::string_view::npos) ++n;
  return n;
}

inline size_t leading_space_length(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && std::string_view(" \t\r\n").find(text[n]) != std::string_view::npos) ++n;
  return n;
}

}  // namespace brisk::server
