#include "engine/generator.h"

#include <algorithm>
#include <random>

#include "core/error.h"

namespace brisk {

std::string_view finish_reason_name(FinishReason reason) {
  return reason == FinishReason::kStop ? "stop" : "length";
}

std::vector<int32_t> eos_token_ids(const LlamaModel& model) {
  const auto& from_generation = model.generation_config().eos_token_ids;
  const auto& ids = from_generation.empty() ? model.config().eos_token_ids : from_generation;
  return std::vector<int32_t>(ids.begin(), ids.end());
}

void validate_request(const LlamaModel& model, const std::vector<int32_t>& prompt, const GenerateOptions& options) {
  const int64_t vocab = model.config().vocab_size;
  BRISK_CHECK(!prompt.empty(), "the prompt is empty: give at least one token");
  for (size_t i = 0; i < prompt.size(); ++i)
    BRISK_CHECK(prompt[i] >= 0 && prompt[i] < vocab, "prompt token {} at index {} is outside the vocabulary [0, {})",
                prompt[i], i, vocab);
  BRISK_CHECK(options.max_tokens >= 1, "max_tokens must be at least 1, got {}", options.max_tokens);
  const int64_t total = static_cast<int64_t>(prompt.size()) + options.max_tokens;
  BRISK_CHECK(total <= model.max_model_len(),
              "prompt of {} tokens plus max_tokens {} exceeds the model's context length of {} tokens",
              prompt.size(), options.max_tokens, model.max_model_len());
  const SamplingRow& s = options.sampling;
  BRISK_CHECK(s.temperature >= 0, "temperature must be >= 0, got {}", s.temperature);
  BRISK_CHECK(s.top_p > 0 && s.top_p <= 1, "top_p must be in (0, 1], got {}", s.top_p);
  BRISK_CHECK(s.min_p >= 0 && s.min_p <= 1, "min_p must be in [0, 1], got {}", s.min_p);
  BRISK_CHECK(s.top_k >= -1, "top_k must be -1 (disabled), 0 (disabled) or positive, got {}", s.top_k);
  BRISK_CHECK(s.repetition_penalty > 0, "repetition_penalty must be > 0, got {}", s.repetition_penalty);
  BRISK_CHECK(options.block_size > 0, "block_size must be positive, got {}", options.block_size);
}

GenerateResult generate(LlamaModel& model, const std::vector<int32_t>& prompt, const GenerateOptions& options) {
  validate_request(model, prompt, options);
  Backend& backend = model.backend();
  const int64_t vocab = model.config().vocab_size;
  const int64_t capacity = static_cast<int64_t>(prompt.size()) + options.max_tokens;
  const int64_t num_blocks = (capacity + options.block_size - 1) / options.block_size;
  KvCache cache(model.config(), backend, model.activation_dtype(), num_blocks, options.block_size);

  std::vector<int32_t> stop_ids = options.stop_token_ids;
  if (!options.ignore_eos) {
    auto eos = eos_token_ids(model);
    stop_ids.insert(stop_ids.end(), eos.begin(), eos.end());
  }
  SamplingRow row = options.sampling;
  row.seed = options.seed ? *options.seed : std::random_device{}();

  SequenceChunk chunk;
  chunk.tokens = prompt;
  for (int32_t b = 0; b < num_blocks; ++b) chunk.block_table.push_back(b);

  GenerateResult result;
  std::vector<int32_t> prompt_start{0, static_cast<int32_t>(prompt.size())};
  Tensor logits(backend.allocator(), DType::kF32, {1, vocab});
  Tensor sampled(backend.allocator(), DType::kI32, {1});
  Tensor logprob(backend.allocator(), DType::kF32, {1});
  Tensor host_token(cpu_allocator(), DType::kI32, {1});
  Tensor host_logprob(cpu_allocator(), DType::kF32, {1});
  while (true) {
    BatchInputs inputs({chunk}, options.block_size);
    model.forward(inputs.upload(backend), cache, logits);

    row.step = result.token_ids.size();
    std::vector<int32_t> output_start{0, static_cast<int32_t>(result.token_ids.size())};
    std::vector<Tensor> keep;
    auto ids = [](const std::vector<int32_t>& v) {
      return TensorView(const_cast<int32_t*>(v.data()), DType::kI32, {static_cast<int64_t>(v.size())});
    };
    SampleParams p;
    p.logits = logits;
    p.rows = to_backend(backend, TensorView(&row, DType::kU8, {1, sizeof(SamplingRow)}), keep)
                 .data_as<const SamplingRow>();
    p.prompt_start = to_backend(backend, ids(prompt_start), keep);
    p.prompt_tokens = to_backend(backend, ids(prompt), keep);
    if (!result.token_ids.empty()) {
      p.output_start = to_backend(backend, ids(output_start), keep);
      p.output_tokens = to_backend(backend, ids(result.token_ids), keep);
    }
    p.out_tokens = sampled;
    p.out_logprobs = logprob;
    backend.sample(p);
    backend.copy(host_token, sampled);
    backend.copy(host_logprob, logprob);

    const int32_t token = host_token.data_as<int32_t>()[0];
    result.token_ids.push_back(token);
    result.logprobs.push_back(host_logprob.data_as<float>()[0]);
    if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    if (static_cast<int64_t>(result.token_ids.size()) >= options.max_tokens) {
      result.finish_reason = FinishReason::kLength;
      break;
    }
    chunk.num_cached += static_cast<int32_t>(chunk.tokens.size());
    chunk.tokens = {token};
  }
  return result;
}

}  // namespace brisk
