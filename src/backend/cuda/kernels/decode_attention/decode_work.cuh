// The decode attention kernel's scheduler: which (key split, kv head x row chunk, sequence) a
// thread block serves, the keys its rows see and its split's tiles, and the order of its start-up.
#pragma once

#include <climits>
#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"

namespace brisk::cuda::decode {

// Grid (split, kv head x row chunk, sequence). The block's rows (C::kRowsPerBlock) are (token,
// head) pairs of one sequence that share the kv head, token-major (row = token * group + head in
// group), so every K / V tile read serves them all. num_rows <= 0: the sequence has no such row
// chunk.
struct DecodeWork {
  int split, chunk, kv_head, seq, group;
  int q_begin, q_len, context_len;  // the sequence's new tokens [q_begin, q_begin + q_len)
  int row0, num_rows;               // rows [row0, row0 + num_rows) of group * q_len
};

// Reads only the ragged layout, which host copies wrote: callable before the PDL wait.
template <typename C>
__device__ __forceinline__ DecodeWork decode_work(const DecodeAttentionArgs& a) {
  DecodeWork w;
  w.split = blockIdx.x;
  w.chunk = blockIdx.y % a.num_row_chunks;
  w.kv_head = blockIdx.y / a.num_row_chunks;
  w.seq = blockIdx.z;
  w.group = a.num_heads / a.num_kv_heads;
  w.q_begin = a.query_start[w.seq];
  w.q_len = a.query_start[w.seq + 1] - w.q_begin;
  w.context_len = a.context_lens[w.seq];
  w.row0 = w.chunk * C::kRowsPerBlock;
  w.num_rows = min(C::kRowsPerBlock, w.group * w.q_len - w.row0);
  return w;
}

// The keys a block's rows see, and its split's share of their tiles.
struct DecodeKeys {
  int last_position, lowest_key;  // the rows see keys in [lowest_key, last_position]
  int end;                        // last_position + 1, at least 0
  int split_key0, num_tiles;      // the split's keys [split_key0, split_key0 + num_tiles * kTileKeys)
};

// The keys row r of the block sees, [lo, hi]. Padding rows (zero q, never stored) see every key:
// they never hold the mask on.
__device__ __forceinline__ void decode_row_keys(const DecodeAttentionArgs& a, const DecodeWork& w, int r, int& lo,
                                                int& hi) {
  hi = INT_MAX;
  lo = 0;
  if (r < w.num_rows) {
    hi = w.context_len - w.q_len + (w.row0 + r) / w.group;
    lo = a.sliding_window > 0 ? hi - a.sliding_window + 1 : 0;
  }
}

template <typename C>
__device__ __forceinline__ DecodeKeys decode_keys(const DecodeAttentionArgs& a, const DecodeWork& w) {
  DecodeKeys k;
  // Up to the last token's position, from the first token's window.
  const int first_position = w.context_len - w.q_len + w.row0 / w.group;
  k.last_position = w.context_len - w.q_len + (w.row0 + w.num_rows - 1) / w.group;
  k.lowest_key = a.sliding_window > 0 ? max(0, first_position - a.sliding_window + 1) : 0;
  k.end = max(0, k.last_position + 1);
  const int key_base = k.lowest_key & ~(C::kTileKeys - 1);  // tiles align with cache blocks
  const int num_all_tiles = k.end > key_base ? (k.end - key_base + C::kTileKeys - 1) / C::kTileKeys : 0;
  // This split's equal share of the actual tiles (the grid was sized from host-known bounds).
  const int tile_begin = static_cast<int>(int64_t{w.split} * num_all_tiles / a.num_splits);
  k.num_tiles = static_cast<int>(int64_t{w.split + 1} * num_all_tiles / a.num_splits) - tile_begin;
  k.split_key0 = key_base + tile_begin * C::kTileKeys;
  return k;
}

// What a block does before its main loop, and in which order (decode_attention.cuh).
struct DecodeStartup {
  bool appends;       // it writes the new tokens' K / V into the cache (the fused append)
  bool append_first;  // ... before its pipeline fill, which holds some of them
  bool fill_early;    // its pipeline fill goes out before the PDL wait
};

template <typename C>
__device__ __forceinline__ DecodeStartup decode_startup(const DecodeAttentionArgs& a, const DecodeWork& w,
                                                        const DecodeKeys& k) {
  // The fused append: a block whose keys include new tokens writes them before its copies of the
  // tiles that hold them are issued: before the fill when it holds them, else after it (the main
  // loop's first barrier orders the writes before the later tiles' copies).
  const int past = w.context_len - w.q_len;  // position of the first new token
  const int tiles_key_end = k.split_key0 + k.num_tiles * C::kTileKeys;
  const bool has_new = k.num_tiles > 0 && tiles_key_end > past;
  const bool fill_has_new = has_new && max(past - k.split_key0, 0) / C::kTileKeys < C::kStages - 1;
  DecodeStartup s;
  s.appends = a.rope.qkv != nullptr && has_new;
  s.append_first = s.appends && fill_has_new;
  // Only the new tokens' K / V are written by a kernel still in flight (the previous one, or this
  // block with the append fused; every other key's were written by kernels that completed before
  // the previous one started, pdl.cuh), so a fill without new keys may go out before the wait,
  // overlapping the previous kernel's tail. That pays where blocks start in waves, not in a fused
  // single wave (docs/perf/decode_attention.md).
  s.fill_early = !fill_has_new && (a.rope.qkv == nullptr || !a.single_wave);
  return s;
}

}  // namespace brisk::cuda::decode
