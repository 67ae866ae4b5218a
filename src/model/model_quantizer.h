// `brisk quantize`: turns a dense Hugging Face folder (bf16 / f16 / f32) into an AutoAWQ-
// compatible int4 folder ("gemm" packing, zero points, f16 scales; model/int4_weight.h) that
// brisk, transformers and vLLM load. Linear layers of the decoder are quantized; embeddings,
// norms, biases and lm_head are copied as they are, and so is every other file of the folder
// (tokenizer, generation_config.json, chat template, ...).
#pragma once

#include <filesystem>
#include <string>

namespace brisk {

struct QuantizeOptions {
  std::string method = "rtn";  // "rtn": round to nearest per group. "awq" is not implemented yet.
  int64_t group_size = 128;
};

// Writes out_dir (created; it must not hold a config.json already). Errors name the layer or
// file at fault: an already-quantized model, a layer whose sizes the packing cannot hold
// (in_features not a multiple of the group size, out_features not a multiple of 8).
void quantize_model(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                    const QuantizeOptions& options);

}  // namespace brisk
