#include "engine/model_runner.h"

#include <algorithm>

namespace brisk {

ModelRunner::ModelRunner(LlamaModel& model, int64_t num_blocks, int block_size, bool use_graphs,
                         int64_t max_num_seqs)
    : model_(model), cache_(model.config(), model.backend(), model.activation_dtype(), num_blocks, block_size) {
  if (use_graphs) graphs_ = DecodeGraphs::create(model_, cache_, max_num_seqs);
}

ModelRunner::~ModelRunner() = default;

std::vector<SampledToken> ModelRunner::step(const BatchPlan& plan) {
  Backend& backend = model_.backend();
  std::vector<SequenceChunk> chunks;
  std::vector<Request*> sampling;
  for (const ScheduledChunk& c : plan.chunks) {
    Request* r = c.request;
    const int64_t start = r->blocks.num_computed();
    SequenceChunk chunk;
    chunk.tokens.assign(r->tokens.begin() + start, r->tokens.begin() + start + c.num_new_tokens);
    chunk.num_cached = static_cast<int32_t>(start);
    chunk.block_table = r->blocks.block_table();
    chunk.want_last_logits = c.samples;
    chunks.push_back(std::move(chunk));
    if (c.samples) sampling.push_back(r);
  }
  if (graphs_ && graphs_->covers(chunks)) return sample(graphs_->run(chunks), sampling);
  BatchInputs inputs(chunks, cache_.block_size());
  const int64_t num_seqs = static_cast<int64_t>(sampling.size());
  Tensor logits(backend.allocator(), DType::kF32, {num_seqs, model_.config().vocab_size});
  model_.forward(inputs.upload(backend), cache_, logits);
  if (num_seqs == 0) return {};
  return sample(logits, sampling);
}

std::vector<SampledToken> ModelRunner::sample(TensorView logits, const std::vector<Request*>& sampling) {
  Backend& backend = model_.backend();
  const int64_t num_seqs = static_cast<int64_t>(sampling.size());

  // Sampling rows and the ragged prompt / output token lists the penalties read (only built and
  // uploaded when some row has a penalty: they can be as long as every sequence's context).
  std::vector<SamplingRow> rows;
  std::vector<int32_t> prompt_start{0}, prompt_tokens, output_start{0}, output_tokens;
  bool penalties = false;
  for (Request* r : sampling) {
    SamplingRow row = r->row;
    row.step = static_cast<uint64_t>(r->num_generated);
    rows.push_back(row);
    penalties = penalties || row.repetition_penalty != 1.0f || row.frequency_penalty != 0.0f ||
                row.presence_penalty != 0.0f;
  }
  for (Request* r : penalties ? sampling : std::vector<Request*>{}) {
    const int64_t prompt_len = static_cast<int64_t>(r->prompt.size());
    prompt_tokens.insert(prompt_tokens.end(), r->tokens.begin(), r->tokens.begin() + prompt_len);
    output_tokens.insert(output_tokens.end(), r->tokens.begin() + prompt_len, r->tokens.end());
    prompt_start.push_back(static_cast<int32_t>(prompt_tokens.size()));
    output_start.push_back(static_cast<int32_t>(output_tokens.size()));
  }
  std::vector<Tensor> keep;
  auto ids = [](std::vector<int32_t>& v) {
    return TensorView(v.data(), DType::kI32, {static_cast<int64_t>(v.size())});
  };
  Tensor tokens(backend.allocator(), DType::kI32, {num_seqs});
  Tensor logprobs(backend.allocator(), DType::kF32, {num_seqs});
  SampleParams p;
  p.logits = logits;
  p.rows = to_backend(backend, TensorView(rows.data(), DType::kU8, {num_seqs, sizeof(SamplingRow)}), keep)
               .data_as<const SamplingRow>();
  if (penalties) {
    p.prompt_start = to_backend(backend, ids(prompt_start), keep);
    p.prompt_tokens = to_backend(backend, ids(prompt_tokens), keep);
  }
  if (!output_tokens.empty()) {
    p.output_start = to_backend(backend, ids(output_start), keep);
    p.output_tokens = to_backend(backend, ids(output_tokens), keep);
  }
  p.out_tokens = tokens;
  p.out_logprobs = logprobs;
  // The alternatives come from the raw logits, which sampling modifies: ask first.
  int64_t k = 0;
  for (Request* r : sampling) k = std::max<int64_t>(k, r->params.top_logprobs);
  Tensor top_tokens, top_logprobs;
  if (k > 0) {
    top_tokens = Tensor(backend.allocator(), DType::kI32, {num_seqs, k});
    top_logprobs = Tensor(backend.allocator(), DType::kF32, {num_seqs, k});
    backend.top_logprobs({.logits = logits, .out_tokens = top_tokens, .out_logprobs = top_logprobs});
  }
  backend.sample(p);

  Tensor host_tokens(cpu_allocator(), DType::kI32, {num_seqs});
  Tensor host_logprobs(cpu_allocator(), DType::kF32, {num_seqs});
  backend.copy(host_tokens, tokens);
  backend.copy(host_logprobs, logprobs);
  Tensor host_top_tokens, host_top_logprobs;
  if (k > 0) {
    host_top_tokens = Tensor(cpu_allocator(), DType::kI32, {num_seqs, k});
    host_top_logprobs = Tensor(cpu_allocator(), DType::kF32, {num_seqs, k});
    backend.copy(host_top_tokens, top_tokens);
    backend.copy(host_top_logprobs, top_logprobs);
  }
  std::vector<SampledToken> out;
  for (int64_t i = 0; i < num_seqs; ++i) {
    SampledToken t{sampling[i], host_tokens.data_as<int32_t>()[i], host_logprobs.data_as<float>()[i], {}};
    for (int64_t j = 0; j < sampling[i]->params.top_logprobs; ++j)
      t.top_logprobs.push_back({host_top_tokens.data_as<int32_t>()[i * k + j], host_top_logprobs.data_as<float>()[i * k + j]});
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace brisk
