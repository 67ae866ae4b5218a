// Decode attention: the dispatch table over the support matrix (the launch plan is
// decode_plan.cc).
#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/decode_attention/instances/instances.inc"
#include "backend/cuda/kernels/dispatch_table.h"

namespace brisk::cuda {
namespace decode {

template <FloatType kKvType, KvCodes kCodes, int kHeadDim, int kWarps, int kStages, int kBlocksPerSm>
void launch_decode_attention_instance(const DecodeAttentionArgs& a, cudaStream_t stream);

// The instances (instances/, generated with their support matrix by tools/gen_kernel_instances.py)
// and the dispatch table built from them; the first entry whose context bound covers the batch's
// is taken (docs/perf/decode_attention.md says why the bounds are where they are).
#define BRISK_DECLARE(type, codes, head_dim, warps, stages, blocks, max_context)                    \
  extern template void launch_decode_attention_instance<type, codes, head_dim, warps, stages, blocks>( \
      const DecodeAttentionArgs&, cudaStream_t);
BRISK_DECODE_INSTANCES(BRISK_DECLARE)
#undef BRISK_DECLARE

using Entry = KernelEntry<DecodeAttentionArgs, DecodeKernelShape>;
constexpr Entry kTable[] = {
#define BRISK_ENTRY(type, codes, head_dim, warps, stages, blocks, max_context)                 \
  {type, head_dim, max_context, {warps, stages, blocks, decode_keys_per_warp(codes, head_dim)}, \
   &launch_decode_attention_instance<type, codes, head_dim, warps, stages, blocks>, codes},
    BRISK_DECODE_INSTANCES(BRISK_ENTRY)
#undef BRISK_ENTRY
};

}  // namespace decode

bool decode_attention_supports(FloatType kv_type, int head_dim, KvCodes codes) {
  // Every key has an entry for any context bound (the last one of the key).
  return find_kernel(decode::kTable, kv_type, head_dim, INT64_MAX, codes) != nullptr;
}

DecodeKernelShape decode_attention_shape(FloatType kv_type, int head_dim, int64_t max_context_len, KvCodes codes) {
  const decode::Entry* entry = find_kernel(decode::kTable, kv_type, head_dim, max_context_len, codes);
  return entry != nullptr ? entry->shape : DecodeKernelShape{};
}

bool launch_decode_attention(const DecodeAttentionArgs& a, cudaStream_t stream) {
  const decode::Entry* entry = find_kernel(decode::kTable, a.kv_type, a.head_dim, a.max_context_len, a.quant.codes);
  if (entry == nullptr) return false;
  if (a.num_tokens == 0 || a.num_seqs == 0) return true;
  entry->launch(a, stream);
  return true;
}

}  // namespace brisk::cuda
