#include "server/chat_output/reasoning_parser.h"

#include "server/chat_output/text_markers.h"

namespace brisk::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

}  // namespace

bool is_reasoning_format_name(std::string_view name) { return name == "qwen3" || name == "deepseek_r1"; }

bool template_has_reasoning(std::string_view chat_template) {
  return chat_template.find(kOpen) != std::string_view::npos && chat_template.find(kClose) != std::string_view::npos;
}

bool prompt_opens_reasoning(std::string_view prompt) {
  const size_t open = prompt.rfind(kOpen);
  if (open == std::string_view::npos) return false;
  return leading_space_length(prompt.substr(open + kOpen.size())) == prompt.size() - open - kOpen.size();
}

ReasoningStep ReasoningParser::feed(std::string_view text) {
  buffer_ += text;
  ReasoningStep out;
  while (advance(out)) {
  }
  return out;
}

ReasoningStep ReasoningParser::finish() {
  ReasoningStep out;
  if (mode_ == Mode::kStart) mode_ = Mode::kContent;
  emit(buffer_, out);
  buffer_.clear();
  return out;
}

bool ReasoningParser::advance(ReasoningStep& out) {
  switch (mode_) {
    case Mode::kStart: {
      std::string_view rest = std::string_view(buffer_).substr(leading_space_length(buffer_));
      if (rest.empty() || (rest.size() < kOpen.size() && kOpen.starts_with(rest))) return false;
      if (rest.starts_with(kOpen)) {
        buffer_.erase(0, buffer_.size() - rest.size() + kOpen.size());
        mode_ = Mode::kReasoning;
      } else {
        mode_ = Mode::kContent;
      }
      return true;
    }
    case Mode::kReasoning: {
      const size_t close = buffer_.find(kClose);
      if (close == std::string::npos) {
        const size_t hold = partial_marker_length(buffer_, kClose);
        emit(std::string_view(buffer_).substr(0, buffer_.size() - hold), out);
        buffer_.erase(0, buffer_.size() - hold);
        return false;
      }
      emit(std::string_view(buffer_).substr(0, close), out);
      buffer_.erase(0, close + kClose.size());
      mode_ = Mode::kContent;
      at_segment_start_ = true;
      return true;
    }
    case Mode::kContent:
      emit(buffer_, out);
      buffer_.clear();
      return false;
  }
  return false;
}

void ReasoningParser::emit(std::string_view text, ReasoningStep& out) {
  if (at_segment_start_) {
    text.remove_prefix(leading_space_length(text));
    if (text.empty()) return;
    at_segment_start_ = false;
  }
  (mode_ == Mode::kReasoning ? out.reasoning : out.content) += text;
}

}  // namespace brisk::server
