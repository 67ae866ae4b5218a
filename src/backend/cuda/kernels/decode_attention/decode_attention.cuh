// GQA-aware paged decode attention on tensor cores (mma.sync m16n8k16, bf16 / f16).
//
// Work split: one thread block per (key split, kv head x row chunk, sequence). Its 16 query rows
// are (token, head) pairs of one sequence that share the kv head (group heads x up to 8 tokens,
// 16 at a time), so each K/V tile is read from HBM once for all of them. Padding rows (a group
// of 4 fills 4 of the 16) cost only tensor-core time, which is idle in this memory-bound kernel.
//
// Start-up (it decides the single-wave shapes, where every block starts at once): the ragged
// layout, the block table and an L2 prefetch of the split's first keys are issued before the
// programmatic-dependent wait, so they overlap the previous kernel's tail, and so does the
// pipeline fill unless it holds new tokens' keys (with the fused append, below: only in a grid of
// several waves). A fill issued after the wait goes after q in a single wave, so that q's loads
// do not queue behind the burst of every block's fill.
//
// Mainloop (kWarps warps): key tiles of 16 kWarps keys (K and V, 16-byte cp.async with zero
// fill, rows XOR-swizzled for conflict-free ldmatrix) stream through a kStages-deep
// shared-memory ring, so (kStages - 1) tiles per block, and (kStages - 1) x blocks per SM tiles
// per SM, are in flight. Warp w takes keys [16 w, 16 w + 16) of each tile: S = Q K^T (16 x 16,
// fp32 accumulators), causal / sliding-window mask per row, online softmax in log2 units, P
// rounded to the KV dtype, O += P V (16 x head_dim, fp32). The block-table entries of a tile are
// loaded one tile ahead, so issuing copies never waits on them; tiles start at multiples of the
// tile size, so with block size 16 each warp's 16 keys are one contiguous 16 x head_dim block.
//
// Fused RoPE and KV append (DecodeAttentionArgs::rope, decode_rope_append.cuh): q rows are
// rotated as they load, and a block whose keys include the new tokens writes their rotated K and
// V into the cache before copying the tiles that hold them (before its fill only where the fill
// holds them). It replaces a separate rope_kv_append launch per layer: H200, Llama-3-8B shape,
// batch 1 decode 203-205 -> 206-208 tokens/s.
//
// Epilogue: the warps' (max, sum, O) merge through shared memory; with one split the block
// writes normalised rows to out, else unnormalised fp32 partials + (max, sum), and the last
// split block of the (sequence, kv head, row chunk) to finish merges them all into out
// (merge_splits, decode_merge.cuh; no second kernel, whose launch and wait would add to the wave's tail).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/decode_attention/decode_merge.cuh"
#include "backend/cuda/kernels/decode_attention/decode_rope_append.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/paged_kv_tiles.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda::decode {

constexpr int kKeysPerWarp = 16;
static_assert(kDecodeRowsPerBlock == 16);
// Shared-memory plan and copy mapping of one kernel shape (decode_attention.h: DecodeKernelShape).
template <int kHeadDimArg, int kWarpsArg, int kStagesArg, int kBlocksPerSmArg>
struct DecodeConfig {
  static constexpr int kHeadDim = kHeadDimArg;
  static constexpr int kWarps = kWarpsArg;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kTileKeys = kWarps * kKeysPerWarp;  // keys per pipeline stage
  static constexpr int kStages = kStagesArg;
  static constexpr int kBlocksPerSm = kBlocksPerSmArg;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per key row
  static constexpr int kTileBytes = kTileKeys * kHeadDim * 2;  // K (or V) of one stage
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kPipeBytes = kStages * kStageBytes;
  static constexpr int kQBytes = kDecodeRowsPerBlock * kHeadDim * 2;
  static constexpr int kReduceStride = kHeadDim + 4;  // floats; padding against bank conflicts
  static constexpr int kReduceBytes = kWarps * kDecodeRowsPerBlock * kReduceStride * 4;
  static constexpr int kRingBytes = kPipeBytes > kReduceBytes ? kPipeBytes : kReduceBytes;
  static constexpr int kMlBytes = kWarps * kDecodeRowsPerBlock * 2 * 4;
  static constexpr int kSharedBytes = kQBytes + kRingBytes + kMlBytes;
  static constexpr int kLoadsPerThread = kTileKeys * kChunks / kThreads;  // per K (or V) tile
  static constexpr int kKeyStep = kThreads / kChunks;  // keys between a thread's loads
  static_assert(kThreads % kChunks == 0 && kLoadsPerThread * kKeyStep == kTileKeys);
  static_assert(kStages >= 2);
  static constexpr int kQLoadsPerThread = kDecodeRowsPerBlock * kChunks / kThreads;  // 8-element runs of q
  static_assert(kQLoadsPerThread * kThreads == kDecodeRowsPerBlock * kChunks);
  // Tiles each block prefetches into L2 before its PDL wait: 128 KB of K and V per SM in all
  // (about 17 MB on 132 SMs; 2 tiles at head_dim 128). On the H200 (hd 128, 2 blocks per SM, each
  // call over another copy of the cache, evict-first copies) 1 x 32768 took 36.1-36.4 us with 2
  // tiles against 38.0-38.1 with 4, 39.3 with 6, 41.0 with 8 and 37.2-37.5 with none; 8 x 4096
  // 35.3 against 36.3; 64 x 4096 248.4 against 247.5 (2026-12-02). (Before the evict-first
  // copies, with one cache for every call, 4 tiles had been best.)
  static constexpr int kPrefetchTiles = 128 * 1024 / (kBlocksPerSm * kStageBytes);
  // K / V copies with an L2 evict-first policy: read once, their lines are the first to make
  // room, so they no longer push out the lines prefetched (above) for the tiles ahead, nor anything
  // else in L2. H200, 32 / 8 heads, each call over another copy of the cache, without and with it
  // (2026-12-02, one run): 1 x 32768 38.0 -> 37.0 us, 8 x 4096 36.3 -> 35.4, 64 x 4096 241.9 ->
  // 241.7, 8 x 4096 32 / 32 122.6 -> 121.8. Not in the 2-warp and head_dim 256 shapes: there ptxas
  // 13.0 emits some hinted copies with a uniform-register descriptor it never writes (an illegal
  // instruction at run time).
  static constexpr bool kKvEvictFirst = kWarps == 4 && kHeadDim <= 128;
  static_assert(kBlocksPerSm * (kSharedBytes + 1024) <= 228 * 1024);
};

template <FloatType kKvType, int kHeadDim, typename Config>
__global__ void __launch_bounds__(Config::kThreads, Config::kBlocksPerSm)
decode_attention_kernel(const DecodeAttentionArgs a) {
  constexpr int kWarps = Config::kWarps;
  constexpr int kThreads = Config::kThreads;
  constexpr int kTileKeys = Config::kTileKeys;
  using Kv = KvTraits<kKvType>;
  constexpr int kChunks = Config::kChunks;
  constexpr int kStages = Config::kStages;
  constexpr int kLoads = Config::kLoadsPerThread;
  extern __shared__ __align__(128) uint8_t shared[];
  uint8_t* q_s = shared;                                // [16, head_dim], swizzled
  uint8_t* ring_s = shared + Config::kQBytes;           // kStages x {K tile, V tile}
  float* ml_s = reinterpret_cast<float*>(ring_s + Config::kRingBytes);  // [warps, 16, 2]

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int split = blockIdx.x;
  const int chunk = blockIdx.y % a.num_row_chunks;
  const int kv_head = blockIdx.y / a.num_row_chunks;
  const int seq = blockIdx.z;
  const int group = a.num_heads / a.num_kv_heads;

  // Launched as a programmatic dependent (pdl.cuh). Up to pdl_wait() the block reads only the
  // ragged layout and the block table, which host copies (or kernels before the previous one)
  // wrote, never the previous kernel (attention.cc states this contract), and prefetches K / V
  // into L2, which is coherent (a line that kernel then writes is updated there).
  const int q_begin = a.query_start[seq];
  const int q_len = a.query_start[seq + 1] - q_begin;
  const int context_len = a.context_lens[seq];
  const int row0 = chunk * kDecodeRowsPerBlock;
  const int num_rows = min(kDecodeRowsPerBlock, group * q_len - row0);
  if (num_rows <= 0) return;  // uniform over the block, before any barrier

  // Keys the block's rows see: up to the last token's position, from the first token's window.
  const int first_position = context_len - q_len + row0 / group;
  const int last_position = context_len - q_len + (row0 + num_rows - 1) / group;
  const int lowest_key = a.sliding_window > 0 ? max(0, first_position - a.sliding_window + 1) : 0;
  const int key_end = max(0, last_position + 1);
  const int key_base = lowest_key & ~(kTileKeys - 1);  // tiles align with cache blocks
  const int num_all_tiles = key_end > key_base ? (key_end - key_base + kTileKeys - 1) / kTileKeys : 0;
  // This split's equal share of the actual tiles (the grid was sized from host-known bounds).
  const int tile_begin = static_cast<int>(int64_t{split} * num_all_tiles / a.num_splits);
  const int num_tiles = static_cast<int>(int64_t{split + 1} * num_all_tiles / a.num_splits) - tile_begin;
  const int split_key0 = key_base + tile_begin * kTileKeys;

  const PagedKvTiles<Config, DecodeAttentionArgs, Config::kKvEvictFirst> tiles(a, seq, kv_head, split_key0, key_end,
                                                                               num_tiles);
  tiles.prefetch_l2(Config::kPrefetchTiles);
  int fill_ids[kStages - 1][kLoads];  // ids of the pipeline fill's tiles
  int table_ids[kLoads];              // ids of the next tile to issue, loaded one tile ahead
  tiles.fetch_fill_ids(fill_ids, table_ids);

  // The fused append: a block whose keys include new tokens writes them before its copies of the
  // tiles that hold them are issued: before the fill when it holds them, else after it (the main
  // loop's first barrier orders the writes before the later tiles' copies).
  const int tiles_key_end = split_key0 + num_tiles * kTileKeys;
  const bool has_new = num_tiles > 0 && tiles_key_end > context_len - q_len;  // keys of new tokens
  const bool fill_has_new = has_new && max(context_len - q_len - split_key0, 0) / kTileKeys < kStages - 1;
  const bool appends = a.rope.qkv != nullptr && has_new;
  const bool append_first = appends && fill_has_new;
  // Only the new tokens' K / V are written by a kernel still in flight (the previous one, or this
  // block with the append fused; every other key's were written by kernels that completed before
  // the previous one started, pdl.cuh), so a fill without new keys may go out before the wait,
  // overlapping the previous kernel's tail. That pays where blocks start in waves (H200, fused:
  // 64 x 4096 257.7 -> 255.3 us, 256 x 512 155.3 -> 151.2), not in a fused single wave (1 x 32768
  // 39.0 -> 40.0). Without the fused append, in one run: 64 x 4096 244.4 -> 241.4 us, 256 x 512
  // 136.4 -> 134.2, 8 x 4096 32 / 32 124.5 -> 122.8; in a single wave 8 x 4096 36.9 -> 36.4, 1 x
  // 32768 38.2 -> 38.5. (The L2 prefetch above still covers the fill's tiles: starting it after
  // them lost everywhere, 1 x 32768 38.1 -> 39.8 us, 256 x 512 132.7 -> 137.6.)
  const bool fill_early = !fill_has_new && (a.rope.qkv == nullptr || !a.single_wave);
  if (fill_early) tiles.issue_fill(ring_s, fill_ids);
  NewKv<kHeadDim, kThreads> new_kv;
  if (appends) new_kv.prepare(a, q_begin, q_len);
  int q_position[Config::kQLoadsPerThread];  // the RoPE position of each q run's token (-1: none)
#pragma unroll
  for (int i = 0; i < Config::kQLoadsPerThread; ++i) {
    const int r = (tid + i * kThreads) / kChunks;
    q_position[i] = -1;
    if (a.rope.qkv != nullptr && r < num_rows) {
      const int p = a.rope.positions[q_begin + (row0 + r) / group];
      if (p >= 0 && p < a.rope.num_positions) q_position[i] = p;
    }
  }

  // Wait for the previous kernel's writes (q, and without the fused append the new tokens' K / V),
  // then let the next kernel launch early; it waits for this grid's completion before reading.
  pdl_wait();
  pdl_release();

  if (appends) new_kv.load(a, q_begin, kv_head);
  if (append_first) {
    new_kv.store(a, kv_head);
    __syncthreads();
  }

  // q rows (rows past num_rows are zeros). In a single wave every block issues its fill at once,
  // and loads queue in issue order: behind that burst q would hold the first tile's math back by
  // all of it (H200, 8 x 4096 with q after the fill: 3-5 us from the wait to the first tile of a
  // 38-39 us call), so there q is loaded first (8 x 4096 38.1 -> 37.4 us, 1 x 32768 40.0 ->
  // 38.6). In a grid of several waves most blocks start alone and the fill goes first (256 x 512:
  // 136.3 us against 138.2 with q first).
  if (!a.single_wave && !fill_early) tiles.issue_fill(ring_s, fill_ids);
  float q_vals[Config::kQLoadsPerThread][8];
#pragma unroll
  for (int i = 0; i < Config::kQLoadsPerThread; ++i) {
    const int e = tid + i * kThreads;
    const int r = e / kChunks;
    const int c = e % kChunks;
#pragma unroll
    for (int j = 0; j < 8; ++j) q_vals[i][j] = 0.0f;
    if (r < num_rows) {
      const int64_t token = q_begin + (row0 + r) / group;
      const int64_t head = int64_t{kv_head} * group + (row0 + r) % group;
      const int64_t base = token * a.q_stride + head * kHeadDim + c * 8;
#pragma unroll
      for (int j = 0; j < 8; ++j) q_vals[i][j] = load_one(a.q, a.q_type, base + j);
      rotate_q<kHeadDim>(a, q_position[i], base, c, q_vals[i]);
    }
  }
  asm volatile("" ::: "memory");  // the q loads are issued here, ahead of a single wave's fill
  if (a.single_wave && !fill_early) tiles.issue_fill(ring_s, fill_ids);
  // q -> shared memory in the KV dtype.
#pragma unroll
  for (int i = 0; i < Config::kQLoadsPerThread; ++i) {
    const int e = tid + i * kThreads;
    uint32_t words[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      words[j] = float_to_bits(q_vals[i][2 * j], kKvType) |
                 (uint32_t{float_to_bits(q_vals[i][2 * j + 1], kKvType)} << 16);
    }
    *reinterpret_cast<uint4*>(q_s + swizzled<kChunks>(e / kChunks, e % kChunks)) =
        make_uint4(words[0], words[1], words[2], words[3]);
  }

  // This thread's two rows of the mma layout: g and g + 8 (g = lane / 4).
  const int g = lane / 4;
  const int t4 = lane % 4;
  int row_hi[2], row_lo[2];  // visible keys [row_lo, row_hi]; empty for padding rows
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = g + 8 * h;
    row_hi[h] = -1;
    row_lo[h] = 0;
    if (r < num_rows) {
      row_hi[h] = context_len - q_len + (row0 + r) / group;
      row_lo[h] = a.sliding_window > 0 ? row_hi[h] - a.sliding_window + 1 : 0;
    }
  }
  const float scale_log2 = a.scale * kLog2e;

  float m[2] = {-INFINITY, -INFINITY};  // running max of the scaled scores (log2 units)
  float l[2] = {0.0f, 0.0f};            // this thread's share of the running sums
  float acc[kHeadDim / 8][4];
#pragma unroll
  for (int n = 0; n < kHeadDim / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;

  if (appends && !append_first) new_kv.store(a, kv_head);
  __syncthreads();  // q_s is written (and the new keys, for the tiles issued from here on)
  // A fragments of q for k-step kk (16 head dims). Kept in registers up to head_dim 128; at 256
  // they would push O's 128 accumulators into spills, so they are re-read from q_s per tile.
  auto load_q_frag = [&](uint32_t (&frag)[4], int kk) {
    const int matrix = lane / 8;
    ldmatrix_x4(frag, shared_address(q_s) +
                          swizzled<kChunks>((matrix & 1) * 8 + lane % 8, kk * 2 + (matrix >> 1)));
  };
  constexpr bool kQInRegisters = kHeadDim <= 128;
  uint32_t q_frag[kQInRegisters ? kHeadDim / 16 : 1][4];
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) load_q_frag(q_frag[kk], kk);
  }

  for (int t = 0; t < num_tiles; ++t) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile t landed for every thread; everyone is done with tile t - 1's slot
    tiles.issue(t + kStages - 1, table_ids, ring_s);
    cp_async_commit();
    tiles.fetch_ids(t + kStages, table_ids);

    const int warp_key0 = split_key0 + t * kTileKeys + warp * kKeysPerWarp;
    if (warp_key0 > last_position || warp_key0 + kKeysPerWarp - 1 < lowest_key) continue;
    const uint8_t* k_tile = ring_s + (t % kStages) * Config::kStageBytes;
    const uint32_t k_base = shared_address(k_tile);
    const uint32_t v_base = k_base + Config::kTileBytes;
    const int matrix = lane / 8;

    // S = Q K^T for the warp's 16 keys: n-tile 0 = keys 0-7, n-tile 1 = keys 8-15.
    float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      uint32_t qa[4];
      if constexpr (kQInRegisters) {
        qa[0] = q_frag[kk][0];
        qa[1] = q_frag[kk][1];
        qa[2] = q_frag[kk][2];
        qa[3] = q_frag[kk][3];
      } else {
        load_q_frag(qa, kk);
      }
      uint32_t b[4];
      ldmatrix_x4(b, k_base + swizzled<kChunks>(warp * kKeysPerWarp + (matrix >> 1) * 8 + lane % 8,
                                                kk * 2 + (matrix & 1)));
      Kv::mma(s[0], qa, b[0], b[1]);
      Kv::mma(s[1], qa, b[2], b[3]);
    }

    // Mask, online softmax (log2 units), P in the KV dtype as the A operand of P V.
    uint32_t p_frag[4];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float x[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = warp_key0 + (e >> 1) * 8 + 2 * t4 + (e & 1);
        const bool visible = key <= row_hi[h] && key >= row_lo[h];
        x[e] = visible ? s[e >> 1][2 * h + (e & 1)] * scale_log2 : -INFINITY;
      }
      const float tile_max = quad_max(fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3])));
      const float m_new = fmaxf(m[h], tile_max);
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      const float alpha = exp2f(m[h] - base);  // 0 while nothing was visible
      m[h] = m_new;
      float p[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) p[e] = exp2f(x[e] - base);
      // a0/a2: row g, keys 2 t4 (+8); a1/a3: row g + 8. Sums use the rounded weights.
      float r0, r1, r2, r3;
      p_frag[h] = Kv::pack(p[0], p[1], r0, r1);
      p_frag[h + 2] = Kv::pack(p[2], p[3], r2, r3);
      l[h] = l[h] * alpha + ((r0 + r1) + (r2 + r3));
#pragma unroll
      for (int n = 0; n < kHeadDim / 8; ++n) {
        acc[n][2 * h] *= alpha;
        acc[n][2 * h + 1] *= alpha;
      }
    }

    // O += P V: V rows are keys (k), columns head dims (n), read transposed.
#pragma unroll
    for (int dn = 0; dn < kHeadDim / 16; ++dn) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, v_base + swizzled<kChunks>(warp * kKeysPerWarp + (matrix & 1) * 8 + lane % 8,
                                                      dn * 2 + (matrix >> 1)));
      Kv::mma(acc[2 * dn], p_frag, b[0], b[1]);
      Kv::mma(acc[2 * dn + 1], p_frag, b[2], b[3]);
    }
  }

  // Merge the warps: per-row (max, sum) first, then the rescaled O sums through shared memory.
  cp_async_wait<0>();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] = quad_sum(l[h]);
    if (t4 == 0) {
      ml_s[(warp * kDecodeRowsPerBlock + g + 8 * h) * 2] = m[h];
      ml_s[(warp * kDecodeRowsPerBlock + g + 8 * h) * 2 + 1] = l[h];
    }
  }
  __syncthreads();  // ml_s written; every warp is done with the ring, reused below
  float* reduce_s = reinterpret_cast<float*>(ring_s);  // [warps, 16, kReduceStride]
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = g + 8 * h;
    float row_max = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) row_max = fmaxf(row_max, ml_s[(w * kDecodeRowsPerBlock + r) * 2]);
    const float factor = row_max == -INFINITY ? 0.0f : exp2f(m[h] - row_max);
    float* dst = reduce_s + (warp * kDecodeRowsPerBlock + r) * Config::kReduceStride + 2 * t4;
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n)
      *reinterpret_cast<float2*>(dst + n * 8) = make_float2(acc[n][2 * h] * factor, acc[n][2 * h + 1] * factor);
  }
  __syncthreads();

  for (int e = tid; e < kDecodeRowsPerBlock * kChunks; e += kThreads) {
    const int r = e / kChunks;
    const int c = e % kChunks;
    if (r >= num_rows) break;  // rows are in order: the rest are padding too
    float row_max = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) row_max = fmaxf(row_max, ml_s[(w * kDecodeRowsPerBlock + r) * 2]);
    float row_sum = 0.0f;
    if (row_max != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float mw = ml_s[(w * kDecodeRowsPerBlock + r) * 2];
        if (mw != -INFINITY) row_sum += ml_s[(w * kDecodeRowsPerBlock + r) * 2 + 1] * exp2f(mw - row_max);
      }
    }
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float4* src = reinterpret_cast<const float4*>(
          reduce_s + (w * kDecodeRowsPerBlock + r) * Config::kReduceStride + c * 8);
      const float4 x0 = src[0];
      const float4 x1 = src[1];
      v[0] += x0.x; v[1] += x0.y; v[2] += x0.z; v[3] += x0.w;
      v[4] += x1.x; v[5] += x1.y; v[6] += x1.z; v[7] += x1.w;
    }
    const int64_t token = q_begin + (row0 + r) / group;
    const int64_t head = int64_t{kv_head} * group + (row0 + r) % group;
    if (a.num_splits == 1) {
      const float inv_sum = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] *= inv_sum;
      const int64_t index = token * a.out_stride + head * kHeadDim + c * 8;
      if (a.out_vectorized) {
        store8(a.out, a.out_type, index, v);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) store_one(a.out, a.out_type, index + j, v[j]);
      }
    } else {
      const int64_t item = (int64_t{split} * a.num_tokens + token) * a.num_heads + head;
      float4* dst = reinterpret_cast<float4*>(a.partial_acc + item * kHeadDim + c * 8);
      dst[0] = make_float4(v[0], v[1], v[2], v[3]);
      dst[1] = make_float4(v[4], v[5], v[6], v[7]);
      if (c == 0) {
        a.partial_ml[item * 2] = row_max;
        a.partial_ml[item * 2 + 1] = row_sum;
      }
    }
  }
  if (a.num_splits == 1) return;

  // Split-KV: the last of the item's split blocks to get here merges the partials. Thread 0
  // counts the block in with an acquire-release atomic once every thread's partials are written
  // (the barrier orders them before it): release publishes them, and in the last block acquire
  // makes every other block's visible, to all its threads through the barrier that follows.
  __shared__ int is_last_s;
  const int64_t counter = (int64_t{seq} * a.num_kv_heads + kv_head) * a.num_row_chunks + chunk;
  __syncthreads();  // every thread's partials are written; reduce_s is read
  if (tid == 0) is_last_s = atomic_add_acq_rel(&a.merge_counters[counter], 1) == a.num_splits - 1;
  __syncthreads();
  if (!is_last_s) return;
  merge_splits<kHeadDim, kThreads, Config::kRingBytes>(a, q_begin, row0, num_rows, kv_head, ring_s);
  if (tid == 0) a.merge_counters[counter] = 0;  // ready for the next launch (stream-ordered after this grid)
}

template <FloatType kKvType, int kHeadDim, int kWarps, int kStages, int kBlocksPerSm>
void launch_decode_attention_instance(const DecodeAttentionArgs& a, cudaStream_t stream) {
  using Config = DecodeConfig<kHeadDim, kWarps, kStages, kBlocksPerSm>;
  constexpr auto kernel = decode_attention_kernel<kKvType, kHeadDim, Config>;
  allow_dynamic_shared_memory<kernel>(Config::kSharedBytes);
  const dim3 grid(a.num_splits, a.num_kv_heads * a.num_row_chunks, a.num_seqs);
  launch_pdl(kernel, grid, Config::kThreads, Config::kSharedBytes, stream, a);
}

}  // namespace brisk::cuda::decode
