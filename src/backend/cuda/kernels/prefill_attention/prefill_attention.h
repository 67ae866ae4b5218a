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
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"

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

struct PrefillAttentionArgs {
  const void* q = nullptr;  // [num_tokens, num_heads * head_dim] rows of q_stride elements
  int64_t q_stride = 0;
  FloatType q_type = FloatType::kBF16;
  bool q_vectorized = false;  // q 16-byte aligned, q_stride a multiple of 8: 16-byte loads
  const void* k_cache = nullptr;  // [num_blocks, num_kv_heads, block_size, head_dim]
  const void* v_cache = nullptr;
  FloatType kv_type = FloatType::kBF16;
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int64_t max_blocks_per_seq = 0;
  int64_t num_cache_blocks = 0;  // block ids outside [0, num_cache_blocks) read as zeros
  const int32_t* query_start = nullptr;   // [num_seqs + 1]
  const int32_t* context_lens = nullptr;  // [num_seqs]: cached + new tokens
  void* out = nullptr;  // [num_tokens, num_heads * head_dim] rows of out_stride elements
  int64_t out_stride = 0;
  FloatType out_type = FloatType::kBF16;
  bool out_pairs = false;  // out 4-byte aligned, out_stride even: 16-bit outputs stored in pairs
  int num_seqs = 0;
  int num_tokens = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_size_log2 = 4;
  float scale = 1.0f;
  int sliding_window = 0;
  int max_query_len = 0;  // host-known upper bound of every sequence's new tokens: sizes the grid
  int num_row_tiles = 0;  // set by the launcher: ceil(group * max_query_len / rows)
};

// Whether the table has a kernel for this KV dtype and head dim.
bool prefill_attention_supports(FloatType kv_type, int head_dim);
// The shape the table picks for the key (a default shape when there is none).
PrefillKernelShape prefill_attention_shape(FloatType kv_type, int head_dim);
// Launches the kernel. Returns false, launching nothing, when the table has no kernel for
// (kv_type, head_dim): the caller reports it.
bool launch_prefill_attention(const PrefillAttentionArgs& a, cudaStream_t stream);

}  // namespace brisk::cuda
