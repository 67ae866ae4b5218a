#include "model/kv_cache.h"

#include "core/error.h"

namespace brisk {
namespace {

bool has_params(KvQuant quant) { return quant == KvQuant::kInt8 || quant == KvQuant::kInt4; }

// The values tensor's dtype and the bytes of one (token, head) row.
DType values_dtype(DType dtype, KvQuant quant) {
  switch (quant) {
    case KvQuant::kNone: return dtype;
    case KvQuant::kFp8: return DType::kF8E4M3;
    default: return DType::kU8;
  }
}

int64_t row_elements(const ModelConfig& config, KvQuant quant) {
  return quant == KvQuant::kInt4 ? config.head_dim / 2 : config.head_dim;
}

}  // namespace

KvQuant parse_kv_cache_dtype(std::string_view name) {
  if (name == "auto") return KvQuant::kNone;
  if (name == "int8") return KvQuant::kInt8;
  if (name == "int4") return KvQuant::kInt4;
  if (name == "fp8" || name == "fp8_e4m3") return KvQuant::kFp8;
  throw_error(ErrorCode::kInvalidArgument, "--kv-cache-dtype '{}' is not known; choose from auto, int8, int4 or fp8",
              name);
}

std::string_view kv_cache_dtype_name(KvQuant quant) {
  switch (quant) {
    case KvQuant::kNone: return "auto";
    case KvQuant::kInt8: return "int8";
    case KvQuant::kInt4: return "int4";
    case KvQuant::kFp8: return "fp8";
  }
  return "?";
}

KvCache::KvCache(const ModelConfig& config, Backend& backend, DType dtype, int64_t num_blocks, int block_size,
                 KvQuant quant)
    : num_blocks_(num_blocks), block_size_(block_size), dtype_(dtype), quant_(quant) {
  BRISK_CHECK(num_blocks > 0, "KV cache needs at least one block, got {}", num_blocks);
  BRISK_CHECK(block_size > 0, "KV block size must be positive, got {}", block_size);
  BRISK_CHECK(quant != KvQuant::kInt4 || config.head_dim % 2 == 0, "an int4 KV cache needs an even head_dim, got {}",
              config.head_dim);
  const Shape shape{num_blocks, config.num_kv_heads, block_size, row_elements(config, quant)};
  const Shape params{num_blocks, config.num_kv_heads, block_size};
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    k_.emplace_back(backend.allocator(), values_dtype(dtype, quant), shape);
    v_.emplace_back(backend.allocator(), values_dtype(dtype, quant), shape);
    if (!has_params(quant)) continue;
    k_scale_.emplace_back(backend.allocator(), DType::kF16, params);
    v_scale_.emplace_back(backend.allocator(), DType::kF16, params);
    k_zero_.emplace_back(backend.allocator(), DType::kU8, params);
    v_zero_.emplace_back(backend.allocator(), DType::kU8, params);
  }
  k_fp8_scale_.assign(config.num_layers, 1.0f);
  v_fp8_scale_.assign(config.num_layers, 1.0f);
}

size_t KvCache::bytes_per_block(const ModelConfig& config, DType dtype, int block_size, KvQuant quant) {
  const int64_t rows = int64_t{config.num_kv_heads} * block_size;
  size_t per_layer = dtype_bytes(values_dtype(dtype, quant), rows * row_elements(config, quant));
  if (has_params(quant)) per_layer += dtype_bytes(DType::kF16, rows) + dtype_bytes(DType::kU8, rows);
  return 2 * static_cast<size_t>(config.num_layers) * per_layer;
}

KvQuantParams KvCache::quant(int64_t layer) const {
  KvQuantParams p;
  p.kind = quant_;
  if (has_params(quant_)) {
    p.k_scale = k_scale_[layer].view();
    p.v_scale = v_scale_[layer].view();
    p.k_zero = k_zero_[layer].view();
    p.v_zero = v_zero_[layer].view();
  }
  p.k_fp8_scale = k_fp8_scale_[layer];
  p.v_fp8_scale = v_fp8_scale_[layer];
  return p;
}

void KvCache::set_fp8_scales(int64_t layer, float k_scale, float v_scale) {
  BRISK_CHECK(k_scale > 0 && v_scale > 0, "layer {}: fp8 KV scales must be positive, got {} and {}", layer, k_scale,
              v_scale);
  k_fp8_scale_[layer] = k_scale;
  v_fp8_scale_[layer] = v_scale;
}

}  // namespace brisk
