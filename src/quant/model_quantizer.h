// `brisk quantize`: turns a dense Hugging Face folder (bf16 / f16 / f32) into an AutoAWQ-
// compatible int4 folder ("gemm" packing, zero points, f16 scales; model/int4_weight.h), or with
// "fp8" a compressed-tensors FP8 folder (e4m3 weights, f32 per-channel scales, activations scaled
// per token at run time; model/fp8_weight.h), that brisk, transformers and vLLM load. Linear layers of the decoder are quantized; embeddings,
// norms, biases and lm_head are copied as they are, and so is every other file of the folder
// (tokenizer, generation_config.json, chat template, ...).
//
// "awq" first runs the dense model on calibration tokens (CPU backend), searches AWQ's
// per-channel scales and clipping thresholds per scaling group (quant/awq_search.h) and folds
// the scales into the preceding ops (quant/awq_scaling.h), then quantizes like "rtn".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace brisk {

class Backend;

struct QuantizeOptions {
  QuantizeOptions() = default;
  QuantizeOptions(std::string method_, int64_t group_size_) : method(std::move(method_)), group_size(group_size_) {}

  std::string method = "rtn";  // "rtn": round to nearest per group; "awq": activation-aware; "fp8"
  int64_t group_size = 128;     // int4 only
  // awq only:
  std::vector<std::vector<int32_t>> calibration;  // token samples (calibration_samples below)
  Backend* backend = nullptr;    // runs the calibration forward; must share host memory (the CPU)
  // Calibration rows kept per layer input (a random subsample; f32, so the statistics take
  // max_rows_per_input * (sum of the layer inputs' widths) * 4 bytes per layer).
  int64_t max_rows_per_input = 2048;
  bool clip = true;              // AWQ's weight clipping search after the scale search
};

// num_samples windows of seq_len tokens spread evenly over a tokenized calibration text (the
// AutoAWQ recipe cuts concatenated text into blocks). Errors name `source` when the text has
// fewer than num_samples * seq_len tokens or an option is not positive.
std::vector<std::vector<int32_t>> calibration_samples(const std::vector<int32_t>& tokens, int64_t num_samples,
                                                      int64_t seq_len, const std::string& source);

// Writes out_dir (created; it must not hold a config.json already). Errors name the layer or
// file at fault: an already-quantized model, a layer whose sizes the packing cannot hold
// (in_features not a multiple of the group size, out_features not a multiple of 8).
void quantize_model(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                    const QuantizeOptions& options);

}  // namespace brisk
