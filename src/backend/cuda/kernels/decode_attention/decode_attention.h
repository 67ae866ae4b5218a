// Decode attention over the paged KV cache: the kernel the attention op uses when every sequence
// has at most kDecodeMaxQueryLen new tokens (decode, and speculative-decoding verification).
// Host-side view of the kernel family (no CUDA device code, no fmt): the argument struct, the
// declared support matrix and the launcher; the launch plan (row chunks, splits, fused append,
// single wave) is decode_plan.h. See decode_attention.cuh.
//
// Support matrix (the dispatch table in decode_attention.cu is built from it):
//   KV dtype  bf16, f16 (q and out: any float dtype, converted on load / store); int8, int4 and
//             fp8 codes (launch.h: KvCodes), dequantized to f16 in registers (decode_quant_tile.cuh)
//   head_dim  64, 128, 256
//   group     any num_heads / num_kv_heads (rows of group * query tokens go 16 to a block)
//   block     any power-of-two block size
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/paged_attention_args.h"

namespace brisk::cuda {

constexpr int kDecodeMaxQueryLen = 8;
constexpr int kDecodeRowsPerBlock = 16;  // the most query rows (token x head) one thread block serves
constexpr int kDecodeMaxSplits = 128;

// Keys each warp takes of every key tile: 16 over a 16-bit cache; 32 over a quantized one up to
// head_dim 128, whose tiles cost more instructions per key (dequantization, row parameters): the
// softmax's per-tile work (shuffles, votes, rescale factors) and the block's barrier then spread
// over twice the keys, and S's four n-tiles give each k-step four independent mma's.
constexpr int decode_keys_per_warp(KvCodes codes, int head_dim) {
  return codes != KvCodes::kNone && head_dim <= 128 ? 32 : 16;
}

// Query rows a thread block serves: 16 over a 16-bit cache; 8 over a quantized one, whose mainloop
// takes keys as the mma's M and rows as its N (decode_quant_tile.cuh): a GQA group of up to 8 with
// one new token fills one 8-row tile instead of padding 16 rows.
constexpr int decode_rows_per_block(KvCodes codes) { return codes == KvCodes::kNone ? kDecodeRowsPerBlock : 8; }

// The shape of one kernel instance: warps per thread block (a key tile holds keys_per_warp *
// warps keys), shared-memory pipeline stages, and the thread blocks that fit on one SM (shared
// memory bound). The split-KV cost model (decode_plan.h) reads it.
struct DecodeKernelShape {
  int warps = 4;
  int stages = 3;
  int blocks_per_sm = 2;
  int keys_per_warp = 16;
  constexpr int tile_keys() const { return warps * keys_per_warp; }
};

struct DecodeAttentionArgs : PagedAttentionArgs {
  bool out_vectorized = false;  // out rows 16-byte aligned: 8 elements per store
  // Launch shape, from host-known sizes only (CUDA-graph safe): the context bound (an upper
  // bound of every context_lens; it picks the kernel shape and sizes the splits), row chunks of
  // decode_rows_per_block (token, head) rows per kv head, and key splits; each split covers an equal share of the
  // actual context, which the kernel reads on the device.
  int64_t max_context_len = 0;
  int num_row_chunks = 1;
  int num_splits = 1;
  float* partial_acc = nullptr;  // [num_splits, num_tokens, num_heads, head_dim] when split
  float* partial_ml = nullptr;   // [num_splits, num_tokens, num_heads, 2]: max (log2 units), sum
  // With splits: one counter per (sequence, kv head, row chunk), zero at launch. Each split
  // block counts itself in after writing its partials; the last one merges them all into out (in
  // split order, so the result does not depend on which block is last) and sets the counter back
  // to zero, so the same counters serve every launch on the stream, CUDA-graph replays too.
  int* merge_counters = nullptr;
  // Whether the grid runs in one wave (every block resident at once): its blocks then all start
  // together and load q ahead of the pipeline fill (decode_attention.cuh explains why).
  bool single_wave = false;
  // rope_kv_append (rotate-half RoPE, no q / k norms) fused into the kernel (rope.qkv null: not;
  // q rotated and the cache written already): q rows are rotated as they are loaded (rounded to
  // the qkv dtype first, as the separate op stores them), and every block whose keys include new
  // tokens rotates their K and writes their K and V into the cache itself before it copies those
  // keys (blocks of other row chunks write the same bytes). q must be the q columns of qkv; qkv
  // itself is not modified.
  RopeKvAppendArgs rope;
};

// Whether the table has a kernel for this KV dtype (with codes: the dtype they dequantize to) and
// head dim.
bool decode_attention_supports(FloatType kv_type, int head_dim, KvCodes codes = KvCodes::kNone);
// The shape of the kernel the table picks for the key and the context bound (some keys have a
// shape for short contexts: more, smaller blocks hide their start-up better).
DecodeKernelShape decode_attention_shape(FloatType kv_type, int head_dim, int64_t max_context_len,
                                         KvCodes codes = KvCodes::kNone);
// Launches the attention kernel (with num_splits > 1, partial_acc, partial_ml and merge_counters
// must be set). Returns false, launching nothing, when the table has no kernel for
// (kv_type, head_dim): the caller reports it.
bool launch_decode_attention(const DecodeAttentionArgs& a, cudaStream_t stream);

}  // namespace brisk::cuda
