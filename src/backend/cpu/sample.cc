// Token sampling with vLLM's semantics, one sequence per task:
//   1. out_logprobs: log_softmax of the raw logits at the chosen token;
//   2. repetition penalty over prompt and output tokens, then frequency and presence penalties
//      over output tokens (all modify the logits in place);
//   3. temperature < 1e-5 (vLLM's epsilon; 0 is the usual spelling): greedy argmax, lowest index
//      on ties;
//   4. otherwise logits /= temperature, then top_k, top_p and min_p set dropped logits to -inf,
//      and one token is drawn by inverse CDF (in vocabulary order) with sampling_uniform(seed,
//      step).
// On return the logits hold what the draw saw: penalised, and for sampled rows also scaled and
// filtered.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {
namespace {

// Below this a temperature is greedy, as in vLLM: dividing by it would overflow the logits.
constexpr float kMinTemperature = 1e-5f;

// splitmix64's finaliser (Steele, Lea and Flood, 2014) applied to x + golden-ratio increment.
uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Ragged token lists: row s owns tokens[start[s], start[s + 1]). Empty when not given.
struct TokenLists {
  const int32_t* start = nullptr;  // [num_seqs + 1]
  const int32_t* tokens = nullptr;  // [total]
  std::span<const int32_t> row(int64_t s) const {
    if (start == nullptr) return {};
    return {tokens + start[s], static_cast<size_t>(start[s + 1] - start[s])};
  }
};

// The lists' contents; check_op_params has checked their views.
TokenLists check_token_lists(std::string_view start_name, const TensorView& start,
                             std::string_view tokens_name, const TensorView& tokens,
                             int64_t num_seqs, int64_t vocab) {
  if (start.empty()) return {};
  TokenLists lists{start.data_as<const int32_t>(), tokens.data_as<const int32_t>()};
  const int64_t total = tokens.size(0);
  for (int64_t s = 0; s < num_seqs; ++s) {
    BRISK_CHECK(0 <= lists.start[s] && lists.start[s] <= lists.start[s + 1] &&
                    lists.start[s + 1] <= total,
                "sample: {}[{}..{}] = [{}, {}] is not an increasing range inside {} ({})",
                start_name, s, s + 1, lists.start[s], lists.start[s + 1], tokens_name,
                tokens.describe());
    for (int32_t token : lists.row(s)) {
      BRISK_CHECK(token >= 0 && token < vocab,
                  "sample: {} of sequence {} holds token {} outside the vocabulary of {}",
                  tokens_name, s, token, vocab);
    }
  }
  return lists;
}

void check_row(const SamplingRow& row, int64_t s) {
  BRISK_CHECK(row.temperature >= 0.0f && std::isfinite(row.temperature),
              "sample: rows[{}].temperature is {} but must be finite and >= 0", s, row.temperature);
  BRISK_CHECK(row.top_p > 0.0f && row.top_p <= 1.0f,
              "sample: rows[{}].top_p is {} but must be in (0, 1]", s, row.top_p);
  BRISK_CHECK(row.min_p >= 0.0f && row.min_p <= 1.0f,
              "sample: rows[{}].min_p is {} but must be in [0, 1]", s, row.min_p);
  BRISK_CHECK(row.repetition_penalty > 0.0f && std::isfinite(row.repetition_penalty),
              "sample: rows[{}].repetition_penalty is {} but must be finite and > 0", s,
              row.repetition_penalty);
  BRISK_CHECK(std::isfinite(row.frequency_penalty) && std::isfinite(row.presence_penalty),
              "sample: rows[{}] has frequency_penalty {} and presence_penalty {}; both must be "
              "finite", s, row.frequency_penalty, row.presence_penalty);
}

void apply_penalties(std::span<float> logits, const SamplingRow& row,
                     std::span<const int32_t> prompt, std::span<const int32_t> output) {
  if (row.repetition_penalty != 1.0f) {
    // Each distinct token is penalised once, however often it occurs.
    std::vector<int32_t> seen(prompt.begin(), prompt.end());
    seen.insert(seen.end(), output.begin(), output.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t token : seen) {
      float& logit = logits[token];
      logit = logit > 0.0f ? logit / row.repetition_penalty : logit * row.repetition_penalty;
    }
  }
  if (row.frequency_penalty == 0.0f && row.presence_penalty == 0.0f) return;
  std::vector<int32_t> sorted(output.begin(), output.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size();) {
    size_t run_end = i;
    while (run_end < sorted.size() && sorted[run_end] == sorted[i]) ++run_end;
    const float count = static_cast<float>(run_end - i);
    logits[sorted[i]] -= row.frequency_penalty * count + row.presence_penalty;
    i = run_end;
  }
}

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

// log(sum(exp(logits))) with max subtraction, summed in double.
double log_sum_exp(std::span<const float> logits) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  if (!std::isfinite(max_logit)) return max_logit;
  double sum = 0.0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit - max_logit));
  return max_logit + std::log(sum);
}

// Keeps the logits >= the k-th largest (ties with it survive, as in vLLM).
void apply_top_k(std::span<float> logits, int32_t top_k) {
  if (top_k <= 0 || top_k >= static_cast<int64_t>(logits.size())) return;
  std::vector<float> sorted(logits.begin(), logits.end());
  std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
  const float threshold = sorted[top_k - 1];
  for (float& logit : logits) {
    if (logit < threshold) logit = -INFINITY;
  }
}

// Keeps the smallest set of most probable tokens whose probability sums to >= top_p (at least
// one); among equal logits the lower token id comes first.
void apply_top_p(std::span<float> logits, float top_p) {
  if (top_p >= 1.0f) return;
  std::vector<int32_t> order;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > -INFINITY) order.push_back(static_cast<int32_t>(i));
  }
  if (order.empty()) return;
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const float max_logit = logits[order[0]];
  std::vector<double> weights(order.size());
  double total = 0.0;
  for (size_t i = 0; i < order.size(); ++i) {
    weights[i] = std::exp(static_cast<double>(logits[order[i]] - max_logit));
    total += weights[i];
  }
  double cumulative = 0.0;
  size_t keep = 0;
  while (keep < order.size()) {
    cumulative += weights[keep++];
    if (cumulative >= top_p * total) break;
  }
  for (size_t i = keep; i < order.size(); ++i) logits[order[i]] = -INFINITY;
}

// Drops tokens whose probability is below min_p times the largest probability.
void apply_min_p(std::span<float> logits, float min_p) {
  if (min_p <= 0.0f) return;
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  if (!std::isfinite(max_logit)) return;
  for (float& logit : logits) {
    // prob / max_prob = exp(logit - max_logit): the normaliser cancels.
    if (std::exp(logit - max_logit) < min_p) logit = -INFINITY;
  }
}

// Inverse CDF over the surviving tokens in vocabulary order.
int32_t draw(std::span<const float> logits, double uniform) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  if (!std::isfinite(max_logit)) return argmax(logits);  // nothing left to draw from
  std::vector<double> weights(logits.size());
  double total = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    weights[i] = std::exp(static_cast<double>(logits[i] - max_logit));
    total += weights[i];
  }
  const double target = uniform * total;
  double cumulative = 0.0;
  int32_t last_positive = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (weights[i] <= 0.0) continue;
    cumulative += weights[i];
    last_positive = static_cast<int32_t>(i);
    if (cumulative > target) return last_positive;
  }
  return last_positive;  // only reachable through rounding when uniform is close to 1
}

int32_t sample_row(std::span<float> logits, const SamplingRow& row,
                   std::span<const int32_t> prompt, std::span<const int32_t> output) {
  apply_penalties(logits, row, prompt, output);
  if (row.temperature < kMinTemperature) return argmax(logits);
  for (float& logit : logits) logit /= row.temperature;
  apply_top_k(logits, row.top_k);
  apply_top_p(logits, row.top_p);
  apply_min_p(logits, row.min_p);
  return draw(logits, sampling_uniform(row.seed, row.step));
}

}  // namespace

// The uniform draw for (seed, step), all arithmetic modulo 2^64:
//   splitmix64(x) = mix(x + 0x9E3779B97F4A7C15), where
//   mix(z)        = z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB;
//                   z ^= z >> 31
//   bits          = splitmix64(splitmix64(seed) ^ step)
//   uniform       = (bits >> 11) * 2^-53          (the top 53 bits as a double in [0, 1))
// Counter-based (no state carried between steps), so a request's draws depend only on its seed
// and the index of the token, never on batching or on which other requests ran.
double sampling_uniform(uint64_t seed, uint64_t step) {
  const uint64_t bits = splitmix64(splitmix64(seed) ^ step);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

void sample(const SampleParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_seqs = p.logits.size(0);
  const int64_t vocab = p.logits.size(1);
  for (int64_t s = 0; s < num_seqs; ++s) check_row(p.rows[s], s);
  const TokenLists prompts = check_token_lists("prompt_start", p.prompt_start, "prompt_tokens",
                                               p.prompt_tokens, num_seqs, vocab);
  const TokenLists outputs = check_token_lists("output_start", p.output_start, "output_tokens",
                                               p.output_tokens, num_seqs, vocab);

  int32_t* out_tokens = p.out_tokens.data_as<int32_t>();
  float* out_logprobs = p.out_logprobs.empty() ? nullptr : p.out_logprobs.data_as<float>();
  parallel_for(num_seqs, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> raw;
    for (int64_t s = begin; s < end; ++s) {
      std::span<float> logits(p.logits.data_as<float>() + s * p.logits.stride(0), vocab);
      if (out_logprobs != nullptr) raw.assign(logits.begin(), logits.end());
      const int32_t token = sample_row(logits, p.rows[s], prompts.row(s), outputs.row(s));
      out_tokens[s] = token;
      if (out_logprobs != nullptr) {
        out_logprobs[s] = static_cast<float>(raw[token] - log_sum_exp(raw));
      }
    }
  });
}

void top_logprobs(const TopLogprobsParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_seqs = p.logits.size(0);
  const int64_t vocab = p.logits.size(1);
  const int64_t k = p.out_tokens.size(1);
  parallel_for(num_seqs, 1, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> order(vocab);
    for (int64_t s = begin; s < end; ++s) {
      std::span<const float> logits(p.logits.data_as<const float>() + s * p.logits.stride(0), vocab);
      const double lse = log_sum_exp(logits);
      std::iota(order.begin(), order.end(), 0);
      // Larger logit first, lower token id among equals.
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
      for (int64_t j = 0; j < k; ++j) {
        p.out_tokens.data_as<int32_t>()[s * k + j] = order[j];
        p.out_logprobs.data_as<float>()[s * k + j] = static_cast<float>(logits[order[j]] - lse);
      }
    }
  });
}

void token_logprobs(const TokenLogprobsParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_seqs = p.logits.size(0);
  const int64_t vocab = p.logits.size(1);
  const int32_t* tokens = p.tokens.data_as<const int32_t>();
  for (int64_t s = 0; s < num_seqs; ++s)
    BRISK_CHECK(tokens[s] >= 0 && tokens[s] < vocab, "token_logprobs: tokens[{}] = {} is outside the vocabulary "
                "of logits {}", s, tokens[s], p.logits.describe());
  parallel_for(num_seqs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      std::span<const float> logits(p.logits.data_as<const float>() + s * p.logits.stride(0), vocab);
      const float target = logits[tokens[s]];
      const auto num_larger = std::count_if(logits.begin(), logits.end(), [&](float x) { return x > target; });
      p.out_logprobs.data_as<float>()[s] = static_cast<float>(target - log_sum_exp(logits));
      p.out_ranks.data_as<int32_t>()[s] = static_cast<int32_t>(num_larger + 1);
    }
  });
}

}  // namespace brisk::cpu
