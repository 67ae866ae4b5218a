// Model output -> reasoning and answer, for models that think between <think> and </think>
// (Qwen3, DeepSeek-R1, SmolLM3 and their kin), as the text streams in. The output is reasoning
// when it starts with <think>, or from its start when the prompt opened <think> itself
// (DeepSeek-R1's template, thinking-only Qwen3 releases); </think> ends it. Space right after
// either tag is dropped.
#pragma once

#include <string>
#include <string_view>

namespace brisk::server {

// vLLM's names for this format: "qwen3", "deepseek_r1".
bool is_reasoning_format_name(std::string_view name);
// True when a chat template makes models think between <think> and </think>.
bool template_has_reasoning(std::string_view chat_template);
// True when the rendered prompt ends inside an open <think> (only space after it).
bool prompt_opens_reasoning(std::string_view prompt);

struct ReasoningStep {
  std::string reasoning;
  std::string content;
};

class ReasoningParser {
 public:
  explicit ReasoningParser(bool starts_in_reasoning)
      : mode_(starts_in_reasoning ? Mode::kReasoning : Mode::kStart), at_segment_start_(true) {}

  ReasoningStep feed(std::string_view text);
  ReasoningStep finish();

 private:
  enum class Mode { kStart, kReasoning, kContent };
  // One transition; false when it needs more text.
  bool advance(ReasoningStep& out);
  // Appends text to the segment of the current mode, dropping space at the segment's start.
  void emit(std::string_view text, ReasoningStep& out);

  Mode mode_;
  bool at_segment_start_;
  std::string buffer_;
};

}  // namespace brisk::server
