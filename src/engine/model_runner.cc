#include "engine/model_runner.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "backend/make_backend.h"
#include "core/error.h"

namespace brisk {
namespace {

// Prompt rows run through the lm_head at once: bounds the logits of a long prompt chunk (256 rows
// of a 128k vocabulary: 128 MiB of f32) while keeping the GEMM wide enough to be efficient.
constexpr int64_t kPromptRowsPerSlice = 256;

}  // namespace

ModelRunner::ModelRunner(std::vector<LlamaModel*> models, int64_t num_blocks, int block_size, bool use_graphs,
                         int64_t max_num_seqs, KvQuant kv_quant)
    : threads_(static_cast<int>(models.size()), [models](int r) { bind_thread(models[r]->backend()); }),
      max_num_seqs_(max_num_seqs) {
  BRISK_CHECK(!models.empty(), "model runner: no model");
  for (LlamaModel* model : models) ranks_.push_back(std::make_unique<Rank>(model));
  const LlamaModel& model = *models.front();
  // The checkpoint's fp8 KV scales, set before graph capture: they are launch arguments of the
  // captured kernels.
  std::vector<std::pair<float, float>> fp8_scales(model.config().num_layers, {0.0f, 0.0f});
  if (kv_quant == KvQuant::kFp8) {
    bool unscaled = false;
    for (int64_t layer = 0; layer < model.config().num_layers; ++layer) {
      fp8_scales[layer] = model.kv_cache_scales(layer);
      unscaled = unscaled || fp8_scales[layer].first <= 0.0f;
    }
    if (unscaled)
      spdlog::warn("--kv-cache-dtype fp8: the checkpoint has no KV cache scales (a kv_cache_scheme with "
                   "self_attn.k_scale / v_scale); K and V are stored unscaled (scale 1.0)");
  } else if (model.config().quantization.kv_cache_scales) {
    spdlog::info("the checkpoint has fp8 KV cache scales: --kv-cache-dtype fp8 stores K and V with them");
  }
  on_ranks([&](int r) {
    Rank& rank = *ranks_[r];
    rank.cache = std::make_unique<KvCache>(rank.model->shard_config(), rank.model->backend(),
                                           rank.model->activation_dtype(), num_blocks, block_size, kv_quant);
    for (int64_t layer = 0; layer < model.config().num_layers; ++layer) {
      const auto [k_scale, v_scale] = fp8_scales[layer];
      if (k_scale > 0.0f) rank.cache->set_fp8_scales(layer, k_scale, v_scale);
    }
    if (use_graphs) rank.graphs = DecodeGraphs::create(*rank.model, *rank.cache, max_num_seqs);
    rank.sampled_ids = Tensor(rank.model->backend().allocator(), DType::kI32, {max_num_seqs});
  });
  Allocator& host = model.backend().host_allocator();
  for (HostSlot& slot : slots_) {
    slot.tokens = Tensor(host, DType::kI32, {max_num_seqs});
    slot.logprobs = Tensor(host, DType::kF32, {max_num_seqs});
    slot.top_tokens = Tensor(host, DType::kI32, {max_num_seqs * kMaxTopLogprobs});
    slot.top_logprobs = Tensor(host, DType::kF32, {max_num_seqs * kMaxTopLogprobs});
  }
}

ModelRunner::~ModelRunner() = default;

ModelRunner::StepInputs ModelRunner::gather(const BatchPlan& plan) const {
  StepInputs in;
  // One-token chunks first: a mixed step's attention then splits (ForwardBatch::num_decode_seqs).
  std::vector<ScheduledChunk> ordered = plan.chunks;
  std::stable_partition(ordered.begin(), ordered.end(), [](const ScheduledChunk& c) { return c.num_new_tokens == 1; });
  int32_t num_step_tokens = 0;
  for (const ScheduledChunk& c : ordered) {
    Request* r = c.request;
    const int64_t start = r->blocks.num_computed();
    const int64_t num_known = static_cast<int64_t>(r->tokens.size());
    SequenceChunk chunk;
    for (int64_t i = start; i < start + c.num_new_tokens; ++i) {
      if (i < num_known) {
        chunk.tokens.push_back(r->tokens[i]);
        continue;
      }
      BRISK_ASSERT(i == num_known && i == start + c.num_new_tokens - 1 && r->num_pending > 0 && r->pending_row >= 0);
      chunk.tokens.push_back(0);  // replaced on the device by feed_tokens
      in.feed_dst.push_back(num_step_tokens + static_cast<int32_t>(i - start));
      in.feed_src.push_back(r->pending_row);
    }
    if (r->scores_prompt()) {  // row prompt.size() - 1 samples instead of scoring
      const int64_t begin = std::max(start, r->num_prompt_rows_launched);
      const int64_t end = std::min(start + c.num_new_tokens, static_cast<int64_t>(r->prompt.size()) - 1);
      if (begin < end) {
        chunk.hidden_begin = static_cast<int32_t>(begin - start);
        chunk.hidden_end = static_cast<int32_t>(end - start);
        in.prompt_rows.push_back({r, begin, end - begin});
        in.prompt_targets.insert(in.prompt_targets.end(), r->prompt.begin() + begin + 1, r->prompt.begin() + end + 1);
      }
    }
    chunk.num_cached = static_cast<int32_t>(start);
    chunk.block_table = r->blocks.block_table();
    chunk.want_last_logits = c.samples;
    num_step_tokens += static_cast<int32_t>(c.num_new_tokens);
    in.chunks.push_back(std::move(chunk));
    if (c.samples) in.sampling.push_back(r);
  }
  return in;
}

void ModelRunner::on_ranks(const std::function<void(int)>& fn) {
  threads_.run([&](int r) {
    try {
      fn(r);
    } catch (...) {
      const TensorParallel& tp = ranks_[r]->model->tensor_parallel();
      if (tp.comm != nullptr) tp.comm->abort();
      throw;
    }
  });
}

LaunchedStep ModelRunner::launch(const BatchPlan& plan, bool timed) {
  BRISK_CHECK(num_launched_ - num_collected_ < 2, "model runner: two launched steps are still uncollected");
  LaunchedStep step;
  step.slot = static_cast<int>(num_launched_ % 2);
  StepInputs in = gather(plan);
  step.sampling = std::move(in.sampling);
  const int64_t num_sampling = static_cast<int64_t>(step.sampling.size());
  BRISK_CHECK(num_sampling <= max_num_seqs_, "model runner: {} sequences sample in one step, more than max_num_seqs {}",
              num_sampling, max_num_seqs_);
  step.prompt_rows = std::move(in.prompt_rows);
  for (const PromptRows& rows : step.prompt_rows)
    step.prompt_top_k = std::max<int64_t>(step.prompt_top_k, *rows.request->params.prompt_logprobs);
  on_ranks([&](int r) { launch_rank(r, in, step, timed); });
  for (const PromptRows& rows : step.prompt_rows)
    rows.request->num_prompt_rows_launched = rows.first_row + rows.num_rows;
  for (Request* r : step.sampling) step.top_k = std::max<int64_t>(step.top_k, r->params.top_logprobs);
  prepare_sampling(step);
  ++num_launched_;
  return step;
}

void ModelRunner::launch_rank(int r, const StepInputs& in, LaunchedStep& step, bool timed) {
  Rank& rank = *ranks_[r];
  Backend& backend = rank.model->backend();
  if (timed && r == 0) step.start = backend.record_fence();
  // The pending tokens, from the previous step's sampled ids into this step's inputs.
  auto feed = [&](const ForwardBatch& batch) {
    if (in.feed_dst.empty()) return;
    std::vector<Tensor> keep;
    const Shape shape{static_cast<int64_t>(in.feed_dst.size())};
    auto ids = [&](const std::vector<int32_t>& v) {
      return to_backend(backend, TensorView(const_cast<int32_t*>(v.data()), DType::kI32, shape), keep);
    };
    backend.feed_tokens({batch.token_ids, ids(in.feed_dst), ids(in.feed_src), rank.sampled_ids});
  };
  // A step that scores prompt rows runs eagerly (graphs only cover decodes, which never score).
  const bool scores = !step.prompt_rows.empty();
  if (rank.graphs && !scores && rank.graphs->covers(in.chunks)) {
    feed(rank.graphs->prepare(in.chunks));
    rank.logits[step.slot] = rank.graphs->replay(static_cast<int64_t>(in.chunks.size()));
    if (r == 0) step.replayed = true;
    return;
  }
  BatchInputs inputs(in.chunks, rank.cache->block_size());
  const ForwardBatch batch = inputs.upload(backend);
  feed(batch);
  Tensor& logits = rank.eager_logits[step.slot];
  logits = Tensor(backend.allocator(), DType::kF32, {static_cast<int64_t>(step.sampling.size()), config().vocab_size});
  Tensor hidden;
  if (scores)
    hidden = Tensor(backend.allocator(), rank.model->activation_dtype(), {inputs.num_hidden(), config().hidden_size});
  rank.model->forward(batch, *rank.cache, logits, hidden);
  rank.logits[step.slot] = logits;
  if (scores) score_prompt(r, hidden, in.prompt_targets, step);
}

void ModelRunner::prepare_sampling(LaunchedStep& step) {
  for (Request* r : step.sampling) {
    SamplingRow row = r->row;
    row.step = static_cast<uint64_t>(r->num_generated + r->num_pending);  // the draw's index
    for (const auto& [token, bias] : r->params.logit_bias) {
      step.bias_rows.push_back(static_cast<int32_t>(step.rows.size()));
      step.bias_tokens.push_back(token);
      step.bias_values.push_back(bias);
    }
    step.rows.push_back(row);
    step.penalties = step.penalties || row.has_penalties();
  }
  if (!step.penalties) return;
  step.prompt_start = {0};
  step.output_start = {0};
  for (Request* r : step.sampling) {
    BRISK_CHECK(r->num_pending == 0, "model runner: penalties need every output token, and request {} has {} "
                "pending", r->id, r->num_pending);
    const int64_t prompt_len = static_cast<int64_t>(r->prompt.size());
    step.prompt_tokens.insert(step.prompt_tokens.end(), r->tokens.begin(), r->tokens.begin() + prompt_len);
    step.output_tokens.insert(step.output_tokens.end(), r->tokens.begin() + prompt_len, r->tokens.end());
    step.prompt_start.push_back(static_cast<int32_t>(step.prompt_tokens.size()));
    step.output_start.push_back(static_cast<int32_t>(step.output_tokens.size()));
  }
}

void ModelRunner::upload_masks(Backend& backend, TensorView logits, const TokenMasks& masks) {
  const int64_t words = mask_words();
  const int64_t num_masks = static_cast<int64_t>(masks.words.size()) / words;
  BRISK_CHECK(static_cast<int64_t>(masks.words.size()) == num_masks * words &&
                  masks.mask_index.size() == masks.rows.size(),
              "model runner: token masks of {} words for {} rows with {} mask indices", masks.words.size(),
              masks.rows.size(), masks.mask_index.size());
  // Slices of at most 4 MiB of masks: host-to-device copies up to that size are staged without
  // the host waiting for the device. Each slice masks the rows whose masks it holds.
  const int64_t masks_per_slice = std::max<int64_t>(1, (int64_t{4} << 20) / (words * 4));
  std::vector<Tensor> keep;
  for (int64_t begin = 0; begin < num_masks; begin += masks_per_slice) {
    const int64_t n = std::min(num_masks - begin, masks_per_slice);
    std::vector<int32_t> rows, index;
    for (size_t j = 0; j < masks.rows.size(); ++j) {
      if (masks.mask_index[j] < begin || masks.mask_index[j] >= begin + n) continue;
      rows.push_back(masks.rows[j]);
      index.push_back(static_cast<int32_t>(masks.mask_index[j] - begin));
    }
    const auto num_rows = static_cast<int64_t>(rows.size());
    const TensorView bits(const_cast<uint32_t*>(masks.words.data() + begin * words), DType::kU32, {n, words});
    backend.apply_token_bitmask({.logits = logits, .bitmask = to_backend(backend, bits, keep),
                                 .rows = to_backend(backend, TensorView(rows.data(), DType::kI32, {num_rows}), keep),
                                 .mask_index = to_backend(backend, TensorView(index.data(), DType::kI32, {num_rows}),
                                                          keep)});
  }
}

void ModelRunner::sample(LaunchedStep& step, const TokenMasks& masks) {
  BRISK_CHECK(!step.done, "model runner: a step is sampled once");
  on_ranks([&](int r) { sample_rank(r, step, masks); });
}

void ModelRunner::sample_rank(int r, LaunchedStep& step, const TokenMasks& masks) {
  Rank& rank = *ranks_[r];
  Backend& backend = rank.model->backend();
  const std::vector<Request*>& sampling = step.sampling;
  const int64_t num_seqs = static_cast<int64_t>(sampling.size());
  const TensorView logits = rank.logits[step.slot];
  auto finish = [&] {
    if (r == 0) step.done = backend.record_fence();
    rank.logits[step.slot] = {};
    rank.eager_logits[step.slot] = Tensor();
  };
  if (num_seqs == 0) {
    finish();
    return;
  }
  std::vector<Tensor> keep;
  auto ids = [](const std::vector<int32_t>& v) {
    return TensorView(const_cast<int32_t*>(v.data()), DType::kI32, {static_cast<int64_t>(v.size())});
  };
  // Biased and masked first: the alternatives and logprobs are those of the distribution drawn
  // from, of the tokens the grammar allows.
  if (!step.bias_rows.empty()) {
    const int64_t num_biases = static_cast<int64_t>(step.bias_values.size());
    backend.logit_bias({.logits = logits,
                        .rows = to_backend(backend, ids(step.bias_rows), keep),
                        .tokens = to_backend(backend, ids(step.bias_tokens), keep),
                        .values = to_backend(backend, TensorView(step.bias_values.data(), DType::kF32, {num_biases}),
                                             keep)});
  }
  if (!masks.rows.empty()) upload_masks(backend, logits, masks);
  Tensor logprobs(backend.allocator(), DType::kF32, {num_seqs});
  SampleParams p;
  p.logits = logits;
  p.rows = to_backend(backend, TensorView(step.rows.data(), DType::kU8, {num_seqs, sizeof(SamplingRow)}), keep)
               .data_as<const SamplingRow>();
  if (step.penalties) {
    p.prompt_start = to_backend(backend, ids(step.prompt_start), keep);
    p.prompt_tokens = to_backend(backend, ids(step.prompt_tokens), keep);
  }
  if (!step.output_tokens.empty()) {
    p.output_start = to_backend(backend, ids(step.output_start), keep);
    p.output_tokens = to_backend(backend, ids(step.output_tokens), keep);
  }
  p.out_tokens = rank.sampled_ids.view().slice(0, 0, num_seqs);
  p.out_logprobs = logprobs;
  // The alternatives come from the raw logits, which sampling modifies: ask first (rank 0 reports them).
  const int64_t k = step.top_k;
  const HostSlot& slot = slots_[step.slot];
  if (k > 0 && r == 0) {
    Tensor top_tokens(backend.allocator(), DType::kI32, {num_seqs, k});
    Tensor top_logprobs(backend.allocator(), DType::kF32, {num_seqs, k});
    backend.top_logprobs({.logits = logits, .out_tokens = top_tokens, .out_logprobs = top_logprobs});
    backend.copy_async(slot.top_tokens.view().slice(0, 0, num_seqs * k).reshape({num_seqs, k}), top_tokens);
    backend.copy_async(slot.top_logprobs.view().slice(0, 0, num_seqs * k).reshape({num_seqs, k}), top_logprobs);
  }
  backend.sample(p);
  if (r == 0) {
    backend.copy_async(slot.tokens.view().slice(0, 0, num_seqs), p.out_tokens);
    backend.copy_async(slot.logprobs.view().slice(0, 0, num_seqs), logprobs);
  }
  finish();
}

void ModelRunner::score_prompt(int r, TensorView hidden, const std::vector<int32_t>& targets,
                               const LaunchedStep& step) {
  LlamaModel& model = *ranks_[r]->model;
  Backend& backend = model.backend();
  const int64_t num_rows = hidden.size(0);
  const int64_t vocab = config().vocab_size;
  const int64_t k = step.prompt_top_k;
  BRISK_ASSERT(static_cast<int64_t>(targets.size()) == num_rows);
  std::vector<Tensor> keep;
  TensorView targets_d =
      to_backend(backend, TensorView(const_cast<int32_t*>(targets.data()), DType::kI32, {num_rows}), keep);
  Tensor logprobs(backend.allocator(), DType::kF32, {num_rows});
  Tensor ranks(backend.allocator(), DType::kI32, {num_rows});
  Tensor top_tokens, top_logprobs;
  if (k > 0) {
    top_tokens = Tensor(backend.allocator(), DType::kI32, {num_rows, k});
    top_logprobs = Tensor(backend.allocator(), DType::kF32, {num_rows, k});
  }
  for (int64_t begin = 0; begin < num_rows; begin += kPromptRowsPerSlice) {
    const int64_t end = std::min(num_rows, begin + kPromptRowsPerSlice);
    Tensor logits(backend.allocator(), DType::kF32, {end - begin, vocab});
    model.lm_head(hidden.slice(0, begin, end), logits);
    if (r > 0) continue;  // the other ranks only take part in the lm_head's gather
    backend.token_logprobs({.logits = logits, .tokens = targets_d.slice(0, begin, end),
                            .out_logprobs = logprobs.view().slice(0, begin, end),
                            .out_ranks = ranks.view().slice(0, begin, end)});
    if (k > 0)
      backend.top_logprobs({.logits = logits, .out_tokens = top_tokens.view().slice(0, begin, end),
                            .out_logprobs = top_logprobs.view().slice(0, begin, end)});
  }
  if (r > 0) return;
  // The slot's previous step has been collected (launch allows two uncollected steps), so its
  // buffers may be replaced.
  HostSlot& slot = slots_[step.slot];
  auto copy_back = [&](Tensor& host, const Tensor& device) {
    const int64_t n = device.shape().num_elements();
    const int64_t capacity = host.empty() ? 0 : host.shape().num_elements();
    if (capacity < n) host = Tensor(backend.host_allocator(), device.dtype(), {std::max(n, 2 * capacity)});
    backend.copy_async(host.view().slice(0, 0, n).reshape(device.shape()), device);
  };
  copy_back(slot.scored_logprobs, logprobs);
  copy_back(slot.scored_ranks, ranks);
  if (k > 0) {
    copy_back(slot.scored_top_tokens, top_tokens);
    copy_back(slot.scored_top_logprobs, top_logprobs);
  }
}

std::vector<SampledToken> ModelRunner::collect(const LaunchedStep& step) {
  BRISK_CHECK(num_collected_ < num_launched_ && step.slot == num_collected_ % 2,
              "model runner: steps must be collected once each, in launch order");
  BRISK_CHECK(step.done != nullptr, "model runner: a step is collected after it is sampled");
  step.done->wait();
  ++num_collected_;
  const HostSlot& slot = slots_[step.slot];
  int64_t scored = 0;  // rows of the step's prompt scoring read so far
  for (const PromptRows& rows : step.prompt_rows) {
    Request* r = rows.request;
    const int64_t pk = step.prompt_top_k;
    for (int64_t i = 0; i < rows.num_rows; ++i, ++scored) {
      PromptLogprob p{r->prompt[rows.first_row + i + 1], slot.scored_logprobs.data_as<float>()[scored],
                      slot.scored_ranks.data_as<int32_t>()[scored], {}};
      for (int64_t j = 0; j < *r->params.prompt_logprobs; ++j)
        p.top_logprobs.push_back({slot.scored_top_tokens.data_as<int32_t>()[scored * pk + j],
                                  slot.scored_top_logprobs.data_as<float>()[scored * pk + j]});
      r->prompt_logprobs.push_back(std::move(p));
    }
  }
  const int64_t k = step.top_k;
  std::vector<SampledToken> out;
  out.reserve(step.sampling.size());
  for (size_t i = 0; i < step.sampling.size(); ++i) {
    Request* r = step.sampling[i];
    SampledToken t{r, slot.tokens.data_as<int32_t>()[i], slot.logprobs.data_as<float>()[i], {}};
    for (int64_t j = 0; j < r->params.top_logprobs; ++j)
      t.top_logprobs.push_back({slot.top_tokens.data_as<int32_t>()[i * k + j], slot.top_logprobs.data_as<float>()[i * k + j]});
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace brisk
