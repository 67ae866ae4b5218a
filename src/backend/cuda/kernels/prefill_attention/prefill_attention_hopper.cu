// The Hopper prefill attention kernel (prefill_attention_hopper.cuh): its instances and the
// launcher. Instances: KV dtype x head dim, with the pipeline depth that fits shared memory
// (hd 128: 32 KB of Q + 2 stages of 64 KB of K / V; hd 64: 16 KB + 4 x 32 KB).
#include "backend/cuda/kernels/prefill_attention/cache_tensor_map.h"
#include "backend/cuda/kernels/prefill_attention/prefill_attention_hopper.cuh"

namespace brisk::cuda {
namespace prefill {
namespace {

template <FloatType kKvType, int kHeadDim>
void launch_hopper(const PrefillAttentionArgs& a, cudaStream_t stream) {
  constexpr int kStages = kHeadDim == 128 ? 2 : 4;
  using Config = HopperConfig<kHeadDim, kStages>;
  HopperLaunchExtras extras;
  extras.box_rows_log2 = a.block_size_log2 < Config::kTileKeysLog2 ? a.block_size_log2 : Config::kTileKeysLog2;
  extras.oob_row = static_cast<int>(cache_tensor_rows(a));
  const CacheTensorMaps maps = make_cache_tensor_maps(a, 1 << extras.box_rows_log2);
  launch_prefill_attention_hopper_instance<kKvType, kHeadDim, kStages>(a, maps.k, maps.v, extras, stream);
}

}  // namespace
}  // namespace prefill

bool prefill_attention_hopper_supports(const PrefillAttentionArgs& a) {
  const bool type_ok = a.kv_type == FloatType::kBF16 || a.kv_type == FloatType::kF16;
  const bool shape_ok = (a.head_dim == 64 || a.head_dim == 128) && a.block_size_log2 >= 3;
  // Tensor-map rows, and the row past them that boxes of missing blocks aim at, are int32.
  const bool rows_ok = cache_tensor_rows(a) + 128 <= int64_t{INT32_MAX};
  return type_ok && shape_ok && rows_ok && cache_tensor_maps_available();
}

void launch_prefill_attention_hopper(const PrefillAttentionArgs& a, cudaStream_t stream) {
  const bool bf16 = a.kv_type == FloatType::kBF16;
  if (a.head_dim == 128) {
    bf16 ? prefill::launch_hopper<FloatType::kBF16, 128>(a, stream) : prefill::launch_hopper<FloatType::kF16, 128>(a, stream);
  } else {
    bf16 ? prefill::launch_hopper<FloatType::kBF16, 64>(a, stream) : prefill::launch_hopper<FloatType::kF16, 64>(a, stream);
  }
}

}  // namespace brisk::cuda
