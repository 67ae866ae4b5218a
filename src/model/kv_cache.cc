#include "model/kv_cache.h"

#include "core/error.h"

namespace brisk {

KvCache::KvCache(const ModelConfig& config, Backend& backend, DType dtype, int64_t num_blocks, int block_size)
    : num_blocks_(num_blocks), block_size_(block_size), dtype_(dtype) {
  BRISK_CHECK(num_blocks > 0, "KV cache needs at least one block, got {}", num_blocks);
  BRISK_CHECK(block_size > 0, "KV block size must be positive, got {}", block_size);
  const Shape shape{num_blocks, config.num_kv_heads, block_size, config.head_dim};
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    k_.emplace_back(backend.allocator(), dtype, shape);
    v_.emplace_back(backend.allocator(), dtype, shape);
  }
}

size_t KvCache::bytes_per_block(const ModelConfig& config, DType dtype, int block_size) {
  return 2 * static_cast<size_t>(config.num_layers) *
         dtype_bytes(dtype, config.num_kv_heads * block_size * config.head_dim);
}

}  // namespace brisk
