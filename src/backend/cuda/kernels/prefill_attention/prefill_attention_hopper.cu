// The Hopper prefill attention kernel (prefill_attention_hopper.cuh): its instances and the
// launcher. Instances: KV dtype x head dim, with the pipeline depth that fits shared memory
// (hd 128: 32 KB of Q + 3 stages of 64 KB of K / V; hd 64: 16 KB + 4 x 32 KB).
#include "backend/cuda/kernels/prefill_attention/cache_tensor_map.h"
#include "backend/cuda/kernels/prefill_attention/prefill_attention_hopper.cuh"
#include "backend/cuda/kernels/tensor_map.h"

namespace brisk::cuda {
namespace prefill {
namespace {

template <FloatType kKvType, int kHeadDim>
void launch_hopper(const PrefillAttentionArgs& a, int num_sms, cudaStream_t stream) {
  constexpr int kStages = kHeadDim == 128 ? 3 : 4;
  using Config = HopperConfig<kHeadDim, kStages>;
  HopperLaunchExtras extras;
  extras.box_rows_log2 = a.block_size_log2 < Config::kTileKeysLog2 ? a.block_size_log2 : Config::kTileKeysLog2;
  extras.oob_row = static_cast<int>(cache_tensor_rows(a));
  const CacheTensorMaps maps = make_cache_tensor_maps(a, 1 << extras.box_rows_log2);
  // Q by TMA when one box per panel can hold an item's rows as they are: q already in the KV
  // dtype, 16-byte rows (q_vectorized), whole tokens per item (kRows a multiple of the group).
  const int group = a.num_heads / a.num_kv_heads;
  extras.q_by_tma = a.q_type == kKvType && a.q_vectorized && Config::kRows % group == 0 &&
                    group <= 256 && a.num_tokens > 0;
  CUtensorMap q_map{};
  if (extras.q_by_tma) q_map = make_query_tensor_map(a, group, Config::kRows / group);
  launch_prefill_attention_hopper_instance<kKvType, kHeadDim, kStages>(a, maps.k, maps.v, q_map, extras, num_sms,
                                                                     stream);
}

}  // namespace
}  // namespace prefill

bool prefill_attention_hopper_supports(const PrefillAttentionArgs& a) {
  const bool type_ok = a.kv_type == FloatType::kBF16 || a.kv_type == FloatType::kF16;
  const bool scale_ok = a.scale > 0.0f;  // the running max is taken over raw scores
  const bool shape_ok = (a.head_dim == 64 || a.head_dim == 128) && a.block_size_log2 >= 3;
  // Tensor-map rows, and the row past them that boxes of missing blocks aim at, are int32.
  const bool rows_ok = cache_tensor_rows(a) + 128 <= int64_t{INT32_MAX};
  // (The queue's tickets run past the items by up to one per block.)
  const bool items_ok = int64_t{a.num_kv_heads} * a.num_seqs * a.num_row_tiles <= int64_t{1} << 30;
  return type_ok && scale_ok && shape_ok && rows_ok && items_ok && a.work_counters != nullptr &&
         tensor_map_encoding_available();
}

void launch_prefill_attention_hopper(const PrefillAttentionArgs& a, int num_sms, cudaStream_t stream) {
  using prefill::launch_hopper;
  const bool bf16 = a.kv_type == FloatType::kBF16;
  if (a.head_dim == 128) {
    bf16 ? launch_hopper<FloatType::kBF16, 128>(a, num_sms, stream) : launch_hopper<FloatType::kF16, 128>(a, num_sms, stream);
  } else {
    bf16 ? launch_hopper<FloatType::kBF16, 64>(a, num_sms, stream) : launch_hopper<FloatType::kF16, 64>(a, num_sms, stream);
  }
}

}  // namespace brisk::cuda
