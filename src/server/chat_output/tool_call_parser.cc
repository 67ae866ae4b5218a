#include "server/chat_output/tool_call_parser.h"

#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/chat_output/json_scan.h"
#include "server/chat_output/text_markers.h"

namespace brisk::server {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralArgs = "[ARGS]";
// A mistral name longer than this is not a name.
constexpr size_t kMaxNameLength = 256;

std::string_view start_marker(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "<tool_call>";
    case ToolCallFormat::kMistral: return "[TOOL_CALLS]";
    case ToolCallFormat::kInternLM: return "<|action_start|><|plugin|>";
    case ToolCallFormat::kLlama3Json:
    case ToolCallFormat::kJsonArray: break;
  }
  return {};
}

std::string_view end_marker(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "</tool_call>";
    case ToolCallFormat::kInternLM: return "<|action_end|>";
    default: return {};
  }
}

bool is_name_key(std::string_view key) { return key == "name"; }
bool is_arguments_key(std::string_view key) { return key == "arguments" || key == "parameters"; }

}  // namespace

ToolCallIds tool_call_ids_of(ToolCallFormat format) {
  return format == ToolCallFormat::kMistral ? ToolCallIds::kMistral : ToolCallIds::kOpenAI;
}

std::string make_tool_call_id(ToolCallIds ids) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  if (ids == ToolCallIds::kMistral) {
    constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id(9, ' ');
    for (char& c : id) c = kAlphabet[rng() % kAlphabet.size()];
    return id;
  }
  return fmt::format("call_{:016x}{:08x}", rng(), static_cast<uint32_t>(rng()));
}

std::optional<ToolCallFormat> tool_call_format_named(std::string_view name) {
  if (name == "hermes") return ToolCallFormat::kHermes;
  if (name == "llama3_json") return ToolCallFormat::kLlama3Json;
  if (name == "mistral") return ToolCallFormat::kMistral;
  if (name == "internlm") return ToolCallFormat::kInternLM;
  return std::nullopt;
}

std::string_view tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3_json";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kInternLM: return "internlm";
    case ToolCallFormat::kJsonArray: return "json_array";
  }
  return "?";
}

std::optional<ToolCallFormat> detect_tool_call_format(std::string_view chat_template) {
  auto has = [&](std::string_view s) { return chat_template.find(s) != std::string_view::npos; };
  // Hermes-3 (a Llama 3.1 fine-tune) also says "parameters": the markers decide first.
  if (has("<tool_call>")) return ToolCallFormat::kHermes;
  if (has("[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  if (has("<|plugin|>")) return ToolCallFormat::kInternLM;
  if (has(kPythonTag) || (has("\"parameters\"") && has("tool_calls"))) return ToolCallFormat::kLlama3Json;
  return std::nullopt;
}

bool tool_call_format_needs_special_tokens(ToolCallFormat format) {
  return format == ToolCallFormat::kMistral || format == ToolCallFormat::kInternLM;
}

ToolCallStep ToolCallParser::feed(std::string_view text) {
  buffer_ += text;
  ToolCallStep out;
  while (advance(out)) {
  }
  return out;
}

ToolCallStep ToolCallParser::finish() {
  ToolCallStep out;
  if (mode_ == Mode::kObject && call_open_) {
    calls_valid_ = false;  // cut off inside its arguments
  } else if (mode_ != Mode::kAfterObject) {
    // Unfinished markup is text the model wrote; after calls, only what is not space.
    const std::string rest = unconfirmed_ + buffer_;
    if (calls_.empty() || rest.find_first_not_of(" \t\r\n") != std::string::npos) out.content = rest;
  }
  unconfirmed_.clear();
  buffer_.clear();
  call_open_ = false;
  return out;
}

bool ToolCallParser::advance(ToolCallStep& out) {
  switch (mode_) {
    case Mode::kLeading: {
      const size_t first = skip_json_space(buffer_, 0);
      if (first == buffer_.size()) return false;
      std::string_view rest = std::string_view(buffer_).substr(first);
      if (rest.starts_with(kPythonTag)) {
        unconfirmed_ += buffer_.substr(0, first + kPythonTag.size());
        buffer_.erase(0, first + kPythonTag.size());
        return true;
      }
      if (kPythonTag.starts_with(rest)) return false;
      if (rest.front() != '{') {
        to_plain(out);
        return false;
      }
      unconfirmed_ += buffer_.substr(0, first);
      buffer_.erase(0, first);
      mode_ = Mode::kObject;
      return true;
    }
    case Mode::kContent: return advance_content(out);
    case Mode::kOpen: return advance_open(out);
    case Mode::kObject: return advance_object(out);
    case Mode::kAfterObject: return advance_after_object(out);
    case Mode::kMistralName: return advance_mistral_name(out);
    case Mode::kPlain:
      out.content += buffer_;
      buffer_.clear();
      return false;
  }
  return false;
}

bool ToolCallParser::advance_content(ToolCallStep& out) {
  const std::string_view marker = start_marker(format_);
  const size_t found = buffer_.find(marker);
  if (found == std::string::npos) {
    // Hold back what may start the marker, and trailing space (dropped if a call follows).
    size_t hold = partial_marker_length(buffer_, marker);
    hold += trailing_space_length(std::string_view(buffer_).substr(0, buffer_.size() - hold));
    out.content += buffer_.substr(0, buffer_.size() - hold);
    buffer_.erase(0, buffer_.size() - hold);
    return false;
  }
  std::string_view before = std::string_view(buffer_).substr(0, found);
  const size_t text_end = before.size() - trailing_space_length(before);
  out.content += before.substr(0, text_end);
  unconfirmed_ = std::string(before.substr(text_end)) + std::string(marker);
  buffer_.erase(0, found + marker.size());
  in_array_ = false;
  mode_ = Mode::kOpen;
  return true;
}

bool ToolCallParser::advance_open(ToolCallStep& out) {
  const size_t first = skip_json_space(buffer_, 0);
  if (first == buffer_.size()) return false;
  const char c = buffer_[first];
  if (c == '{') {
    buffer_.erase(0, first);
    arguments_are_object_ = false;
    mode_ = Mode::kObject;
    return true;
  }
  const bool arrays = format_ == ToolCallFormat::kMistral || format_ == ToolCallFormat::kJsonArray;
  if (arrays && !in_array_ && c == '[') {
    unconfirmed_ += buffer_.substr(0, first + 1);
    buffer_.erase(0, first + 1);
    in_array_ = true;
    return true;
  }
  if (format_ == ToolCallFormat::kMistral && !in_array_) {
    buffer_.erase(0, first);
    mode_ = Mode::kMistralName;
    return true;
  }
  if (format_ == ToolCallFormat::kMistral && in_array_ && c == ']') {
    buffer_.erase(0, first + 1);
    mode_ = Mode::kContent;
    return true;
  }
  to_plain(out);
  return false;
}

bool ToolCallParser::advance_mistral_name(ToolCallStep& out) {
  const size_t found = buffer_.find(kMistralArgs);
  if (found == std::string::npos) {
    if (buffer_.size() > kMaxNameLength) to_plain(out);
    return false;
  }
  std::string name = buffer_.substr(0, found);
  name.erase(name.size() - trailing_space_length(name));
  buffer_.erase(0, found + kMistralArgs.size());
  const size_t first = skip_json_space(buffer_, 0);
  buffer_.erase(0, first);
  start_call(std::move(name), out);
  arguments_are_object_ = true;
  mode_ = Mode::kObject;
  return true;
}

bool ToolCallParser::advance_object(ToolCallStep& out) {
  if (buffer_.empty()) return false;
  if (buffer_.front() != '{') {  // only after mistral's [ARGS]
    abandon_call(out);
    return false;
  }
  if (arguments_are_object_) {
    const ValueScan scan = scan_json_value(buffer_, 0);
    if (scan.state == ScanState::kMalformed) {
      abandon_call(out);
      return false;
    }
    const size_t end = scan.state == ScanState::kComplete ? scan.end : buffer_.size();
    emit_arguments(std::string_view(buffer_).substr(0, end), out);
    if (scan.state != ScanState::kComplete) return false;
    close_call(end, !Json::parse(calls_.back().arguments, nullptr, false).is_discarded());
    return true;
  }
  const ObjectScan scan = scan_json_object(buffer_, 0);
  if (!call_open_ && !scan.members.empty() && !is_name_key(scan.members.front().key) &&
      !is_arguments_key(scan.members.front().key)) {
    to_plain(out);  // a JSON object, not a call
    return false;
  }
  const JsonMember* name = scan.find("name");
  if (!call_open_ && name && name->complete) {
    Json value = Json::parse(std::string_view(buffer_).substr(name->value_begin, name->value_end - name->value_begin),
                             nullptr, false);
    if (!value.is_string()) {
      to_plain(out);
      return false;
    }
    start_call(value.get<std::string>(), out);
  }
  if (scan.state == ScanState::kMalformed) {
    abandon_call(out);
    return false;
  }
  const JsonMember* arguments = scan.find("arguments");
  if (!arguments) arguments = scan.find("parameters");
  if (call_open_ && arguments && arguments->value_begin < buffer_.size()) {
    std::string_view value =
        std::string_view(buffer_).substr(arguments->value_begin, arguments->value_end - arguments->value_begin);
    if (value.front() != '"') {
      emit_arguments(value, out);
    } else if (arguments->complete) {
      // Arguments written as a JSON string: its text is the arguments.
      Json text = Json::parse(value, nullptr, false);
      emit_arguments(text.is_string() ? text.get<std::string>() : std::string(value), out);
    }
  }
  if (scan.state != ScanState::kComplete) return false;
  if (!call_open_) {  // a complete object without a name: not a call
    to_plain(out);
    return false;
  }
  if (!arguments) emit_arguments("{}", out);
  Json object = Json::parse(std::string_view(buffer_).substr(0, scan.end), nullptr, false);
  close_call(scan.end,
             !object.is_discarded() && !Json::parse(calls_.back().arguments, nullptr, false).is_discarded());
  return true;
}

bool ToolCallParser::advance_after_object(ToolCallStep& out) {
  const size_t first = skip_json_space(buffer_, 0);
  if (first == buffer_.size()) return false;
  std::string_view rest = std::string_view(buffer_).substr(first);
  const std::string_view end = end_marker(format_);
  if (!end.empty()) {
    if (rest.starts_with(end)) {
      buffer_.erase(0, first + end.size());
      mode_ = Mode::kContent;
      return true;
    }
    if (end.starts_with(rest)) return false;
    mode_ = Mode::kContent;  // the end marker is missing: go on with text
    return true;
  }
  const char c = rest.front();
  if (format_ == ToolCallFormat::kLlama3Json && (c == ';' || c == ',')) {
    buffer_.erase(0, first + 1);
    mode_ = Mode::kOpen;
    return true;
  }
  if ((format_ == ToolCallFormat::kMistral || format_ == ToolCallFormat::kJsonArray) && in_array_) {
    if (c == ',') {
      buffer_.erase(0, first + 1);
      mode_ = Mode::kOpen;
      return true;
    }
    if (c == ']') {
      buffer_.erase(0, first + 1);
      in_array_ = false;
      // json_array: the array is the whole output; only space may follow (dropped at the end).
      if (format_ == ToolCallFormat::kMistral) mode_ = Mode::kContent;
      return true;
    }
  }
  if (format_ == ToolCallFormat::kMistral) {
    mode_ = Mode::kContent;  // the next [TOOL_CALLS] may start another call
    return true;
  }
  to_plain(out);
  return false;
}

void ToolCallParser::start_call(std::string name, ToolCallStep& out) {
  ToolCall call{make_tool_call_id(ids_), std::move(name), ""};
  out.calls.push_back({static_cast<int32_t>(calls_.size()), call.id, call.name, ""});
  calls_.push_back(std::move(call));
  unconfirmed_.clear();
  call_open_ = true;
  arguments_sent_ = 0;
}

void ToolCallParser::emit_arguments(std::string_view arguments_so_far, ToolCallStep& out) {
  if (arguments_so_far.size() <= arguments_sent_) return;
  std::string_view piece = arguments_so_far.substr(arguments_sent_);
  arguments_sent_ = arguments_so_far.size();
  calls_.back().arguments += piece;
  const int32_t index = static_cast<int32_t>(calls_.size()) - 1;
  if (!out.calls.empty() && out.calls.back().index == index) out.calls.back().arguments += piece;
  else out.calls.push_back({index, "", "", std::string(piece)});
}

void ToolCallParser::close_call(size_t end, bool valid) {
  if (!valid) calls_valid_ = false;
  buffer_.erase(0, end);
  call_open_ = false;
  mode_ = Mode::kAfterObject;
}

void ToolCallParser::abandon_call(ToolCallStep& out) {
  if (call_open_) calls_valid_ = false;
  call_open_ = false;
  to_plain(out);
}

void ToolCallParser::to_plain(ToolCallStep& out) {
  mode_ = Mode::kPlain;
  out.content += unconfirmed_;
  unconfirmed_.clear();
  out.content += buffer_;
  buffer_.clear();
}

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text, std::optional<ToolCallIds> ids) {
  ToolCallParser parser(format, ids);
  ToolCallStep first = parser.feed(text);
  ToolCallStep last = parser.finish();
  if (!parser.calls_valid() || parser.calls().empty()) return {std::string(text), {}};
  return {first.content + last.content, parser.calls()};
}

}  // namespace brisk::server
