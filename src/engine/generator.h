// Runs one request to completion on a model: prefill the prompt, then decode token by token,
// sampling on the backend, until an eos/stop token or max_tokens. The serving engine (batching,
// block pool, prefix cache) builds on the same model and sampling ops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/llama_model.h"

namespace brisk {

struct GenerateOptions {
  SamplingRow sampling;               // temperature 0 = greedy
  std::optional<uint64_t> seed;       // none: a random seed
  int64_t max_tokens = 64;
  bool ignore_eos = false;            // keep going past eos (benchmarks, goldens)
  std::vector<int32_t> stop_token_ids;
  int block_size = 16;
};

enum class FinishReason { kStop, kLength };
std::string_view finish_reason_name(FinishReason reason);

struct GenerateResult {
  std::vector<int32_t> token_ids;  // generated tokens (a final stop token included)
  std::vector<float> logprobs;     // log-probability of each generated token under the raw logits
  FinishReason finish_reason = FinishReason::kLength;
};

// Checks the prompt and options against the model (ids in range, context length) and throws
// kInvalidArgument naming the problem before any work is done.
void validate_request(const LlamaModel& model, const std::vector<int32_t>& prompt, const GenerateOptions& options);

GenerateResult generate(LlamaModel& model, const std::vector<int32_t>& prompt, const GenerateOptions& options);

// The eos ids of a model: generation_config.json's, else config.json's.
std::vector<int32_t> eos_token_ids(const LlamaModel& model);

}  // namespace brisk
