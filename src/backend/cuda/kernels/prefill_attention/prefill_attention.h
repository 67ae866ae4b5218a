// Prefill (and chunked-prefill) attention over the paged KV cache on tensor cores: the kernel the
// attention op uses when some sequence has more than kDecodeMaxQueryLen new tokens. Host-side
// view of the kernel family (no CUDA device code, no fmt): the argument struct, the support
// matrix, the tile shapes and the launcher. See prefill_attention.cuh for the kernel.
//
// Support matrix (the dispatch table in prefill_attention.cu is built from it):
//   KV dtype  bf16, f16 (q and out: any float dtype, converted on load / store)
//   head_dim  64, 128, 256
//   group     any num_heads / num_kv_heads (a block's rows are (token, head) pairs of one kv head)
//   block     any power-of-two block size
//   quantized int8, int4, fp8 codes (launch.h: KvCodes): the mma.sync kernel, each tile dequantized
//             to f16 in shared memory first (the attention op gives the Hopper kernel a dequantized
//             16-bit copy of the batch's blocks instead where it can: ops/attention.cc)
// Hopper kernel (wgmma + TMA; prefill_attention_hopper.cuh): bf16 / f16 KV, head_dim 64 / 128,
// block size >= 8 (prefill_attention_hopper_supports); the mma.sync kernel
// (prefill_attention.cuh) takes the rest.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/paged_attention_args.h"

namespace brisk::cuda {

// The shape of one kernel instance (the tile-size heuristics live in the table of
// prefill_attention.cu, apart from the kernel): 4 warps, each owning m_tiles x 16 query rows of
// the block, key tiles of tile_keys keys streamed through `stages` shared-memory stages, and
// the blocks one SM holds.
struct PrefillKernelShape {
  int m_tiles = 2;
  int tile_keys = 64;
  int stages = 2;
  int blocks_per_sm = 2;
  constexpr int rows() const { return 4 * 16 * m_tiles; }
};

struct PrefillAttentionArgs : PagedAttentionArgs {
  bool q_vectorized = false;  // q 16-byte aligned, q_stride a multiple of 8: 16-byte loads
  bool out_pairs = false;  // out 4-byte aligned, out_stride even: 16-bit outputs stored in pairs
  bool out_vectorized = false;  // out 16-byte aligned, out_stride a multiple of 8: 16-byte stores
  int max_query_len = 0;  // host-known upper bound of every sequence's new tokens: sizes the grid
  int num_row_tiles = 0;  // set by the launcher: ceil(group * max_query_len / rows)
  // The Hopper kernel's work queue: two ints (the next item, the blocks done), zero at launch;
  // the kernel's last block sets them back to zero, so one pair serves every launch on a stream.
  int* work_counters = nullptr;
};

// Whether the table has a kernel for this KV dtype (with codes: the dtype they dequantize to) and
// head dim.
bool prefill_attention_supports(FloatType kv_type, int head_dim, KvCodes codes = KvCodes::kNone);
// The shape the table picks for the key (a default shape when there is none).
PrefillKernelShape prefill_attention_shape(FloatType kv_type, int head_dim, KvCodes codes = KvCodes::kNone);
// Launches the kernel: the Hopper one (wgmma + TMA, prefill_attention_hopper.cuh) where it
// applies, else the mma.sync one of the table. Returns false, launching nothing, when neither has a kernel for
// (kv_type, head_dim): the caller reports it. num_sms sizes the Hopper kernel's persistent grid.
bool launch_prefill_attention(const PrefillAttentionArgs& a, int num_sms, cudaStream_t stream);

// The Hopper kernel's share: bf16 / f16 KV, a positive scale, head_dim 64 and 128, block size
// >= 8 (one TMA box per paged block), caches whose 2-d views have fewer than 2^31 rows, at most
// 2^30 work items, a work queue (work_counters), and a driver that encodes tensor maps. Its items
// hold the same 128 rows as the table's hd 64 / 128 shapes (num_row_tiles is shared).
bool prefill_attention_hopper_supports(const PrefillAttentionArgs& a);
constexpr int kPrefillHopperRows = 128;  // query rows per work item
void launch_prefill_attention_hopper(const PrefillAttentionArgs& a, int num_sms, cudaStream_t stream);

}  // namespace brisk::cuda
