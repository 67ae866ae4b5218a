// libFuzzer entry point for the request parsers (server/openai_request.h, anthropic_request.h,
// responses_request.h): any byte string as a request body. ctest builds it with clang (tests/fuzz/CMakeLists.txt) and runs it briefly;
// for a longer run: build/cpu/tests/fuzz/openai_request_fuzz -max_total_time=600 -dict=tests/fuzz/openai_request.dict CORPUS
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/responses_request.h"

namespace {

// What a parser accepts must be safe to hand to the engine; anything else is a bug. max_tokens 0
// only scores a prompt (completions with echo).
void check(const brisk::server::GenerationOptions& o, bool scores_prompt = false) {
  const brisk::SamplingParams& s = o.sampling;
  const bool ok = s.n >= 1 && s.n <= 128 && s.temperature >= 0 && std::isfinite(s.temperature) && s.top_p > 0 &&
                  s.top_p <= 1 && s.min_p >= 0 && s.min_p <= 1 && s.top_k >= -1 && s.repetition_penalty > 0 &&
                  s.top_logprobs >= 0 && s.top_logprobs <= brisk::kMaxTopLogprobs && s.min_tokens >= 0 &&
                  (!o.max_tokens || *o.max_tokens >= (scores_prompt ? 0 : 1)) && (!o.include_usage || o.stream);
  if (!ok) __builtin_trap();
  for (const std::string& stop : s.stop)
    if (stop.empty()) __builtin_trap();
}

template <typename Parse>
void run(Parse parse) {
  try {
    parse();
  } catch (const brisk::server::ApiError& e) {
    // Rejection must be a client error with a body the client can read (serialized the way the
    // server does: messages may quote invalid UTF-8 from the body, replaced by U+FFFD).
    const std::string body = e.body().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (e.status() != 400 || body.find("\"invalid_request_error\"") == std::string::npos) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  using namespace brisk::server;
  run([&] {
    CompletionRequest r = parse_completion_request(body);
    check(r.options, r.echo);
  });
  run([&] {
    ChatRequest r = parse_chat_request(body);
    check(r.options);
    if (!r.messages.is_array() || r.messages.empty()) __builtin_trap();
  });
  run([&] {
    ChatRequest r = parse_messages_request(body);
    check(r.options);
    if (!r.messages.is_array() || r.messages.empty() || !r.options.max_tokens) __builtin_trap();
  });
  run([&] {
    ResponsesRequest r = parse_responses_request(body);
    check(r.chat.options);
    if (!r.chat.messages.is_array() || r.chat.messages.empty()) __builtin_trap();
  });
  run([&] { parse_tokenize_request(body); });
  run([&] { parse_detokenize_request(body); });
  return 0;
}
