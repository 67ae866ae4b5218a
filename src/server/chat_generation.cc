#include "server/chat_generation.h"

#include <algorithm>

#include "server/generation_response.h"

namespace brisk::server {

PreparedChat prepare_chat(const ServerState& state, const ChatRequest& request, const ChatFieldNames& names) {
  state.check_model(request.options.model);
  PreparedChat chat;
  const std::string rendered = state.render_chat(request, names.messages);
  chat.prompt = state.need_tokenizer(names.messages).encode(rendered, /*add_special_tokens=*/false);
  // Without max_tokens a chat may use the rest of the context, as vLLM allows.
  const int64_t room = state.engine().max_model_len() - static_cast<int64_t>(chat.prompt.size());
  chat.sampling = resolve_sampling(state, request.options, std::max<int64_t>(room, 1));
  state.check_prompt(chat.prompt, chat.sampling.max_tokens, names.messages, names.max_tokens);
  chat.output = state.chat_output(request, rendered);
  // Some formats mark calls with special tokens, which the text must then keep.
  if (chat.output.tool_calls && tool_call_format_needs_special_tokens(*chat.output.tool_calls))
    chat.sampling.skip_special_tokens = false;
  return chat;
}

}  // namespace brisk::server
