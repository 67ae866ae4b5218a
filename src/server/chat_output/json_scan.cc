#include "server/chat_output/json_scan.h"

#include <nlohmann/json.hpp>

namespace brisk::server {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_literal_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' ||
         c == '-';
}

// A string starting at text[pos] == '"'.
ValueScan scan_string(std::string_view text, size_t pos) {
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (text[i] == '\\') ++i;
    else if (text[i] == '"') return {ScanState::kComplete, i + 1};
  }
  return {ScanState::kIncomplete, text.size()};
}

// An object or array starting at text[pos]: brackets matched, strings skipped.
ValueScan scan_nested(std::string_view text, size_t pos) {
  std::string open;
  for (size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      ValueScan s = scan_string(text, i);
      if (s.state != ScanState::kComplete) return s;
      i = s.end - 1;
    } else if (c == '{' || c == '[') {
      open.push_back(c);
    } else if (c == '}' || c == ']') {
      if (open.empty() || open.back() != (c == '}' ? '{' : '[')) return {ScanState::kMalformed, i};
      open.pop_back();
      if (open.empty()) return {ScanState::kComplete, i + 1};
    }
  }
  return {ScanState::kIncomplete, text.size()};
}

}  // namespace

size_t skip_json_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

ValueScan scan_json_value(std::string_view text, size_t pos) {
  if (pos >= text.size()) return {ScanState::kIncomplete, text.size()};
  const char c = text[pos];
  if (c == '"') return scan_string(text, pos);
  if (c == '{' || c == '[') return scan_nested(text, pos);
  if (!is_literal_char(c)) return {ScanState::kMalformed, pos};
  size_t end = pos;
  while (end < text.size() && is_literal_char(text[end])) ++end;
  return {end == text.size() ? ScanState::kIncomplete : ScanState::kComplete, end};
}

const JsonMember* ObjectScan::find(std::string_view key) const {
  for (const JsonMember& m : members)
    if (m.key == key) return &m;
  return nullptr;
}

ObjectScan scan_json_object(std::string_view text, size_t pos) {
  ObjectScan scan;
  size_t i = skip_json_space(text, pos + 1);
  if (i < text.size() && text[i] == '}') return {ScanState::kComplete, i + 1, {}};
  while (i < text.size()) {
    if (text[i] != '"') return {ScanState::kMalformed, i, std::move(scan.members)};
    ValueScan key = scan_string(text, i);
    if (key.state != ScanState::kComplete) return scan;
    JsonMember member;
    nlohmann::json key_text = nlohmann::json::parse(text.substr(i, key.end - i), nullptr, false);
    if (!key_text.is_string()) return {ScanState::kMalformed, i, std::move(scan.members)};
    member.key = key_text.get<std::string>();
    i = skip_json_space(text, key.end);
    if (i >= text.size()) return scan;
    if (text[i] != ':') return {ScanState::kMalformed, i, std::move(scan.members)};
    i = skip_json_space(text, i + 1);
    member.value_begin = i;
    ValueScan value = scan_json_value(text, i);
    if (value.state == ScanState::kMalformed) return {ScanState::kMalformed, value.end, std::move(scan.members)};
    member.value_end = value.end;
    member.complete = value.state == ScanState::kComplete;
    scan.members.push_back(std::move(member));
    if (!scan.members.back().complete) return scan;
    i = skip_json_space(text, value.end);
    if (i >= text.size()) return scan;
    if (text[i] == '}') {
      scan.state = ScanState::kComplete;
      scan.end = i + 1;
      return scan;
    }
    if (text[i] != ',') return {ScanState::kMalformed, i, std::move(scan.members)};
    i = skip_json_space(text, i + 1);
  }
  return scan;
}

}  // namespace brisk::server
