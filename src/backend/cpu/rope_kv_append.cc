// Per token: optional per-head RMSNorm of q and k (Qwen3), rotate-half RoPE of q and k in place,
// then k and v heads into the paged cache at the token's slot (quantized as KvQuant says).
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "backend/cpu/kv_quant.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {
namespace {

void check_params(const RopeKvAppendParams& p) {
  check_op_params(p, Device::kCpu);
  // The data-dependent checks: the CUDA kernels guard these reads instead.
  const int64_t num_tokens = p.qkv.size(0);
  const int64_t num_positions = p.cos_sin.size(0);
  const int64_t num_slots = p.k_cache.size(0) * p.k_cache.size(2);
  const int32_t* positions = p.positions.data_as<const int32_t>();
  const int32_t* slots = p.slot_mapping.data_as<const int32_t>();
  for (int64_t t = 0; t < num_tokens; ++t) {
    BRISK_CHECK(positions[t] >= 0 && positions[t] < num_positions,
                "rope_kv_append: positions[{}] = {} is outside the {} rows of cos_sin", t,
                positions[t], num_positions);
    BRISK_CHECK(slots[t] < num_slots,
                "rope_kv_append: slot_mapping[{}] = {} but the cache {} has only {} slots", t,
                slots[t], p.k_cache.describe(), num_slots);
  }
}

// Hugging Face's rotate-half convention: dimension i pairs with i + head_dim / 2.
void rotate_half(float* head, const float* cos, const float* sin, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    float x1 = head[i];
    float x2 = head[i + half];
    head[i] = x1 * cos[i] - x2 * sin[i];
    head[i + half] = x2 * cos[i] + x1 * sin[i];
  }
}

// The norm weight as fp32, or an empty vector when the model has none.
std::vector<float> load_norm(const TensorView& norm) {
  std::vector<float> weight(norm.empty() ? 0 : norm.size(0));
  if (!norm.empty()) load_fn(norm.dtype())(norm.data(), weight.data(), weight.size());
  return weight;
}

}  // namespace

void rope_kv_append(const RopeKvAppendParams& p) {
  check_params(p);
  const int64_t num_tokens = p.qkv.size(0);
  const int64_t head_dim = p.head_dim;
  const int64_t half = head_dim / 2;
  const int64_t num_rotated = int64_t{p.num_heads + p.num_kv_heads};  // q heads, then k heads
  const int64_t width = p.qkv.size(1);
  const int64_t block_size = p.k_cache.size(2);
  const std::vector<float> q_norm = load_norm(p.q_norm);
  const std::vector<float> k_norm = load_norm(p.k_norm);
  const int32_t* positions = p.positions.data_as<const int32_t>();
  const int32_t* slots = p.slot_mapping.data_as<const int32_t>();
  LoadFn load_qkv = load_fn(p.qkv.dtype());
  StoreFn store_qkv = store_fn(p.qkv.dtype());
  const bool quantized = p.kv_quant.kind != KvQuant::kNone;
  StoreFn store_k = quantized ? nullptr : store_fn(p.k_cache.dtype());
  StoreFn store_v = quantized ? nullptr : store_fn(p.v_cache.dtype());

  parallel_for(num_tokens, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> row(width);  // [(num_heads + 2 * num_kv_heads) * head_dim]
    for (int64_t t = begin; t < end; ++t) {
      char* qkv_row = element_ptr(p.qkv, t, 0);
      load_qkv(qkv_row, row.data(), width);
      const float* cos = p.cos_sin.data_as<const float>() + positions[t] * p.cos_sin.stride(0);
      const float* sin = cos + half;
      for (int64_t h = 0; h < num_rotated; ++h) {
        float* head = row.data() + h * head_dim;
        const std::vector<float>& norm = h < p.num_heads ? q_norm : k_norm;
        if (!norm.empty()) rms_norm_row(head, norm.data(), head_dim, p.norm_eps, head);
        rotate_half(head, cos, sin, half);
      }
      store_qkv(row.data(), qkv_row, num_rotated * head_dim);  // v is not modified
      if (slots[t] < 0) continue;  // e.g. padding, or a token whose KV is already cached
      const int64_t block = slots[t] / block_size;
      const int64_t offset = slots[t] % block_size;
      for (int64_t g = 0; g < p.num_kv_heads; ++g) {
        const int64_t cache_row = (block * p.num_kv_heads + g) * block_size + offset;
        const int64_t cache_index = cache_row * head_dim;
        const float* k = row.data() + (p.num_heads + g) * head_dim;
        const float* v = k + int64_t{p.num_kv_heads} * head_dim;
        if (p.kv_quant.kind != KvQuant::kNone) {
          quantize_kv_row(k, head_dim, p.kv_quant.kind, kv_row(p.k_cache, p.kv_quant, false, cache_row, head_dim));
          quantize_kv_row(v, head_dim, p.kv_quant.kind, kv_row(p.v_cache, p.kv_quant, true, cache_row, head_dim));
          continue;
        }
        // The cache gets the fp32 values, rounded once to its own dtype.
        store_k(k, static_cast<char*>(p.k_cache.data()) +
                       dtype_bytes(p.k_cache.dtype(), cache_index), head_dim);
        store_v(v, static_cast<char*>(p.v_cache.data()) +
                       dtype_bytes(p.v_cache.dtype(), cache_index), head_dim);
      }
    }
  });
}

}  // namespace brisk::cpu
