// The paged KV cache's memory: per layer, K and V tensors of
// [num_blocks, num_kv_heads, block_size, head_dim] in the backend's memory. Which block belongs
// to which sequence is the block pool's business (kv/), not this class's.
#pragma once

#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"

namespace brisk {

class KvCache {
 public:
  KvCache(const ModelConfig& config, Backend& backend, DType dtype, int64_t num_blocks, int block_size);

  // Bytes one block takes across all layers, K and V.
  static size_t bytes_per_block(const ModelConfig& config, DType dtype, int block_size);

  TensorView k(int64_t layer) const { return k_[layer].view(); }  // [num_blocks, num_kv_heads, block_size, head_dim]
  TensorView v(int64_t layer) const { return v_[layer].view(); }
  int64_t num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  DType dtype() const { return dtype_; }

 private:
  std::vector<Tensor> k_, v_;
  int64_t num_blocks_;
  int block_size_;
  DType dtype_;
};

}  // namespace brisk
