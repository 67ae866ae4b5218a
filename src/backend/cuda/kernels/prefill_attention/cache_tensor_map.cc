// Tensor maps over the paged caches (cache_tensor_map.h).
#include "backend/cuda/kernels/prefill_attention/cache_tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "core/error.h"

namespace brisk::cuda {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_function() {
  static PFN_cuTensorMapEncodeTiled_v12000 function = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault, &status) ==
            cudaSuccess &&
        status == cudaDriverEntryPointSuccess) {
      function = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
    }
  });
  return function;
}

CUtensorMap encode(const void* cache, const char* name, const PagedAttentionArgs& a, int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(a.head_dim), static_cast<cuuint64_t>(cache_tensor_rows(a))};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(a.head_dim) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  BRISK_CHECK(a.kv_type == FloatType::kBF16 || a.kv_type == FloatType::kF16,
              "attention: tensor maps over the {} cache need 16-bit KV", name);
  const CUtensorMapDataType type =
      a.kv_type == FloatType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const auto function = encode_function();
  BRISK_CHECK(function != nullptr, "attention: the CUDA driver offers no cuTensorMapEncodeTiled");
  const CUresult result =
      function(&map, type, 2, const_cast<void*>(cache), dims, strides, box, element_strides,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
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
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type =
      a.kv_type == FloatType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const auto function = encode_function();
  BRISK_CHECK(function != nullptr, "attention: the CUDA driver offers no cuTensorMapEncodeTiled");
  const CUresult result = function(&map, type, 3, const_cast<void*>(a.q), dims, strides, box, element_strides,
                                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  BRISK_CHECK(result == CUDA_SUCCESS,
              "attention: cuTensorMapEncodeTiled failed (CUresult {}) for q ({} tokens x {} heads x {}, boxes of {} x {})",
              static_cast<int>(result), a.num_tokens, a.num_heads, a.head_dim, group, tokens);
  return map;
}

bool cache_tensor_maps_available() { return encode_function() != nullptr; }

int64_t cache_tensor_rows(const PagedAttentionArgs& a) {
  return (a.num_cache_blocks * a.num_kv_heads) << a.block_size_log2;
}

CacheTensorMaps make_cache_tensor_maps(const PagedAttentionArgs& a, int box_rows) {
  return {encode(a.k_cache, "k", a, box_rows), encode(a.v_cache, "v", a, box_rows)};
}

}  // namespace brisk::cuda
