// Scanning JSON text that may still be arriving (a model writing a tool call): where a value
// ends, and where each member of an object starts and ends, without decoding the values. What
// is complete is checked by a real parser afterwards; the scan only finds the spans.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::server {

enum class ScanState { kComplete, kIncomplete, kMalformed };

struct ValueScan {
  ScanState state = ScanState::kIncomplete;
  size_t end = 0;  // kComplete: one past the value
};

// The JSON value starting at text[pos] (no leading whitespace). A number or literal at the end
// of the text is incomplete: more digits may follow.
ValueScan scan_json_value(std::string_view text, size_t pos);

struct JsonMember {
  std::string key;           // decoded
  size_t value_begin = 0;    // text.size() when the value has not started
  size_t value_end = 0;      // one past the value; text.size() while incomplete
  bool complete = false;
};

struct ObjectScan {
  ScanState state = ScanState::kIncomplete;
  size_t end = 0;                   // kComplete: one past the closing brace
  std::vector<JsonMember> members;  // in order; the last may be incomplete
  const JsonMember* find(std::string_view key) const;
};

// The object starting at text[pos] == '{'.
ObjectScan scan_json_object(std::string_view text, size_t pos);

size_t skip_json_space(std::string_view text, size_t pos);

}  // namespace brisk::server
