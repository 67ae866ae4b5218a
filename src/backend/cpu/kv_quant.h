// The CPU reference of KvQuant (backend.h): one (token, kv head) row of head_dim values
// quantized into a paged cache as it is written, and read back as fp32.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace brisk::cpu {

// Where one (token, kv head) row of a quantized K or V cache lives.
struct KvRow {
  void* codes = nullptr;     // the row's bytes in the cache (head_dim, or head_dim / 2 for int4)
  Half* scale = nullptr;     // int8 / int4
  uint8_t* zero = nullptr;   // int8 / int4
  float fp8_scale = 1.0f;    // fp8
};

// The row of K (`value` false: V) for cache row index `row` (block * num_kv_heads + head) *
// block_size + offset.
KvRow kv_row(const TensorView& cache, const KvQuantParams& quant, bool value, int64_t row, int64_t head_dim);

void quantize_kv_row(const float* x, int64_t head_dim, KvQuant kind, const KvRow& out);
void dequantize_kv_row(const KvRow& row, int64_t head_dim, KvQuant kind, float* out);

}  // namespace brisk::cpu
