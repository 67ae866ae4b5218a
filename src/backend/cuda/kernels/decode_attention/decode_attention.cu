// Decode attention: the dispatch table over the support matrix (the launch plan is
// decode_plan.cc). The attention kernels themselves are instantiated one head dim per file
// (decode_attention_hd*.cu) so that they compile in parallel.
#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"

namespace brisk::cuda {
namespace decode {

template <FloatType kKvType, int kHeadDim, int kWarps, int kStages, int kBlocksPerSm>
void launch_decode_attention_instance(const DecodeAttentionArgs& a, cudaStream_t stream);

// Instances (decode_attention_hd*.cu): key, shape (warps, stages, blocks per SM), and the
// largest context bound the entry serves (0: any). The first matching entry is taken. At
// head_dim 128, contexts up to 1024 keys use 2-warp blocks, 4 per SM, whose start-ups overlap
// better; longer ones 4-warp blocks, 2 per SM, which stream faster (docs/perf/decode_attention.md).
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

}  // namespace decode

bool decode_attention_supports(FloatType kv_type, int head_dim) {
  // Every key has an entry for any context bound (the last one of the key).
  return decode::find_entry(kv_type, head_dim, INT64_MAX) != nullptr;
}

DecodeKernelShape decode_attention_shape(FloatType kv_type, int head_dim, int64_t max_context_len) {
  const decode::TableEntry* entry = decode::find_entry(kv_type, head_dim, max_context_len);
  return entry != nullptr ? entry->shape : DecodeKernelShape{};
}

bool launch_decode_attention(const DecodeAttentionArgs& a, cudaStream_t stream) {
  const decode::TableEntry* entry = decode::find_entry(a.kv_type, a.head_dim, a.max_context_len);
  if (entry == nullptr) return false;
  if (a.num_tokens == 0 || a.num_seqs == 0) return true;
  entry->launch(a, stream);
  return true;
}

}  // namespace brisk::cuda
