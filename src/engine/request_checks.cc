#include "engine/request_checks.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace brisk {

std::string check_request(const Request& r, const RequestLimits& limits) {
  const SamplingParams& s = r.params;
  const int64_t vocab = limits.vocab_size;
  if (r.prompt.empty()) return "the prompt is empty: give at least one token";
  if (s.n < 1 || s.n > limits.max_num_seqs)
    return fmt::format("n must be in [1, max_num_seqs = {}], got {}", limits.max_num_seqs, s.n);
  if (s.top_logprobs < 0 || s.top_logprobs > std::min<int64_t>(kMaxTopLogprobs, vocab))
    return fmt::format("top_logprobs must be in [0, {}], got {}", std::min<int64_t>(kMaxTopLogprobs, vocab),
                       s.top_logprobs);
  for (size_t i = 0; i < r.prompt.size(); ++i)
    if (r.prompt[i] < 0 || r.prompt[i] >= vocab)
      return fmt::format("prompt token {} at index {} is outside the vocabulary [0, {})", r.prompt[i], i, vocab);
  if (s.prompt_logprobs && (*s.prompt_logprobs < 0 || *s.prompt_logprobs > std::min<int64_t>(kMaxTopLogprobs, vocab)))
    return fmt::format("prompt_logprobs must be in [0, {}], got {}", std::min<int64_t>(kMaxTopLogprobs, vocab),
                       *s.prompt_logprobs);
  if (s.max_tokens < 1 && !(s.max_tokens == 0 && s.prompt_logprobs))
    return fmt::format("max_tokens must be at least 1 (0 only with prompt_logprobs), got {}", s.max_tokens);
  if (s.min_tokens < 0 || s.min_tokens > s.max_tokens)
    return fmt::format("min_tokens must be in [0, max_tokens = {}], got {}", s.max_tokens, s.min_tokens);
  const int64_t total = static_cast<int64_t>(r.prompt.size()) + s.max_tokens;
  if (total > limits.max_model_len)
    return fmt::format("prompt of {} tokens plus max_tokens {} exceeds the model's context length of {} tokens",
                       r.prompt.size(), s.max_tokens, limits.max_model_len);
  const int64_t blocks = (total + limits.block_size - 1) / limits.block_size;
  if (blocks > limits.num_blocks)
    return fmt::format("prompt of {} tokens plus max_tokens {} needs {} KV blocks but the whole cache has {} "
                       "({} tokens)", r.prompt.size(), s.max_tokens, blocks, limits.num_blocks,
                       limits.num_blocks * limits.block_size);
  if (!(s.temperature >= 0)) return fmt::format("temperature must be >= 0, got {}", s.temperature);
  if (!(s.top_p > 0 && s.top_p <= 1)) return fmt::format("top_p must be in (0, 1], got {}", s.top_p);
  if (!(s.min_p >= 0 && s.min_p <= 1)) return fmt::format("min_p must be in [0, 1], got {}", s.min_p);
  if (s.top_k < -1) return fmt::format("top_k must be -1 or 0 (disabled) or positive, got {}", s.top_k);
  if (!(s.repetition_penalty > 0))
    return fmt::format("repetition_penalty must be > 0, got {}", s.repetition_penalty);
  if (!s.stop.empty() && !limits.has_tokenizer)
    return "stop strings need a tokenizer, and the model folder has none (use stop_token_ids)";
  if (s.grammar && s.grammar->vocab().vocab_size() > vocab)
    return fmt::format("the grammar's vocabulary has {} tokens, more than the model's {}",
                       s.grammar->vocab().vocab_size(), vocab);
  for (int32_t id : s.stop_token_ids)
    if (id < 0 || id >= vocab) return fmt::format("stop token id {} is outside the vocabulary [0, {})", id, vocab);
  std::vector<int32_t> biased;
  for (const auto& [token, bias] : s.logit_bias) {
    if (token < 0 || token >= vocab)
      return fmt::format("logit_bias token {} is outside the vocabulary [0, {})", token, vocab);
    if (!std::isfinite(bias)) return fmt::format("logit_bias of token {} must be finite, got {}", token, bias);
    biased.push_back(token);
  }
  std::sort(biased.begin(), biased.end());
  if (auto twice = std::adjacent_find(biased.begin(), biased.end()); twice != biased.end())
    return fmt::format("logit_bias names token {} twice", *twice);
  return {};
}

}  // namespace brisk
