// Model output -> content and OpenAI tool calls, as the text streams in, for the tool-call
// formats of the supported model families (vLLM's parser names):
//   hermes       <tool_call>{"name": ..., "arguments": {...}}</tool_call>  (Hermes, Qwen2.5, Qwen3)
//   llama3_json  {"name": ..., "parameters": {...}}; {...}  as the whole output, optionally after
//                <|python_tag|>  (Llama 3.1-3.3)
//   mistral      [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]  or  [TOOL_CALLS]name[ARGS]{...}
//   internlm     <|action_start|><|plugin|>{"name": ..., "parameters": {...}}<|action_end|>  (InternLM2)
// and the JSON array [{"name": ..., "parameters": {...}}, ...] as the whole output, which
// tool_choice "required" makes any model write (tool_choice.h; no parser name).
// A call's name is reported once it is complete, its arguments (JSON text, as the model wrote
// it) as they arrive. Text before a call, trimmed at its end, is content.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::server {

enum class ToolCallFormat { kHermes, kLlama3Json, kMistral, kInternLM, kJsonArray };

std::optional<ToolCallFormat> tool_call_format_named(std::string_view name);
std::string_view tool_call_format_name(ToolCallFormat format);
// The format whose markup a chat template renders, if any.
std::optional<ToolCallFormat> detect_tool_call_format(std::string_view chat_template);
// Formats whose markers are special tokens: the output text must keep special tokens.
bool tool_call_format_needs_special_tokens(ToolCallFormat format);

// How call ids look: OpenAI's "call_" and 24 hex digits, or the 9 alphanumerics that Mistral's
// chat templates accept (when the calls come back in the next turn).
enum class ToolCallIds { kOpenAI, kMistral };
ToolCallIds tool_call_ids_of(ToolCallFormat format);
std::string make_tool_call_id(ToolCallIds ids);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct ToolCallDelta {
  int32_t index = 0;
  std::string id;         // on a call's first delta only
  std::string name;       // on a call's first delta only
  std::string arguments;  // new argument text
};

struct ToolCallStep {
  std::string content;
  std::vector<ToolCallDelta> calls;
};

class ToolCallParser {
 public:
  // `ids`: unset, the format's own.
  explicit ToolCallParser(ToolCallFormat format, std::optional<ToolCallIds> ids = std::nullopt)
      : format_(format), ids_(ids.value_or(tool_call_ids_of(format))) {}

  // What `text`, appended to the output, makes final.
  ToolCallStep feed(std::string_view text);
  // The end of the output: what was held back.
  ToolCallStep finish();

  // The calls begun so far (arguments so far).
  const std::vector<ToolCall>& calls() const { return calls_; }
  // False when a call did not parse as a JSON object or ended unfinished.
  bool calls_valid() const { return calls_valid_; }

 private:
  enum class Mode {
    kLeading,      // llama3_json: before the first non-space character
    kContent,      // text, looking for the start marker
    kOpen,         // after a start marker or separator: expecting a call
    kObject,       // inside a call's JSON object (buffer_ starts with '{')
    kAfterObject,  // after a call: end marker, separator or content
    kMistralName,  // mistral's name[ARGS]{...} form: reading the name
    kPlain,        // no calls from here on
  };
  // One transition; false when it needs more text.
  bool advance(ToolCallStep& out);
  bool advance_content(ToolCallStep& out);
  bool advance_open(ToolCallStep& out);
  bool advance_object(ToolCallStep& out);
  bool advance_after_object(ToolCallStep& out);
  bool advance_mistral_name(ToolCallStep& out);
  void start_call(std::string name, ToolCallStep& out);
  void emit_arguments(std::string_view arguments_so_far, ToolCallStep& out);
  // The open call's object ends at buffer_[end]; `valid`: it parsed as JSON.
  void close_call(size_t end, bool valid);
  // The open call (if any) is not valid JSON; the rest is content.
  void abandon_call(ToolCallStep& out);
  // Gives up on calls from here: the rest is content.
  void to_plain(ToolCallStep& out);

  ToolCallFormat format_;
  ToolCallIds ids_;
  Mode mode_ = format_ == ToolCallFormat::kLlama3Json ? Mode::kLeading
               : format_ == ToolCallFormat::kJsonArray ? Mode::kOpen
                                                        : Mode::kContent;
  std::string buffer_;             // received, not yet final
  // Markup read since the last call began (a start marker; llama3_json's leading space and
  // <|python_tag|>): content after all if no call follows.
  std::string unconfirmed_;
  std::vector<ToolCall> calls_;
  bool call_open_ = false;         // calls_.back() is still receiving arguments
  size_t arguments_sent_ = 0;      // of the open call
  bool arguments_are_object_ = false;  // mistral's [ARGS] form: the whole object is the arguments
  bool in_array_ = false;          // mistral's [...] form, json_array's array
  bool calls_valid_ = true;
};

struct ParsedToolCalls {
  std::string content;
  std::vector<ToolCall> calls;
};
// A whole output. When a call does not parse, the whole output is content, as vLLM returns it.
ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text,
                                 std::optional<ToolCallIds> ids = std::nullopt);

}  // namespace brisk::server
