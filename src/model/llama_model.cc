#include "model/llama_model.h"

#include <cmath>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "model/rope_table.h"

namespace brisk {

std::unique_ptr<LlamaModel> LlamaModel::load(const std::filesystem::path& model_dir, Backend& backend,
                                             const ModelLoadOptions& options) {
  if (!std::filesystem::is_directory(model_dir))
    throw_error(ErrorCode::kNotFound, "model folder '{}' does not exist", model_dir.string());
  ModelConfig config = ModelConfig::from_file(model_dir / "config.json");
  GenerationConfig generation = GenerationConfig::from_file_or_default(model_dir / "generation_config.json");
  const TensorParallel& tp = options.tensor_parallel;
  const ModelShard shard = model_shard(config, tp.rank, tp.size);
  // Each rank's dummy shard draws its own values (they are not slices of one dummy model).
  ModelWeights weights =
      options.dummy_weights
          ? make_dummy_weights(brisk::shard_config(config, shard), backend, options.dummy_seed + tp.rank,
                               options.on_progress)
          : load_weights(config, model_dir, backend, options.dequantize_int4, options.on_progress, shard);
  int64_t max_len = options.max_model_len > 0 ? options.max_model_len : config.max_position_embeddings;
  BRISK_CHECK(max_len > 0, "max_model_len must be positive (config.json max_position_embeddings is {})",
              config.max_position_embeddings);
  spdlog::info("loaded {} ({} layers, hidden {}, {} heads / {} KV heads, head_dim {}) from {}",
               architecture_name(config.architecture), config.num_layers, config.hidden_size,
               config.num_heads, config.num_kv_heads, config.head_dim, model_dir.string());
  return std::make_unique<LlamaModel>(std::move(config), std::move(generation), std::move(weights), backend,
                                      max_len, tp);
}

LlamaModel::LlamaModel(ModelConfig config, GenerationConfig generation_config, ModelWeights weights,
                       Backend& backend, int64_t max_model_len, TensorParallel tensor_parallel)
    : config_(std::move(config)),
      tp_(tensor_parallel),
      shard_(model_shard(config_, tp_.rank, tp_.size)),
      shard_config_(brisk::shard_config(config_, shard_)),
      generation_config_(std::move(generation_config)),
      weights_(std::move(weights)),
      backend_(backend),
      max_model_len_(max_model_len),
      activation_dtype_(backend.activation_dtype(config_.dtype)) {
  for (const LayerWeights& l : weights_.layers)
    for (const LinearWeight* w : {&l.qkv, &l.o_proj, &l.gate_up, &l.down}) has_fp8_ = has_fp8_ || w->is_fp8();
  BRISK_CHECK(tp_.comm == nullptr ? tp_.size == 1 : tp_.comm->size() == tp_.size && tp_.comm->rank() == tp_.rank,
              "tensor parallelism: rank {} of {} needs its group's communicator", tp_.rank, tp_.size);
  Tensor host_table = make_rope_table(config_, max_model_len_);
  rope_table_ = empty(DType::kF32, host_table.shape());
  backend_.copy(rope_table_, host_table);
}

void LlamaModel::forward(const ForwardBatch& batch, KvCache& kv_cache, TensorView logits, TensorView hidden_states) {
  const int64_t num_tokens = batch.num_tokens();
  const int64_t hidden = config_.hidden_size;
  const int64_t num_logits = batch.logits_indices.size(0);
  BRISK_CHECK(logits.shape() == Shape({num_logits, config_.vocab_size}) && logits.dtype() == DType::kF32,
              "forward: logits must be f32[{}, {}], got {}", num_logits, config_.vocab_size, logits.describe());
  const int64_t num_hidden = batch.hidden_indices.empty() ? 0 : batch.hidden_indices.size(0);
  BRISK_CHECK(num_hidden == 0 || (hidden_states.shape() == Shape({num_hidden, hidden}) &&
                                  hidden_states.dtype() == activation_dtype_),
              "forward: hidden_states must be {}[{}, {}], got {}", dtype_name(activation_dtype_), num_hidden, hidden,
              hidden_states.describe());
  BRISK_CHECK(batch.max_context_len <= max_model_len_, "forward: context of {} tokens exceeds max_model_len {}",
              batch.max_context_len, max_model_len_);

  Tensor residual = empty(activation_dtype_, {num_tokens, hidden});
  Tensor normed = empty(activation_dtype_, {num_tokens, hidden});
  Tensor block_out_rows = empty(activation_dtype_, {linear_rows(num_tokens), hidden});
  const TensorView block_out = block_out_rows.view().slice(0, 0, num_tokens);
  if (tp_.comm != nullptr) {  // each rank embeds the ids of its vocabulary rows
    backend_.embedding({weights_.embed, batch.token_ids, residual, shard_.first_vocab});
    all_reduce(residual);
  } else {
    backend_.embedding({weights_.embed, batch.token_ids, residual});
  }
  for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    const float eps = static_cast<float>(config_.rms_norm_eps);
    if (layer == 0) {
      backend_.rms_norm({residual, {}, w.input_norm, normed, eps});
    } else {  // residual += previous MLP output, then norm
      backend_.rms_norm({block_out, residual, w.input_norm, normed, eps});
    }
    attention_block(batch, kv_cache, layer, normed, block_out_rows);
    backend_.rms_norm({block_out, residual, w.post_norm, normed, eps});
    mlp_block(layer, normed, block_out_rows);
  }
  if (num_logits == 0 && num_hidden == 0) return;  // only partial prefill chunks: their KV is all this step makes
  backend_.rms_norm({block_out, residual, weights_.final_norm, normed, static_cast<float>(config_.rms_norm_eps)});
  if (num_hidden > 0) backend_.embedding({normed, batch.hidden_indices, hidden_states});
  if (num_logits == 0) return;
  Tensor last = empty(activation_dtype_, {num_logits, hidden});
  backend_.embedding({normed, batch.logits_indices, last});
  lm_head(last, logits);
}

void LlamaModel::lm_head(TensorView hidden, TensorView logits) {
  if (tp_.comm == nullptr) {
    backend_.gemm({hidden, weights_.lm_head, {}, logits});
    return;
  }
  Tensor mine = empty(DType::kF32, {hidden.size(0), shard_.vocab_size});  // this rank's vocabulary rows
  backend_.gemm({hidden, weights_.lm_head, {}, mine});
  tp_.comm->all_gather_columns(mine, logits);
}

void LlamaModel::attention_block(const ForwardBatch& batch, KvCache& kv_cache, int64_t layer, TensorView normed,
                                 TensorView out) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t num_tokens = batch.num_tokens();
  const int nh = static_cast<int>(shard_.num_heads), nkv = static_cast<int>(shard_.num_kv_heads);
  const int hd = static_cast<int>(config_.head_dim);
  Tensor qkv = empty(activation_dtype_, {linear_rows(num_tokens), static_cast<int64_t>(nh + 2 * nkv) * hd});
  observe(layer, LinearInput::kQkv, normed);
  run_linear(backend_, normed, w.qkv, w.qkv_bias, qkv);

  RopeKvAppendParams rope;
  rope.qkv = qkv.view().slice(0, 0, num_tokens);
  rope.positions = batch.positions;
  rope.cos_sin = rope_table_;
  rope.q_norm = w.q_norm;
  rope.k_norm = w.k_norm;
  rope.norm_eps = static_cast<float>(config_.rms_norm_eps);
  rope.num_heads = nh;
  rope.num_kv_heads = nkv;
  rope.head_dim = hd;
  rope.slot_mapping = batch.slot_mapping;
  rope.k_cache = kv_cache.k(layer);
  rope.v_cache = kv_cache.v(layer);
  rope.kv_quant = kv_cache.quant(layer);

  Tensor attn = empty(activation_dtype_, {num_tokens, static_cast<int64_t>(nh) * hd});
  AttentionParams a;
  a.q = rope.qkv.slice(1, 0, static_cast<int64_t>(nh) * hd);
  a.k_cache = kv_cache.k(layer);
  a.v_cache = kv_cache.v(layer);
  a.kv_quant = rope.kv_quant;
  a.block_tables = batch.block_tables;
  a.query_start = batch.query_start;
  a.context_lens = batch.context_lens;
  a.out = attn;
  a.num_heads = nh;
  a.num_kv_heads = nkv;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.sliding_window = static_cast<int>(config_.sliding_window);
  a.max_query_len = batch.max_query_len;
  a.max_context_len = batch.max_context_len;
  if (batch.num_decode_seqs > 0) {
    split_attention(batch, rope, a);
  } else {
    backend_.rope_append_attention(rope, a);  // qkv's q and k are not read after it
  }
  observe(layer, LinearInput::kOProj, attn);
  run_linear(backend_, attn, w.o_proj, {}, out);
  all_reduce(out.slice(0, 0, num_tokens));
}

void LlamaModel::split_attention(const ForwardBatch& batch, const RopeKvAppendParams& rope, const AttentionParams& a) {
  auto part = [&](int64_t seq_begin, int64_t seq_end, int64_t token_begin, int64_t token_end, TensorView query_start,
                  int max_query_len) {
    RopeKvAppendParams r = rope;
    r.qkv = rope.qkv.slice(0, token_begin, token_end);
    r.positions = rope.positions.slice(0, token_begin, token_end);
    r.slot_mapping = rope.slot_mapping.slice(0, token_begin, token_end);
    AttentionParams p = a;
    p.q = a.q.slice(0, token_begin, token_end);
    p.out = a.out.slice(0, token_begin, token_end);
    p.block_tables = a.block_tables.slice(0, seq_begin, seq_end);
    p.context_lens = a.context_lens.slice(0, seq_begin, seq_end);
    p.query_start = query_start;
    p.max_query_len = max_query_len;
    backend_.rope_append_attention(r, p);
  };
  const int64_t num_decodes = batch.num_decode_seqs;  // one token each
  part(0, num_decodes, 0, num_decodes, batch.query_start.slice(0, 0, num_decodes + 1), 1);
  part(num_decodes, batch.num_seqs(), num_decodes, batch.num_tokens(), batch.prefill_query_start, batch.max_query_len);
}

void LlamaModel::mlp_block(int64_t layer, TensorView normed, TensorView out) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t num_tokens = normed.size(0);
  observe(layer, LinearInput::kGateUp, normed);
  Tensor act = empty(activation_dtype_, {num_tokens, shard_.intermediate_size});
  if (w.gate_up.is_int4()) {  // SiLU fused into the int4 GEMM
    run_linear(backend_, normed, w.gate_up, {}, act, /*silu_gate=*/true);
  } else {
    Tensor gate_up = empty(activation_dtype_, {linear_rows(num_tokens), 2 * shard_.intermediate_size});
    run_linear(backend_, normed, w.gate_up, {}, gate_up);
    backend_.silu_mul({gate_up.view().slice(0, 0, num_tokens), act});
  }
  observe(layer, LinearInput::kDown, act);
  run_linear(backend_, act, w.down, {}, out);
  all_reduce(out.slice(0, 0, num_tokens));
}

}  // namespace brisk
