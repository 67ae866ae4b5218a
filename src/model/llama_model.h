// The Llama-family decoder (Llama, Mistral, Qwen2, Qwen3, InternLM2): composes backend ops
// only. Pre-norm blocks: x -> RMSNorm -> fused qkv (+bias) -> [q/k norm] RoPE + KV append ->
// paged causal attention -> o_proj -> add & RMSNorm -> gate_up -> SiLU-gate -> down -> add.
#pragma once

#include <filesystem>
#include <memory>
#include <utility>

#include "backend/backend.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/tensor_parallel.h"

namespace brisk {

// Sees the input rows of the decoder's linear layers during forward (AWQ calibration). Inputs
// shared by several checkpoint layers are seen once: kQkv (q/k/v after the attention norm),
// kOProj (the attention output), kGateUp (gate/up after the MLP norm), kDown (SiLU(gate) * up).
enum class LinearInput { kQkv, kOProj, kGateUp, kDown };
inline constexpr int kNumLinearInputs = 4;

class LinearObserver {
 public:
  virtual ~LinearObserver() = default;
  // x: [num_tokens, in_features] in the backend's memory, valid during the call only.
  virtual void observe(int64_t layer, LinearInput input, TensorView x) = 0;
};

struct ModelLoadOptions {
  bool dummy_weights = false;  // random weights from config.json alone
  uint64_t dummy_seed = 0;
  int64_t max_model_len = 0;   // 0: max_position_embeddings
  LoadProgress on_progress;    // may be empty
  bool dequantize_int4 = false;  // int4 (AWQ / GPTQ) layers as dense f32: the reference for tests
  TensorParallel tensor_parallel;  // which rank's shard to load (tensor_parallel.h)
};

class LlamaModel {
 public:
  // Reads config.json, generation_config.json and the weights of a Hugging Face folder.
  static std::unique_ptr<LlamaModel> load(const std::filesystem::path& model_dir, Backend& backend,
                                          const ModelLoadOptions& options = {});
  LlamaModel(ModelConfig config, GenerationConfig generation_config, ModelWeights weights,
             Backend& backend, int64_t max_model_len, TensorParallel tensor_parallel = {});

  // The whole model's config; shard_config() has this rank's heads, intermediate size and
  // vocabulary (the config itself without tensor parallelism).
  const ModelConfig& config() const { return config_; }
  const ModelConfig& shard_config() const { return shard_config_; }
  const TensorParallel& tensor_parallel() const { return tp_; }
  const GenerationConfig& generation_config() const { return generation_config_; }
  int64_t max_model_len() const { return max_model_len_; }
  Backend& backend() const { return backend_; }
  // dtype of activations and of the KV cache on this backend.
  DType activation_dtype() const { return activation_dtype_; }
  // Weight bytes a decode step reads (for roofline ratios).
  uint64_t weight_bytes_per_step() const { return weights_.num_bytes(); }
  // The checkpoint's fp8 KV cache scales of a layer (K's, V's); zeros where it has none.
  std::pair<float, float> kv_cache_scales(int64_t layer) const {
    return {weights_.layers[layer].k_cache_scale, weights_.layers[layer].v_cache_scale};
  }

  // Runs one step (on every rank of a tensor-parallel group at once, with the same batch):
  // appends the batch's K/V to the cache and writes the logits of the tokens
  // named by batch.logits_indices into `logits` ([num_logits, vocab] f32), and the final hidden
  // states (after the last norm) of those named by batch.hidden_indices into `hidden_states`
  // ([num_hidden, hidden_size] in activation_dtype(); empty when there are none).
  void forward(const ForwardBatch& batch, KvCache& kv_cache, TensorView logits, TensorView hidden_states = {});
  // logits ([num_rows, vocab] f32) of final hidden states ([num_rows, hidden_size]) from forward.
  void lm_head(TensorView hidden, TensorView logits);
  // Calls observer->observe with the input of every linear layer in later forwards; null (the
  // default) calls nothing. The observer must outlive its use.
  void set_linear_observer(LinearObserver* observer) { observer_ = observer; }

 private:
  // out: linear_rows(normed's rows) rows, the first normed's rows the block's output.
  void attention_block(const ForwardBatch& batch, KvCache& kv_cache, int64_t layer, TensorView normed,
                       TensorView out);
  // A mixed step's RoPE, KV append and attention as two calls: the decodes (batch.num_decode_seqs
  // first sequences, one token each), then the rest.
  void split_attention(const ForwardBatch& batch, const RopeKvAppendParams& rope, const AttentionParams& a);
  void mlp_block(int64_t layer, TensorView normed, TensorView out);  // out as attention_block's
  // Sums a row-parallel product's partial sums over the ranks (nothing without a communicator).
  void all_reduce(TensorView x) {
    if (tp_.comm != nullptr) tp_.comm->all_reduce_sum(x);
  }
  Tensor empty(DType dtype, Shape shape) { return Tensor(backend_.allocator(), dtype, shape); }
  // Rows to allocate for a projection's output over num_tokens rows: FP8 GEMMs may use more
  // (Backend::gemm_fp8_rows); every other op reads the first num_tokens.
  int64_t linear_rows(int64_t num_tokens) const {
    return has_fp8_ ? backend_.gemm_fp8_rows(num_tokens) : num_tokens;
  }
  void observe(int64_t layer, LinearInput input, TensorView x) {
    if (observer_ != nullptr) observer_->observe(layer, input, x);
  }

  ModelConfig config_;
  TensorParallel tp_;
  ModelShard shard_;
  ModelConfig shard_config_;
  GenerationConfig generation_config_;
  ModelWeights weights_;
  Backend& backend_;
  int64_t max_model_len_;
  DType activation_dtype_;
  bool has_fp8_ = false;  // some projection has FP8 weights
  Tensor rope_table_;  // [max_model_len, head_dim] f32, in the backend's memory
  LinearObserver* observer_ = nullptr;
};

}  // namespace brisk
