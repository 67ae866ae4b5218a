// A Llama-family model's shape and options, parsed from a Hugging Face config.json, and its
// generation defaults from generation_config.json.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace brisk {

enum class Architecture {
  kLlama,     // LlamaForCausalLM (Llama 2/3/3.1/3.2)
  kMistral,   // MistralForCausalLM
  kQwen2,     // Qwen2ForCausalLM: q/k/v biases
  kQwen3,     // Qwen3ForCausalLM: per-head q/k RMSNorm
  kInternLM2, // InternLM2ForCausalLM: packed grouped wqkv, its own tensor names
};
std::string_view architecture_name(Architecture arch);

enum class RopeScalingType { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;    // llama3
  double high_freq_factor = 4.0;   // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3
};

// How the checkpoint's linear layers (q/k/v/o, gate/up/down) are quantized: config.json's
// quantization_config (or a quantize_config.json / quant_config.json beside it). Embeddings,
// norms and lm_head stay dense.
enum class QuantMethod { kNone, kAwq, kGptq, kFp8 };

// FP8 (e4m3) checkpoints: the granularity of the weights' scales, and how activations are
// quantized on the fly (GemmFp8Params in backend/backend.h).
enum class Fp8WeightScales { kTensor, kChannel, kBlock };
enum class Fp8Activations {
  kStatic,      // one input_scale per layer, stored in the checkpoint
  kToken,       // dynamic: one scale per token
  kTokenGroup,  // dynamic: one scale per token and 128 input channels (block-wise weights)
};

struct QuantizationConfig {
  QuantMethod method = QuantMethod::kNone;
  int64_t group_size = 0;  // 0: one group per row (GPTQ's group_size -1)
  bool symmetric = false;  // GPTQ sym: zero point 8 everywhere
  int zero_offset = 0;     // added to stored zero points: 1 for GPTQ's v1 format (stores zero - 1)
  // kFp8: compressed-tensors ("float-quantized": `weight_scale`, `input_scale`) or the block-wise
  // "fp8" form (`weight_scale_inv` per 128 x 128 block, as Qwen3 and DeepSeek publish).
  Fp8WeightScales fp8_weights = Fp8WeightScales::kChannel;
  Fp8Activations fp8_activations = Fp8Activations::kToken;
  // compressed-tensors' kv_cache_scheme (8-bit float, per tensor): each layer's
  // `self_attn.k_scale` and `self_attn.v_scale`, the scales of an fp8 KV cache (--kv-cache-dtype fp8).
  bool kv_cache_scales = false;

  // Parses one quantization_config object; kUnsupported for what brisk cannot run (bits other
  // than 4, GPTQ desc_act, AWQ versions other than "gemm", FP8 schemes other than the above,
  // e5m2, ...).
  static QuantizationConfig from_json(const nlohmann::json& json, const std::string& source);
};

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;          // explicit head_dim, else hidden_size / num_heads
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;   // q/k/v projection biases (Qwen2 always; Llama attention_bias; InternLM2 bias)
  bool qk_norm = false;          // Qwen3
  int64_t sliding_window = 0;    // 0: full attention
  DType dtype = DType::kBF16;    // torch_dtype / dtype of the checkpoint
  std::vector<int64_t> eos_token_ids;  // from config.json (generation_config.json adds more)
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
  QuantizationConfig quantization;

  // Parses config.json content; `source` names the file in error messages. Throws Error naming
  // the field for missing/mistyped/out-of-range values and kUnsupported for unknown
  // architectures, activations or rope scaling types.
  static ModelConfig from_json(const nlohmann::json& json, const std::string& source);
  static ModelConfig from_file(const std::filesystem::path& config_json);
  // Checks cross-field invariants (head counts divide, dims positive...).
  void validate(const std::string& source) const;
};

struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> repetition_penalty;
  std::optional<int64_t> max_new_tokens;
  bool do_sample = false;

  static GenerationConfig from_json(const nlohmann::json& json, const std::string& source);
  // Returns defaults when the file is absent; errors when it exists but is malformed.
  static GenerationConfig from_file_or_default(const std::filesystem::path& generation_config_json);
};

}  // namespace brisk
