// Decode attention: the dispatch table over the support matrix, the split-KV cost model and the
// kernel that merges split partials. The attention kernels themselves are instantiated one head
// dim per file (decode_attention_hd*.cu) so that they compile in parallel.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace decode {

template <FloatType kKvType, int kHeadDim, int kWarps, int kStages, int kBlocksPerSm>
void launch_decode_attention_instance(const DecodeAttentionArgs& a, cudaStream_t stream);

// Instances (decode_attention_hd*.cu): key, shape (warps, stages, blocks per SM), and the
// largest context bound the entry serves (0: any). The first matching entry is taken. At
// head_dim 128, contexts up to 1024 keys use 2-warp blocks, 4 per SM, whose start-ups overlap
// better: on the H200 (32 / 8 heads, bf16) 256 x 512 ran at 3.87 TB/s against 3.57 with 4-warp
// blocks, 2 per SM; those ran 64 x 4096 at 4.25 TB/s and 1 x 32768 at 3.02 (2-warp: 2.87).
#define BRISK_DECODE_INSTANCES(X)             \
  X(FloatType::kBF16, 64, 4, 4, 3, 0)        \
  X(FloatType::kF16, 64, 4, 4, 3, 0)         \
  X(FloatType::kBF16, 128, 2, 3, 4, 1024)    \
  X(FloatType::kF16, 128, 2, 3, 4, 1024)     \
  X(FloatType::kBF16, 128, 4, 3, 2, 0)       \
  X(FloatType::kF16, 128, 4, 3, 2, 0)        \
  X(FloatType::kBF16, 256, 4, 3, 1, 0)       \
  X(FloatType::kF16, 256, 4, 3, 1, 0)

#define BRISK_DECLARE(type, head_dim, warps, stages, blocks, max_context)                    \
  extern template void launch_decode_attention_instance<type, head_dim, warps, stages, blocks>( \
      const DecodeAttentionArgs&, cudaStream_t);
BRISK_DECODE_INSTANCES(BRISK_DECLARE)
#undef BRISK_DECLARE

using Launcher = void (*)(const DecodeAttentionArgs&, cudaStream_t);
struct TableEntry {
  FloatType kv_type;
  int head_dim;
  int64_t max_context;  // 0: any context bound
  DecodeKernelShape shape;
  Launcher launch;
};

// The support matrix (decode_attention.h).
constexpr TableEntry kTable[] = {
#define BRISK_ENTRY(type, head_dim, warps, stages, blocks, max_context) \
  {type, head_dim, max_context, {warps, stages, blocks},                \
   &launch_decode_attention_instance<type, head_dim, warps, stages, blocks>},
    BRISK_DECODE_INSTANCES(BRISK_ENTRY)
#undef BRISK_ENTRY
};

const TableEntry* find_entry(FloatType kv_type, int head_dim, int64_t max_context_len) {
  for (const TableEntry& entry : kTable) {
    if (entry.kv_type == kv_type && entry.head_dim == head_dim &&
        (entry.max_context == 0 || max_context_len <= entry.max_context))
      return &entry;
  }
  return nullptr;
}

constexpr int kCombineWarps = 4;

// One warp per (token, head): out = sum_s acc_s 2^(m_s - M) / sum_s l_s 2^(m_s - M), M = max m_s,
// the exact merge of the splits' online-softmax states (an empty split has m = -inf, acc = 0).
// Lanes first compute the splits' weights together (into shared memory), then sum the partial
// rows with independent loads. Launched as a programmatic dependent of the attention kernel:
// griddepcontrol.wait returns once that grid finished and its writes are visible, so this
// kernel's launch overlaps the attention kernel's tail.
__global__ void decode_attention_combine_kernel(const DecodeAttentionArgs a) {
  __shared__ float weights_s[kCombineWarps][kDecodeMaxSplits];
  pdl_wait();
  pdl_release();
  const int64_t num_items = int64_t{a.num_tokens} * a.num_heads;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  float* weights = weights_s[warp];
  const int num_quads = a.head_dim / 4;
  for (int64_t item = int64_t{blockIdx.x} * kCombineWarps + warp; item < num_items;
       item += int64_t{gridDim.x} * kCombineWarps) {
    float row_max = -INFINITY;
    for (int s = lane; s < a.num_splits; s += 32)
      row_max = fmaxf(row_max, a.partial_ml[(s * num_items + item) * 2]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      row_max = fmaxf(row_max, __shfl_xor_sync(0xFFFFFFFFu, row_max, offset));
    float row_sum = 0.0f;
    for (int s = lane; s < a.num_splits; s += 32) {
      const float m = a.partial_ml[(s * num_items + item) * 2];
      const float w = m == -INFINITY ? 0.0f : exp2f(m - row_max);
      weights[s] = w;
      row_sum += w * a.partial_ml[(s * num_items + item) * 2 + 1];
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) row_sum += __shfl_xor_sync(0xFFFFFFFFu, row_sum, offset);
    __syncwarp();
    const float inv_sum = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
    const int64_t token = item / a.num_heads;
    const int64_t head = item % a.num_heads;
    for (int q4 = lane; q4 < num_quads; q4 += 32) {
      float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const float4* src = reinterpret_cast<const float4*>(a.partial_acc + item * a.head_dim) + q4;
      const int64_t split_stride = num_items * a.head_dim / 4;  // in float4
#pragma unroll 8
      for (int s = 0; s < a.num_splits; ++s) {
        const float w = weights[s];
        const float4 x = src[s * split_stride];
        sum.x += x.x * w;
        sum.y += x.y * w;
        sum.z += x.z * w;
        sum.w += x.w * w;
      }
      const int64_t index = token * a.out_stride + head * a.head_dim + q4 * 4;
      store_one(a.out, a.out_type, index, sum.x * inv_sum);
      store_one(a.out, a.out_type, index + 1, sum.y * inv_sum);
      store_one(a.out, a.out_type, index + 2, sum.z * inv_sum);
      store_one(a.out, a.out_type, index + 3, sum.w * inv_sum);
    }
    __syncwarp();  // weights are read before the next item overwrites them
  }
}

void launch_combine(const DecodeAttentionArgs& a, cudaStream_t stream) {
  const int64_t items = int64_t{a.num_tokens} * a.num_heads;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((items + kCombineWarps - 1) / kCombineWarps, 1 << 16)));
  launch_pdl(decode_attention_combine_kernel, grid, kCombineWarps * 32, 0, stream, a);
}

}  // namespace decode

bool decode_attention_supports(FloatType kv_type, int head_dim) {
  // Every key has an entry for any context bound (the last one of the key).
  return decode::find_entry(kv_type, head_dim, INT64_MAX) != nullptr;
}

DecodeKernelShape decode_attention_shape(FloatType kv_type, int head_dim, int64_t max_context_len) {
  const decode::TableEntry* entry = decode::find_entry(kv_type, head_dim, max_context_len);
  return entry != nullptr ? entry->shape : DecodeKernelShape{};
}

int decode_attention_row_chunks(int group, int max_query_len) {
  return (group * std::max(max_query_len, 1) + kDecodeRowsPerBlock - 1) / kDecodeRowsPerBlock;
}

// Time, in keys streamed by one block: blocks = sequences x kv heads x row chunks x splits run
// in waves of (SMs x blocks per SM); in each wave a block pays a start-up (its first copies wait
// on the sequence's lengths and block table: about 128 keys' time) and streams ceil(tiles /
// splits) key tiles of the context bound; splitting adds the combine kernel (about 128 keys).
// Take the fewest splits that minimise it, each split keeping at least 2 tiles. (A model
// without the start-up term favoured thousands of 2-tile blocks: 64 x 4096 fell from 4.25 to
// 2.46 TB/s.)
int decode_attention_num_splits(const DecodeAttentionArgs& a, int num_sms) {
  constexpr int64_t kStartupKeys = 128;
  constexpr int64_t kCombineKeys = 128;
  const DecodeKernelShape shape = decode_attention_shape(a.kv_type, a.head_dim, a.max_context_len);
  const int64_t tile_keys = shape.tile_keys();
  const int64_t blocks = int64_t{a.num_seqs} * a.num_kv_heads * a.num_row_chunks;
  const int64_t slots = int64_t{std::max(num_sms, 1)} * shape.blocks_per_sm;
  const int64_t tiles = (std::max<int64_t>(a.max_context_len, 1) + tile_keys - 1) / tile_keys;
  const int max_splits = static_cast<int>(std::clamp<int64_t>(tiles / 2, 1, kDecodeMaxSplits));
  int best = 1;
  int64_t best_cost = -1;
  for (int splits = 1; splits <= max_splits; ++splits) {
    const int64_t waves = (blocks * splits + slots - 1) / slots;
    const int64_t cost = waves * (((tiles + splits - 1) / splits) * tile_keys + kStartupKeys) +
                         (splits > 1 ? kCombineKeys : 0);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = splits;
    }
  }
  return best;
}

bool launch_decode_attention(const DecodeAttentionArgs& a, cudaStream_t stream) {
  const decode::TableEntry* entry = decode::find_entry(a.kv_type, a.head_dim, a.max_context_len);
  if (entry == nullptr) return false;
  if (a.num_tokens == 0 || a.num_seqs == 0) return true;
  entry->launch(a, stream);
  if (a.num_splits > 1 && a.merge_counters == nullptr) decode::launch_combine(a, stream);
  return true;
}

}  // namespace brisk::cuda
