// Helpers for the tests that run brisk's engine: draining request streams.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "brisk/engine.h"

namespace brisk::testing {

// Everything one request's stream produced.
struct RequestResult {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;  // per token
  std::string text;  // of every event, the terminal one's included
  FinishReason finish_reason = FinishReason::kError;
  std::string error;
  int64_t num_cached_prompt_tokens = 0;
  std::vector<PromptLogprob> prompt_logprobs;
  // Which of the sample's events (0: its first) carried non-empty prompt_logprobs; -1: none. The
  // drain fails if more than one does.
  int32_t prompt_logprobs_event = -1;
};
// Drains a stream (fails the test with an exception if it stalls for a minute).
RequestResult collect(RequestStream& stream);
// The same for a request of n samples: one result per sample index; throws if a sample's events
// come after its terminal event or an index is out of range. (A request rejected at admission
// has a single terminal event: collect it with num_samples 1.)
std::vector<RequestResult> collect_samples(RequestStream& stream, int32_t num_samples);
RequestResult run_request(Engine& engine, GenerationRequest request);
// A new model folder with a real tokenizer for random weights (--dummy-weights): the synthetic
// byte-level tokenizer (708 ids; eos <|end_of_text|> = 1) and the bf16 GQA test model's config
// with 768 logits.
std::filesystem::path synthetic_tokenizer_model_dir();

}  // namespace brisk::testing
