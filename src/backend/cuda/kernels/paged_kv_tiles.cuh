// The K/V tiles of one (sequence, KV head) streamed from the paged cache into a shared-memory ring
// by the tensor-core attention kernels (decode_attention/, prefill_attention/). Tile t holds keys
// [key0 + t * kTileKeys, ...); thread tid copies the 16-byte chunk tid % kKvChunks of keys
// tid / kKvChunks + i * kKeyStep with cp.async, into the XOR-swizzled rows (kv_swizzled) of ring
// stage t % kStages. Keys at or past key_end, or whose block-table entry is outside the table or
// the cache, land as zeros (and read nothing). The block-table entries of a tile are fetched a
// tile ahead (fetch_ids), so their latency hides behind the current tile's math. Where cache
// blocks hold whole runs of a tile (runs of at most 64 keys, the default block size), each run
// takes one entry and one address, and its copies go at fixed offsets from it. A quantized
// cache's rows (kv_codes.cuh) are copied as they are, and with int8 / int4 codes the rows' scales
// and zeros land after the stage's V (KvRingLayout), zeros past key_end.
//
// Config provides kHeadDim, kTileKeys, kStages and KvRingLayout's members; Args (the kernel's
// argument struct, read in place like the kernels' own code does) block_tables,
// max_blocks_per_seq, k_cache, v_cache, quant, num_kv_heads, block_size_log2 and num_cache_blocks.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/kv_codes.cuh"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda {

// The ring's layout for K / V of kCodes (kNone: 16-bit floats) in tiles of kTileKeys keys copied
// by kThreads threads.
template <int kHeadDim, int kTileKeys, int kThreads, KvCodes kCodesArg>
struct KvRingLayout {
  static constexpr KvCodes kCodes = kCodesArg;
  static constexpr int kKvRowBytes = kv_row_bytes<kCodes>(kHeadDim);
  static constexpr int kKvChunks = kKvRowBytes / 16;          // 16-byte chunks per key row
  static constexpr int kTileBytes = kTileKeys * kKvRowBytes;  // K (or V) of one stage
  static constexpr bool kRowParams = kv_has_row_params<kCodes>();
  // int8 / int4: after the stage's V, the K scales and V scales (f16), then K zeros and V zeros.
  static constexpr int kParamsBytes = kRowParams ? 6 * kTileKeys : 0;
  static constexpr int kKScaleOffset = 2 * kTileBytes;
  static constexpr int kVScaleOffset = kKScaleOffset + 2 * kTileKeys;
  static constexpr int kKZeroOffset = kVScaleOffset + 2 * kTileKeys;
  static constexpr int kVZeroOffset = kKZeroOffset + kTileKeys;
  static constexpr int kStageBytes = 2 * kTileBytes + kParamsBytes;
  static constexpr int kLoadsPerThread = kTileKeys * kKvChunks / kThreads;  // per K (or V) tile
  static constexpr int kKeyStep = kThreads / kKvChunks;  // keys between a thread's loads
  static_assert(kKvRowBytes % 16 == 0 && kThreads % kKvChunks == 0 && kLoadsPerThread * kKeyStep == kTileKeys);
};

// The byte offset of 16-byte chunk `chunk` of key row `row` in a tile of kKvChunks-chunk rows:
// rows of 8 chunks or more are swizzled<>; shorter rows share 128-byte lines, whose chunks are
// XOR-swizzled by line so that the row reads of the quantized decode kernel spread over the banks.
template <int kKvChunks>
__device__ __forceinline__ uint32_t kv_swizzled(int row, int chunk) {
  if constexpr (kKvChunks >= 8) {
    return swizzled<kKvChunks>(row, chunk);
  } else {
    const int unit = row * kKvChunks + chunk;
    const int line = unit / 8;
    return static_cast<uint32_t>((line * 8 + ((unit % 8) ^ ((line & (kKvChunks - 1)) * (8 / kKvChunks)))) * 16);
  }
}

// [src, src + bytes) into L2 (Hopper bulk prefetch; 16-byte aligned, bytes a multiple of 16).
__device__ __forceinline__ void prefetch_l2_bulk(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}

template <class Config, class Args, bool kEvictFirst = false>
struct PagedKvTiles {
  static constexpr int kLoads = Config::kLoadsPerThread;
  static constexpr int kRunKeys = Config::kTileKeys < 64 ? Config::kTileKeys : 64;
  static constexpr int kRuns = Config::kTileKeys / kRunKeys;
  static_assert(kRunKeys % Config::kKeyStep == 0 && kRuns <= kLoads);

  __device__ __forceinline__ PagedKvTiles(const Args& args, int seq, int kv_head_arg, int key0_arg, int key_end_arg,
                                          int num_tiles_arg)
      : a(args),
        block_table(args.block_tables + int64_t{seq} * args.max_blocks_per_seq),
        kv_head(kv_head_arg),
        key0(key0_arg),
        key_end(key_end_arg),
        num_tiles(num_tiles_arg),
        load_chunk(static_cast<int>(threadIdx.x) % Config::kKvChunks),
        load_key0(static_cast<int>(threadIdx.x) / Config::kKvChunks),
        whole_runs(args.block_size_log2 >= __builtin_ctz(kRunKeys)),
        policy(kEvictFirst ? l2_evict_first_policy() : 0) {}

  // Block ids of tile `tile`'s keys for this thread's copies (-1: no copy, zeros land instead);
  // with whole runs only ids[r], run r's block.
  __device__ __forceinline__ void fetch_ids(int tile, int (&ids)[kLoads]) const {
    if (whole_runs) {
#pragma unroll
      for (int r = 0; r < kRuns; ++r) {
        const int key = key0 + tile * Config::kTileKeys + r * kRunKeys;
        const int block = key >> a.block_size_log2;
        ids[r] = tile < num_tiles && key < key_end && block < a.max_blocks_per_seq ? block_table[block] : -1;
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int key = key0 + tile * Config::kTileKeys + load_key0 + i * Config::kKeyStep;
      const int block = key >> a.block_size_log2;
      ids[i] = -1;
      if (tile < num_tiles && key < key_end && block < a.max_blocks_per_seq) ids[i] = block_table[block];
    }
  }

  // Queues the copies of tile `tile` into its ring stage (nothing past the last tile).
  __device__ __forceinline__ void issue(int tile, const int (&ids)[kLoads], uint8_t* ring) const {
    if (tile >= num_tiles) return;
    uint8_t* k_dst = ring + (tile % Config::kStages) * Config::kStageBytes;
    uint8_t* v_dst = k_dst + Config::kTileBytes;
    const int block_mask = (1 << a.block_size_log2) - 1;
    const char* k_cache = static_cast<const char*>(a.k_cache);
    const char* v_cache = static_cast<const char*>(a.v_cache);
    if (whole_runs) {  // one block holds each run: one address per run, the copies at fixed offsets from it
      const int tile_key0 = key0 + tile * Config::kTileKeys;
      bool in_cache[kRuns];
      int64_t row0[kRuns];
      int keys[kRuns];  // of each run, those before key_end (0 for a run outside the cache)
      const char* k_src[kRuns];
      const char* v_src[kRuns];
#pragma unroll
      for (int r = 0; r < kRuns; ++r) {
        const int run_key0 = tile_key0 + r * kRunKeys;
        in_cache[r] = ids[r] >= 0 && ids[r] < a.num_cache_blocks;
        row0[r] = in_cache[r] ? ((int64_t{ids[r]} * a.num_kv_heads + kv_head) << a.block_size_log2) +
                                    (run_key0 & block_mask)
                              : 0;
        keys[r] = in_cache[r] ? key_end - run_key0 : 0;
        k_src[r] = k_cache + row0[r] * Config::kKvRowBytes + load_chunk * 16;
        v_src[r] = v_cache + row0[r] * Config::kKvRowBytes + load_chunk * 16;
      }
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        constexpr int kLoadsPerRun = kLoads / kRuns;
        const int r = i / kLoadsPerRun;
        const int local = load_key0 + i * Config::kKeyStep;
        const bool valid = in_cache[r] && tile_key0 + local < key_end;
        const uint32_t dst = kv_swizzled<Config::kKvChunks>(local, load_chunk);
        const int run_local = local - r * kRunKeys;
        copy(shared_address(k_dst + dst), k_src[r] + run_local * Config::kKvRowBytes, valid ? 16 : 0);
        copy(shared_address(v_dst + dst), v_src[r] + run_local * Config::kKvRowBytes, valid ? 16 : 0);
      }
      if constexpr (Config::kRowParams) issue_tile_row_params(row0, keys, k_dst);
      return;
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int local = load_key0 + i * Config::kKeyStep;
      const int key = key0 + tile * Config::kTileKeys + local;
      const int id = ids[i];
      const bool valid = key < key_end && id >= 0 && id < a.num_cache_blocks;
      const int64_t row = valid ? ((int64_t{id} * a.num_kv_heads + kv_head) << a.block_size_log2) + (key & block_mask)
                                : 0;
      const int64_t offset = valid ? row * Config::kKvRowBytes + load_chunk * 16 : 0;
      const uint32_t dst = kv_swizzled<Config::kKvChunks>(local, load_chunk);
      copy(shared_address(k_dst + dst), k_cache + offset, valid ? 16 : 0);
      copy(shared_address(v_dst + dst), v_cache + offset, valid ? 16 : 0);
      if constexpr (Config::kRowParams) {
        if (load_chunk == 0) issue_row_params(local, key, row, valid, k_dst);
      }
    }
  }

  // Int8 / int4 with whole runs: each run's K scales, V scales, K zeros and V zeros are four runs
  // of the parameter tensors (rows row0[r] ..), copied 16 bytes at a time by the first threads;
  // the keys from keys[r] on (those past key_end) land as zeros.
  __device__ __forceinline__ void issue_tile_row_params(const int64_t (&row0)[kRuns], const int (&keys)[kRuns],
                                                        uint8_t* stage) const {
    constexpr int kScaleCopies = kRunKeys * 2 / 16, kZeroCopies = kRunKeys / 16;
    constexpr int kCopiesPerRun = 2 * (kScaleCopies + kZeroCopies);
    static_assert(kRuns * kCopiesPerRun <= Config::kThreads);
    const int t = static_cast<int>(threadIdx.x);
    if (t >= kRuns * kCopiesPerRun) return;
    const int r = t / kCopiesPerRun;
    int64_t run_row0 = row0[0];
    int run_keys = keys[0];
#pragma unroll
    for (int i = 1; i < kRuns; ++i) {  // selected, not indexed: the arrays stay in registers
      if (r == i) {
        run_row0 = row0[i];
        run_keys = keys[i];
      }
    }
    const int u0 = t % kCopiesPerRun;
    const bool scale = u0 < 2 * kScaleCopies;
    const int u = scale ? u0 : u0 - 2 * kScaleCopies;
    const int per = scale ? kScaleCopies : kZeroCopies;
    const bool value = u >= per;
    const int piece = value ? u - per : u;
    const int bytes_per_key = scale ? 2 : 1;
    const int first = piece * 16 / bytes_per_key;  // the piece's first key in the run
    const int bytes = min(max(run_keys - first, 0) * bytes_per_key, 16);
    const char* src = scale ? reinterpret_cast<const char*>((value ? a.quant.v_scale : a.quant.k_scale) + run_row0)
                            : reinterpret_cast<const char*>((value ? a.quant.v_zero : a.quant.k_zero) + run_row0);
    const int offset = scale ? (value ? Config::kVScaleOffset : Config::kKScaleOffset)
                             : (value ? Config::kVZeroOffset : Config::kKZeroOffset);
    cp_async_16(shared_address(stage + offset + r * kRunKeys * bytes_per_key + piece * 16), src + piece * 16, bytes);
  }

  // Int8 / int4: the scales of keys (key, key + 1) for an even local key, and the zeros of keys
  // [key, key + 4) for a local key divisible by 4 (block sizes of 4 and more keep them in one
  // block), the keys past key_end zero-filled.
  __device__ __forceinline__ void issue_row_params(int local, int key, int64_t row, bool valid, uint8_t* stage) const {
    const int ahead = valid ? key_end - key : 0;  // keys from `key` on that exist
    if (local % 2 == 0) {
      const int bytes = 2 * min(ahead, 2);
      cp_async_4(shared_address(stage + Config::kKScaleOffset + 2 * local), a.quant.k_scale + row, bytes);
      cp_async_4(shared_address(stage + Config::kVScaleOffset + 2 * local), a.quant.v_scale + row, bytes);
    }
    if (local % 4 == 0) {
      const int bytes = min(ahead, 4);
      cp_async_4(shared_address(stage + Config::kKZeroOffset + local), a.quant.k_zero + row, bytes);
      cp_async_4(shared_address(stage + Config::kVZeroOffset + local), a.quant.v_zero + row, bytes);
    }
  }

  // Brings the K and V of tiles [0, count) into L2 with bulk prefetches, one per run of keys
  // contiguous in the cache (a cache block, or a tile's share of one). A kernel may issue them
  // before waiting on the kernel that writes the new tokens' K / V: L2 is the point of coherence,
  // so a prefetched line that kernel then writes is updated there, and the copies that follow the
  // wait read the new bytes.
  __device__ __forceinline__ void prefetch_l2(int count) const {
    constexpr int kTileKeysLog2 = __builtin_ctz(Config::kTileKeys);
    static_assert((1 << kTileKeysLog2) == Config::kTileKeys);
    const int run_log2 = min(static_cast<int>(a.block_size_log2), kTileKeysLog2);
    const int runs = (min(count, num_tiles) * Config::kTileKeys) >> run_log2;
    const uint32_t run_bytes = static_cast<uint32_t>(Config::kKvRowBytes) << run_log2;
    const int block_mask = (1 << a.block_size_log2) - 1;
    for (int r = static_cast<int>(threadIdx.x); r < runs; r += static_cast<int>(blockDim.x)) {
      const int key = key0 + (r << run_log2);
      const int block = key >> a.block_size_log2;
      if (key >= key_end || block >= a.max_blocks_per_seq) break;
      const int id = block_table[block];
      if (id < 0 || id >= a.num_cache_blocks) continue;
      const int64_t offset =
          (((int64_t{id} * a.num_kv_heads + kv_head) << a.block_size_log2) + (key & block_mask)) * Config::kKvRowBytes;
      prefetch_l2_bulk(static_cast<const char*>(a.k_cache) + offset, run_bytes);
      prefetch_l2_bulk(static_cast<const char*>(a.v_cache) + offset, run_bytes);
    }
  }

  // Fills the pipeline (the ids of all its tiles in flight together, one commit group per
  // stage) and returns in next_ids the ids of the first tile not yet issued.
  __device__ __forceinline__ void fill(uint8_t* ring, int (&next_ids)[kLoads]) const {
    int fill_ids[Config::kStages - 1][kLoads];
    fetch_fill_ids(fill_ids, next_ids);
    issue_fill(ring, fill_ids);
  }

  // fill() in two steps, for a kernel that reads the block table before it may read K / V (the
  // decode kernel fetches the ids before waiting on the kernel that writes the new token's K / V).
  __device__ __forceinline__ void fetch_fill_ids(int (&fill_ids)[Config::kStages - 1][kLoads],
                                                 int (&next_ids)[kLoads]) const {
#pragma unroll
    for (int s = 0; s < Config::kStages - 1; ++s) fetch_ids(s, fill_ids[s]);
    fetch_ids(Config::kStages - 1, next_ids);
  }
  __device__ __forceinline__ void issue_fill(uint8_t* ring, const int (&fill_ids)[Config::kStages - 1][kLoads]) const {
#pragma unroll
    for (int s = 0; s < Config::kStages - 1; ++s) {
      issue(s, fill_ids[s], ring);
      cp_async_commit();
    }
  }

  // A mainloop's step t over the ring: waits until tile t has landed for every thread and every
  // warp is done with tile t - 1's stage, queues tile t + kStages - 1 into that stage, fetches the
  // ids of the tile after it, and returns tile t's stage.
  __device__ __forceinline__ uint8_t* next_stage(int t, int (&ids)[kLoads], uint8_t* ring) const {
    cp_async_wait<Config::kStages - 2>();
    __syncthreads();
    issue(t + Config::kStages - 1, ids, ring);
    cp_async_commit();
    fetch_ids(t + Config::kStages, ids);
    return ring + (t % Config::kStages) * Config::kStageBytes;
  }

  // One 16-byte copy (cp_async_16), with the evict-first policy where the kernel asks for it.
  __device__ __forceinline__ void copy(uint32_t dst, const void* src, int src_bytes) const {
    if constexpr (kEvictFirst) {
      cp_async_16(dst, src, src_bytes, policy);
    } else {
      cp_async_16(dst, src, src_bytes);
    }
  }

  const Args& a;
  const int32_t* block_table;  // the sequence's row
  int kv_head;
  int key0;
  int key_end;
  int num_tiles;
  int load_chunk;
  int load_key0;
  bool whole_runs;  // the block size is at least kRunKeys: each run of a tile lies in one cache block
  uint64_t policy;  // l2_evict_first_policy() with kEvictFirst
};

}  // namespace brisk::cuda
