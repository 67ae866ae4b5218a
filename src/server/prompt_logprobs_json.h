// vLLM's "prompt_logprobs" of a response (per choice in completions, per response in chat): null
// for the first prompt token, then per position an object keyed by token id,
//   {"<id>": {"logprob": f, "rank": r, "decoded_token": "..."}, ...}
// holding the prompt token and the num_top most likely tokens (ranks 1..num_top; one entry per id).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "tokenizer/tokenizer.h"

namespace brisk::server {

// tokenizer null: decoded tokens read "token_id:N", as elsewhere in responses.
nlohmann::json prompt_logprobs_json(const std::vector<PromptLogprob>& scores, int32_t num_top,
                                    const Tokenizer* tokenizer);

}  // namespace brisk::server
