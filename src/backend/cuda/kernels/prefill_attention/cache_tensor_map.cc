// Tensor maps over the paged caches (cache_tensor_map.h).
#include "backend/cuda/kernels/prefill_attention/cache_tensor_map.h"

#include "backend/cuda/kernels/tensor_map.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

CUtensorMap encode(const void* cache, const char* name, const PagedAttentionArgs& a, int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(a.head_dim), static_cast<cuuint64_t>(cache_tensor_rows(a))};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(a.head_dim) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const CUresult result = encode_tensor_map_16bit(map, a.kv_type, 2, cache, dims, strides, box, "attention");
  BRISK_CHECK(result == CUDA_SUCCESS,
              "attention: cuTensorMapEncodeTiled failed (CUresult {}) for the {} cache ({} rows of {}, boxes of {} rows)",
              static_cast<int>(result), name, cache_tensor_rows(a), a.head_dim, box_rows);
  return map;
}

}  // namespace

CUtensorMap make_query_tensor_map(const PagedAttentionArgs& a, int group, int tokens) {
  CUtensorMap map{};
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(a.head_dim), static_cast<cuuint64_t>(a.num_heads),
                              static_cast<cuuint64_t>(a.num_tokens)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(a.head_dim) * 2, static_cast<cuuint64_t>(a.q_stride) * 2};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(group), static_cast<cuuint32_t>(tokens)};
  const CUresult result = encode_tensor_map_16bit(map, a.kv_type, 3, a.q, dims, strides, box, "attention");
  BRISK_CHECK(result == CUDA_SUCCESS,
              "attention: cuTensorMapEncodeTiled failed (CUresult {}) for q ({} tokens x {} heads x {}, boxes of {} x {})",
              static_cast<int>(result), a.num_tokens, a.num_heads, a.head_dim, group, tokens);
  return map;
}

int64_t cache_tensor_rows(const PagedAttentionArgs& a) {
  return (a.num_cache_blocks * a.num_kv_heads) << a.block_size_log2;
}

CacheTensorMaps make_cache_tensor_maps(const PagedAttentionArgs& a, int box_rows) {
  return {encode(a.k_cache, "k", a, box_rows), encode(a.v_cache, "v", a, box_rows)};
}

}  // namespace brisk::cuda
