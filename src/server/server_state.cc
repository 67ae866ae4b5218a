#include "server/server_state.h"

#include "server/api_error.h"

namespace brisk::server {

ServerState::ServerState(Engine& engine, std::string model_name, const std::filesystem::path& model_dir)
    : engine_(engine), model_name_(std::move(model_name)), tokenizer_(Tokenizer::from_folder_if_any(model_dir)) {
  try {
    chat_ = ChatPrompt::from_folder(model_dir);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
    no_chat_reason_ = e.what();
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

std::vector<int32_t> ServerState::encode_chat(const ChatRequest& chat, bool add_special_tokens) const {
  const Tokenizer& tokenizer = need_tokenizer("messages");
  if (!chat_) throw_invalid("messages", "chat needs a chat template: {}", no_chat_reason_);
  std::string rendered;
  try {
    rendered = chat_->render(chat.messages, chat.add_generation_prompt, chat.tools, chat.chat_template_kwargs);
  } catch (const Error& e) {
    // Templates reject conversations they cannot render (raise_exception), e.g. roles that do
    // not alternate: the client's input is at fault.
    throw_invalid("messages", "the chat template cannot render these messages: {}", e.what());
  }
  return tokenizer.encode(rendered, add_special_tokens);
}

void ServerState::check_prompt(const std::vector<int32_t>& ids, int64_t max_tokens, const char* param) const {
  if (ids.empty()) throw_invalid(param, "the prompt is empty: give at least one token");
  const int64_t vocab = engine_.vocab_size();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= vocab)
      throw_invalid(param, "prompt token {} at index {} is outside the vocabulary [0, {})", ids[i], i, vocab);
  const int64_t context = engine_.max_model_len();
  const int64_t num_ids = static_cast<int64_t>(ids.size());
  if (num_ids + max_tokens > context)
    throw_invalid(num_ids >= context ? param : "max_tokens",
                  "this model's maximum context length is {} tokens; the prompt has {} tokens and max_tokens "
                  "is {} ({} in all): shorten the prompt or lower max_tokens", context, num_ids, max_tokens,
                  num_ids + max_tokens);
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
