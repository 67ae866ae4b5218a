// The paged KV cache's memory: per layer, K and V tensors of
// [num_blocks, num_kv_heads, block_size, head_dim] in the backend's memory, in the activation
// dtype or quantized (KvQuant in backend.h: u8 or e4m3 values, int8 / int4 scales and zero
// points beside them). Which block belongs to which sequence is the block pool's business (kv/).
#pragma once

#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"

namespace brisk {

// --kv-cache-dtype: "auto" (the activation dtype), "int8", "int4" or "fp8"; throws naming the
// value otherwise.
KvQuant parse_kv_cache_dtype(std::string_view name);
std::string_view kv_cache_dtype_name(KvQuant quant);

class KvCache {
 public:
  KvCache(const ModelConfig& config, Backend& backend, DType dtype, int64_t num_blocks, int block_size,
          KvQuant quant = KvQuant::kNone);

  // Bytes one block takes across all layers, K and V (with their scales and zero points).
  static size_t bytes_per_block(const ModelConfig& config, DType dtype, int block_size,
                                KvQuant quant = KvQuant::kNone);

  TensorView k(int64_t layer) const { return k_[layer].view(); }  // [num_blocks, num_kv_heads, block_size, head_dim]
  TensorView v(int64_t layer) const { return v_[layer].view(); }
  // How layer `layer`'s caches hold their values.
  KvQuantParams quant(int64_t layer) const;
  // fp8: the layer's K and V scales (1 unless the checkpoint gives them).
  void set_fp8_scales(int64_t layer, float k_scale, float v_scale);
  int64_t num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  DType dtype() const { return dtype_; }
  KvQuant quant_kind() const { return quant_; }

 private:
  std::vector<Tensor> k_, v_;
  std::vector<Tensor> k_scale_, v_scale_, k_zero_, v_zero_;  // int8 / int4, per layer
  std::vector<float> k_fp8_scale_, v_fp8_scale_;              // fp8, per layer
  int64_t num_blocks_;
  int block_size_;
  DType dtype_;
  KvQuant quant_;
};

}  // namespace brisk
