#include "server/server_state.h"

#include "core/error.h"
#include "server/api_error.h"

namespace brisk::server {

ServerState::ServerState(Engine& engine, std::string model_name, const std::filesystem::path& model_dir,
                         const ChatParsing& parsing)
    : engine_(engine),
      model_name_(std::move(model_name)),
      tokenizer_(Tokenizer::from_folder_if_any(model_dir)),
      metrics_(model_name_) {
  if (tokenizer_) grammars_ = std::make_unique<CompiledGrammarCache>(*tokenizer_, engine_.eos_token_ids());
  try {
    chat_ = ChatPrompt::from_folder(model_dir);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
    no_chat_reason_ = e.what();
  }
  const std::string_view chat_template = chat_ ? std::string_view(chat_->template_source()) : std::string_view();
  if (parsing.tool_call_parser == "auto") {
    tool_call_format_ = detect_tool_call_format(chat_template);
  } else if (parsing.tool_call_parser != "none") {
    tool_call_format_ = tool_call_format_named(parsing.tool_call_parser);
    BRISK_CHECK(tool_call_format_, "--tool-call-parser '{}' is not known; choose from hermes, llama3_json, "
                    "mistral, internlm, auto or none", parsing.tool_call_parser);
  }
  if (parsing.reasoning_parser == "auto") {
    reasoning_ = template_has_reasoning(chat_template);
  } else if (parsing.reasoning_parser != "none") {
    BRISK_CHECK(is_reasoning_format_name(parsing.reasoning_parser), "--reasoning-parser '{}' is not known; "
                    "choose from qwen3, deepseek_r1, auto or none", parsing.reasoning_parser);
    reasoning_ = true;
  }
}

void ServerState::check_model(const std::string& requested) const {
  if (requested.empty() || requested == model_name_) return;
  throw ApiError(404, "invalid_request_error", "model", "model_not_found",
                 fmt::format("the model '{}' does not exist; this server serves '{}'", requested, model_name_));
}

const Tokenizer& ServerState::need_tokenizer(const char* param) const {
  if (!tokenizer_)
    throw_invalid(param, "'{}' needs a tokenizer and the model folder has none: send token ids instead", param);
  return *tokenizer_;
}

std::string ServerState::chat_output_summary() const {
  return fmt::format("tool calls {}, reasoning {}",
                     tool_call_format_ ? tool_call_format_name(*tool_call_format_) : "not parsed",
                     reasoning_ ? "split off (<think>)" : "not parsed");
}

std::string ServerState::render_chat(const ChatRequest& chat, const char* param) const {
  need_tokenizer(param);
  if (!chat_) throw_invalid(param, "chat needs a chat template: {}", no_chat_reason_);
  try {
    return chat_->render(chat.messages, chat.add_generation_prompt, chat.tools, chat.chat_template_kwargs);
  } catch (const Error& e) {
    // Templates reject conversations they cannot render (raise_exception), e.g. roles that do
    // not alternate: the client's input is at fault.
    throw_invalid(param, "the chat template cannot render these messages: {}", e.what());
  }
}

std::vector<int32_t> ServerState::encode_chat(const ChatRequest& chat, bool add_special_tokens) const {
  return need_tokenizer("messages").encode(render_chat(chat), add_special_tokens);
}

std::shared_ptr<const grammar::CompiledGrammar> ServerState::compile(const OutputConstraint& constraint) const {
  if (!grammars_)
    throw_invalid(constraint.param, "'{}' needs the model's tokenizer to constrain the output, and the model folder "
                  "has none", constraint.param);
  try {
    return grammars_->get(constraint);
  } catch (const Error& e) {
    throw_invalid(constraint.param, "'{}' does not compile to a grammar brisk can follow: {}", constraint.param,
                  e.what());
  }
}

ChatOutputOptions ServerState::chat_output(const ChatRequest& chat, std::string_view rendered_prompt) const {
  ChatOutputOptions options;
  const ToolChoice& choice = chat.tool_choice;
  if (choice.forced()) {
    // The grammar makes the output the calls themselves, whatever the model's own format; ids
    // still follow it (Mistral's templates check them in the next turn).
    options.tool_call_ids = tool_call_format_ ? tool_call_ids_of(*tool_call_format_) : ToolCallIds::kOpenAI;
    if (choice.mode == ToolChoice::Mode::kRequired) options.tool_calls = ToolCallFormat::kJsonArray;
    else options.named_tool = choice.function;
  } else if (!chat.tools.is_null() && choice.mode != ToolChoice::Mode::kNone) {
    // As vLLM: tool calls are parsed when the request offers tools and lets the model choose.
    options.tool_calls = tool_call_format_;
  }
  // The engine applies a grammar from the first token on: a constrained output holds no
  // reasoning to split off (and a prompt that opened <think> would make all of it reasoning).
  options.reasoning = reasoning_ && !chat.options.constraint;
  options.reasoning_open = options.reasoning && prompt_opens_reasoning(rendered_prompt);
  return options;
}

void ServerState::check_prompt(const std::vector<int32_t>& ids, int64_t max_tokens, const char* param,
                               const char* max_tokens_param) const {
  if (ids.empty()) throw_invalid(param, "the prompt is empty: give at least one token");
  const int64_t vocab = engine_.vocab_size();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= vocab)
      throw_invalid(param, "prompt token {} at index {} is outside the vocabulary [0, {})", ids[i], i, vocab);
  const int64_t context = engine_.max_model_len();
  const int64_t num_ids = static_cast<int64_t>(ids.size());
  if (num_ids + max_tokens > context)
    throw_invalid(num_ids >= context ? param : max_tokens_param,
                  "this model's maximum context length is {} tokens; the prompt has {} tokens and {} "
                  "is {} ({} in all): shorten the prompt or lower {}", context, num_ids, max_tokens_param, max_tokens,
                  num_ids + max_tokens, max_tokens_param);
}

void ServerState::add_active(uint64_t request_id) {
  std::lock_guard<std::mutex> lock(active_mutex_);
  active_.insert(request_id);
}

void ServerState::remove_active(uint64_t request_id) {
  std::lock_guard<std::mutex> lock(active_mutex_);
  active_.erase(request_id);
}

void ServerState::cancel_all() {
  std::lock_guard<std::mutex> lock(active_mutex_);
  for (uint64_t id : active_) engine_.cancel(id);
}

}  // namespace brisk::server
