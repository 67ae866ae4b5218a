// Prefill attention: the dispatch table over the support matrix (prefill_attention.h) and the
// launcher, which takes the Hopper kernel where it applies.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/dispatch_table.h"
#include "backend/cuda/kernels/prefill_attention/instances/instances.inc"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"

namespace brisk::cuda {
namespace prefill {

template <FloatType kKvType, KvCodes kCodes, int kHeadDim, int kMTiles, int kTileKeys, int kStages, int kBlocksPerSm>
void launch_prefill_attention_instance(const PrefillAttentionArgs& a, cudaStream_t stream);

// The instances (instances/, generated with their support matrix by tools/gen_kernel_instances.py)
// and the dispatch table built from them.
#define BRISK_DECLARE(type, codes, head_dim, m_tiles, tile_keys, stages, blocks)                                \
  extern template void launch_prefill_attention_instance<type, codes, head_dim, m_tiles, tile_keys, stages, blocks>( \
      const PrefillAttentionArgs&, cudaStream_t);
BRISK_PREFILL_INSTANCES(BRISK_DECLARE)
#undef BRISK_DECLARE

using Entry = KernelEntry<PrefillAttentionArgs, PrefillKernelShape>;
constexpr Entry kTable[] = {
#define BRISK_ENTRY(type, codes, head_dim, m_tiles, tile_keys, stages, blocks) \
  {type, head_dim, 0, {m_tiles, tile_keys, stages, blocks},                    \
   &launch_prefill_attention_instance<type, codes, head_dim, m_tiles, tile_keys, stages, blocks>, codes},
    BRISK_PREFILL_INSTANCES(BRISK_ENTRY)
#undef BRISK_ENTRY
};

}  // namespace prefill

bool prefill_attention_supports(FloatType kv_type, int head_dim, KvCodes codes) {
  return find_kernel(prefill::kTable, kv_type, head_dim, 0, codes) != nullptr;
}

PrefillKernelShape prefill_attention_shape(FloatType kv_type, int head_dim, KvCodes codes) {
  const prefill::Entry* entry = find_kernel(prefill::kTable, kv_type, head_dim, 0, codes);
  return entry != nullptr ? entry->shape : PrefillKernelShape{};
}

bool launch_prefill_attention(const PrefillAttentionArgs& args, int num_sms, cudaStream_t stream) {
  const prefill::Entry* entry = find_kernel(prefill::kTable, args.kv_type, args.head_dim, 0, args.quant.codes);
  if (entry == nullptr) return false;
  if (args.num_tokens == 0 || args.num_seqs == 0 || args.max_query_len <= 0) return true;
  PrefillAttentionArgs a = args;
  const int64_t rows = int64_t{a.num_heads / a.num_kv_heads} * a.max_query_len;
  a.num_row_tiles = static_cast<int>((rows + entry->shape.rows() - 1) / entry->shape.rows());
  // The Hopper kernel's items take num_row_tiles of the table's shape: the row counts must agree.
  if (a.quant.codes == KvCodes::kNone && entry->shape.rows() == kPrefillHopperRows &&
      prefill_attention_hopper_supports(a)) {
    launch_prefill_attention_hopper(a, num_sms, stream);
    return true;
  }
  entry->launch(a, stream);
  return true;
}

}  // namespace brisk::cuda
