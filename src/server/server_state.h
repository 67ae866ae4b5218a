// What every endpoint handler shares: the engine, the model's tokenizer and chat template, the
// compiled structured-output grammars, the metrics, the event pump, and the set of engine
// requests in flight (shutdown cancels them). Thread-safe: handlers run on several Asio threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "brisk/engine.h"
#include "server/chat_output/chat_output.h"
#include "server/compiled_grammar_cache.h"
#include "server/event_pump.h"
#include "server/openai_request.h"
#include "server/server_metrics.h"
#include "tokenizer/chat_prompt.h"
#include "tokenizer/tokenizer.h"

namespace brisk::server {

// How chat output is split into reasoning, content and tool calls (brisk serve's
// --tool-call-parser and --reasoning-parser).
struct ChatParsing {
  std::string tool_call_parser = "auto";  // a format name, "auto" (the chat template's) or "none"
  std::string reasoning_parser = "none";  // "qwen3", "deepseek_r1", "auto" (the chat template's) or "none"
};
inline const std::vector<std::string> kToolCallParserNames = {"auto", "none", "hermes", "llama3_json", "mistral",
                                                             "internlm"};
inline const std::vector<std::string> kReasoningParserNames = {"auto", "none", "qwen3", "deepseek_r1"};

class ServerState {
 public:
  // Loads the folder's tokenizer and chat template when it has them. Throws kInvalidArgument
  // for an unknown parser name.
  ServerState(Engine& engine, std::string model_name, const std::filesystem::path& model_dir,
              const ChatParsing& parsing = {});

  Engine& engine() const { return engine_; }
  const std::string& model_name() const { return model_name_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  ServerMetrics& metrics() { return metrics_; }
  EventPump& pump() { return pump_; }

  // Each throws ApiError naming the field at fault.
  // 404 unless `requested` is empty or the served model's name.
  void check_model(const std::string& requested) const;
  // 400 when the folder has no tokenizer (`param` needs one).
  const Tokenizer& need_tokenizer(const char* param) const;
  // The chat template rendered (400 naming `param` when it cannot render these messages).
  std::string render_chat(const ChatRequest& chat, const char* param = "messages") const;
  // The chat's prompt ids: the chat template rendered, then tokenized without added specials
  // (the template holds BOS), as transformers' apply_chat_template(tokenize=True) does.
  std::vector<int32_t> encode_chat(const ChatRequest& chat, bool add_special_tokens = false) const;
  // A request's structured-output constraint compiled against the model's vocabulary, shared
  // with the earlier requests of the same constraint. 400 naming the constraint's field when the
  // folder has no tokenizer or the grammar does not compile.
  std::shared_ptr<const grammar::CompiledGrammar> compile(const OutputConstraint& constraint) const;
  // How this chat's output is parsed, given its rendered prompt.
  ChatOutputOptions chat_output(const ChatRequest& chat, std::string_view rendered_prompt) const;
  std::optional<ToolCallFormat> tool_call_format() const { return tool_call_format_; }
  bool reasoning_parser() const { return reasoning_; }
  // E.g. "tool calls hermes, reasoning not parsed" (the start-up line).
  std::string chat_output_summary() const;
  // 400 for ids outside the vocabulary, or a prompt whose tokens plus max_tokens exceed the
  // context (checked here so that the error comes before a stream starts). `max_tokens_param`:
  // the request's name for max_tokens.
  void check_prompt(const std::vector<int32_t>& ids, int64_t max_tokens, const char* param,
                    const char* max_tokens_param = "max_tokens") const;

  void add_active(uint64_t request_id);
  void remove_active(uint64_t request_id);
  void cancel_all();

 private:
  Engine& engine_;
  std::string model_name_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<CompiledGrammarCache> grammars_;  // with a tokenizer
  std::optional<ChatPrompt> chat_;
  std::string no_chat_reason_;  // why chat_ is empty
  std::optional<ToolCallFormat> tool_call_format_;
  bool reasoning_ = false;
  ServerMetrics metrics_;
  EventPump pump_;
  std::mutex active_mutex_;
  std::set<uint64_t> active_;
};

}  // namespace brisk::server
