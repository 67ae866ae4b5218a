// W4A16 for decode-sized M (1..16) streamed through shared memory: y = x * dequant(w)^T with the
// weights in the tile layout (Int4Layout::kTiles16, backend.h) and group_size % 128 == 0.
// gemm_w4a16 sends it only where it beats the register-ring kernel (w4a16_heuristics.h: M <= 2
// on weights of up to 64 Mi values; measured numbers there).
//
// Why another kernel beside w4a16_mma.cu: at M <= 16 the work is streaming ~0.5 byte per
// multiply-add, and the register-ring kernel keeps its bytes in flight in registers (127 of
// them per thread, ~3 warps per scheduler): ncu showed it issue/latency bound at 31-41% of DRAM
// bandwidth. Here the bytes in flight live in shared memory instead:
// - one producer thread per CTA streams the CTA's weights with 1-d bulk copies (TMA, no tensor
//   map: a tile's bytes are contiguous in kTiles16) into a ring of kStageChunks KiB stages
//   guarded by mbarriers, ~100+ KiB in flight per SM, enough to cover DRAM latency at full
//   rate without a single register. Each tile's 16 rows of scales and zero points are one
//   contiguous piece of the [N, K / group] arrays (rows n0..n0+15), copied once per tile into a
//   small ring of their own.
// - x (M <= 16 rows) is copied once into shared memory (row pitch K * 2 + 16 bytes, which puts
//   the 32 lanes' 16-byte reads of 8 tokens x 4 K offsets on distinct banks).
// - sixteen consumer warps take one of each stage's 1 KiB chunks (16 rows x 128 K) each (four
//   warps a scheduler hide the dependent LOP3 / MMA latencies) and run the same math
//   as w4a16_mma.cu with the scale after the MMA: LOP3 makes 128 + q (bf16; 1024 + q for f16)
//   exactly, mma.sync m16n8k16 takes the weights as A and x as B (K reordered inside the MMA as
//   there: lane (g, t) holds rows g and g + 8 at K offsets 32 t + 8 w of each chunk), the
//   chunk's x sums are computed once per CTA from shared memory, and each chunk's fp32 sums become
//   s (sum (128 + q) x - (128 + z) sum x).
// - the CTAs are persistent (one per SM) and split the whole weight stream, tile-major and
//   1 KiB chunk by chunk, into equal contiguous ranges (stream-K): every SM streams from the
//   first to the last microsecond whatever N and K are. A tile that lies whole inside a CTA's
//   range is reduced over the warps and written to y; the few tiles shared by two CTAs (at
//   most two per CTA) leave fp32 partials that a second small kernel adds in CTA order, so the
//   result is deterministic and the launch is CUDA-graph safe (no atomics, no counters).
// Both kernels use programmatic dependent launch (pdl.cuh) to hide launch latency.
//
// Where it stands (H200): gate_up M = 1 in 37.7 us (1.63 TB/s) against the ring kernel's 33.7;
// ring depth (2-12 stages), copy engine (TMA or cp.async) and 8 or 16 consumer warps did not
// move it, a division-free stage walk took it from 46 to 37.7 us, so a serial per-stage cost
// (the producer's or the consumers' bookkeeping and barrier round trips) still sets the pace.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_heuristics.h"
#include "backend/cuda/kernels/w4a16/w4a16_stream.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

using namespace hopper;

constexpr int kConsumerWarps = 16;
constexpr int kConsumerThreads = 32 * kConsumerWarps;
constexpr int kThreads = kConsumerThreads + 32;  // + the producer warp
constexpr int kChunkBytes = 1024;                // 16 rows x 128 K of int4
constexpr int kStageChunks = 16;                 // 16 KiB of weights a stage
constexpr int kMaxStages = 12;
constexpr int kMaxScaleSlots = 8;
constexpr int kConsumerBarrier = 1;  // named barrier of the consumer warps (0 is __syncthreads)
constexpr int kSharedLimit = 227 * 1024;

// Where things lie in dynamic shared memory and how the CTAs split the stream; computed on the
// host (plan) so that the kernel's bookkeeping is a few loads from the parameter space.
struct StreamPlan {
  int64_t total_chunks;   // N / 16 tiles x chunks_per_tile
  int chunks_per_tile;    // K / 128
  int groups;             // K / group_size (scale columns)
  int chunks_per_group;   // group_size / 128
  int stages;             // ring stages of kStageChunks chunks
  int scale_slots;        // tiles of scales / zero points in flight
  uint32_t scale_bytes;   // one tile's scales: 16 x groups x 2 or 4
  uint32_t zero_bytes;    // one tile's zero points (0 when symmetric)
  uint32_t slot_bytes;
  uint32_t x_pitch;       // bytes a token in shared memory
  int group_shift;        // log2(chunks_per_group), or -1 when that is not a power of two
  uint32_t off_slots, off_x, off_xsum, off_zero, off_red, off_bars, smem_bytes;
  bool bulk;              // 1-d bulk copies (TMA) rather than the producer warp's cp.async
};

__host__ __device__ constexpr uint32_t align16(uint32_t v) { return (v + 15u) & ~15u; }

__device__ __forceinline__ int64_t range_start(int64_t cta, int64_t ctas, int64_t total) { return cta * total / ctas; }

// A consumer warp's share of one stage: chunks warp + 16 j (j < kCount) of the stage's n, all
// kCount at once so that their loads and MMA chains overlap. A chunk past n is computed on a
// valid one's bytes with scale 0 (shared memory holds finite bf16 / f16 only), which keeps the
// body free of branches.
template <FloatType kType, int kMTiles, int kCount>
__device__ __forceinline__ void consume_chunks(const W4A16Args& a, const StreamPlan& p, const uint8_t* smem,
                                               const uint8_t* stage, const uint8_t* sc, int c0, int n, int warp,
                                               int lane, float (&acc)[kMTiles][4]) {
  using M = Int4Pairs<kType>;
  const int g = lane / 4, t = lane % 4;
  uint4 wv[kCount][2];
  float scale[kCount][2], zero[kCount][2];
  int chunk[kCount];
#pragma unroll
  for (int j = 0; j < kCount; ++j) {
    const int cl = warp + kConsumerWarps * j;
    const bool valid = cl < n;
    const int cs = valid ? cl : n - 1;
    chunk[j] = c0 + cs;
    wv[j][0] = *reinterpret_cast<const uint4*>(stage + cs * kChunkBytes + lane * 16);
    wv[j][1] = *reinterpret_cast<const uint4*>(stage + cs * kChunkBytes + 512 + lane * 16);
    const int group = p.group_shift >= 0 ? chunk[j] >> p.group_shift : chunk[j] / p.chunks_per_group;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int idx = (8 * h + g) * p.groups + group;
      const float sv = a.scale_type == FloatType::kF32
                           ? reinterpret_cast<const float*>(sc)[idx]
                           : bits_to_float(reinterpret_cast<const uint16_t*>(sc)[idx], a.scale_type);
      scale[j][h] = valid ? sv : 0.0f;
      zero[j][h] = M::kOffset + (p.zero_bytes != 0 ? static_cast<float>(sc[p.scale_bytes + idx]) : 8.0f);
    }
  }
  // Two accumulators per product (even and odd MMA of a word) halve the dependent MMA chain.
  float part[kCount][kMTiles][2][4];
#pragma unroll
  for (int j = 0; j < kCount; ++j)
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int i = 0; i < 4; ++i) part[j][mt][e][i] = 0.0f;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
#pragma unroll
    for (int j = 0; j < kCount; ++j) {
      uint32_t frag[2][4];  // [row g / g + 8][nibble pair i]
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        frag[0][i] = ((word_of(wv[j][0], w) >> (4 * i)) & 0x000F000Fu) | M::kMagic;
        frag[1][i] = ((word_of(wv[j][1], w) >> (4 * i)) & 0x000F000Fu) | M::kMagic;
      }
      const uint32_t a0[4] = {frag[0][0], frag[1][0], frag[0][1], frag[1][1]};
      const uint32_t a1[4] = {frag[0][2], frag[1][2], frag[0][3], frag[1][3]};
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        // Tokens past M read a line of zeros: an address select instead of a branch.
        const int token = 8 * mt + g;
        const uint32_t offset = token < a.m ? p.off_x + token * p.x_pitch + (chunk[j] * 128 + 32 * t + 8 * w) * 2
                                            : p.off_zero + 16 * t;
        const uint4 xv = pair_halves(*reinterpret_cast<const uint4*>(smem + offset));
        KvTraits<kType>::mma(part[j][mt][0], a0, xv.x, xv.y);
        KvTraits<kType>::mma(part[j][mt][1], a1, xv.z, xv.w);
      }
    }
  }
  // c0, c1: row g, tokens 2t, 2t + 1; c2, c3: row g + 8, the same tokens.
  const float* xsum = reinterpret_cast<const float*>(smem + p.off_xsum);
  const int chunks = p.chunks_per_tile;
#pragma unroll
  for (int j = 0; j < kCount; ++j)
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      float xs[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int token = 8 * mt + 2 * t + e;
        xs[e] = token < a.m ? xsum[token * chunks + chunk[j]] : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int h = i >> 1;
        const float dot = part[j][mt][0][i] + part[j][mt][1][i];
        acc[mt][i] = fmaf(scale[j][h], fmaf(-zero[j][h], xs[i & 1], dot), acc[mt][i]);
      }
    }
}

// Walks a CTA's range stage by stage, and the ring and scale slots with their phase parities,
// without a division: a 64-bit division per stage on the producer thread alone (the loop's
// bookkeeping is serial) held the stream to ~1.3 TB/s whatever the ring depth.
struct StageCursor {
  int64_t tile;
  int c0;
  int stage = 0, stage_parity = 0;
  int slot = -1, slot_parity = 0;
  __device__ StageCursor(int64_t start, int chunks_per_tile) {
    tile = start / chunks_per_tile;
    c0 = static_cast<int>(start - tile * chunks_per_tile);
  }
  __device__ void next_slot(int slots) {
    if (++slot == slots) {
      slot = 0;
      slot_parity ^= 1;
    }
  }
  __device__ void advance(int n, int chunks_per_tile, int stages) {
    c0 += n;
    if (c0 == chunks_per_tile) {
      c0 = 0;
      ++tile;
    }
    if (++stage == stages) {
      stage = 0;
      stage_parity ^= 1;
    }
  }
};

template <FloatType kType, int kMTiles>
__global__ void __launch_bounds__(kThreads, 1) w4a16_stream_kernel(W4A16Args a, StreamPlan p, float* partials) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int stages = p.stages, slots = p.scale_slots;
  const uint32_t full0 = base + p.off_bars, empty0 = full0 + 8 * stages;
  const uint32_t sfull0 = empty0 + 8 * stages, sempty0 = sfull0 + 8 * slots, xfull = sempty0 + 8 * slots;
  if (threadIdx.x == 0) {
    const int arrivals = p.bulk ? 1 : 32;  // the elected thread, or every producer lane
    for (int s = 0; s < stages; ++s) {
      mbarrier_init(full0 + 8 * s, arrivals);
      mbarrier_init(empty0 + 8 * s, kConsumerWarps);
    }
    for (int s = 0; s < slots; ++s) {
      mbarrier_init(sfull0 + 8 * s, arrivals);
      mbarrier_init(sempty0 + 8 * s, kConsumerWarps);
    }
    mbarrier_init(xfull, arrivals);
    mbarrier_init_fence();
  }
  __syncthreads();
  // Everything above overlaps the previous kernel; the weights themselves may have been written
  // by the stream's previous kernel (the load-time repack), so even they wait.
  pdl_wait();
  pdl_release();

  const int C = p.chunks_per_tile;
  const int64_t ctas = gridDim.x, cta = blockIdx.x;
  const int64_t start = range_start(cta, ctas, p.total_chunks), end = range_start(cta + 1, ctas, p.total_chunks);

  if (warp == kConsumerWarps) {  // the producer
    if (p.bulk && lane != 0) return;  // one thread issues the bulk copies
    const int64_t x_row_bytes = a.k * 2;
    const uint8_t* x = static_cast<const uint8_t*>(a.x);
    if (p.bulk) {  // one elected thread, 1-d bulk copies (TMA)
      if (lane == 0) {
        mbarrier_arrive_expect_tx(xfull, static_cast<uint32_t>(a.m * x_row_bytes));
        for (int token = 0; token < a.m; ++token) {
          bulk_copy_to_shared(base + p.off_x + token * p.x_pitch, x + token * a.x_stride * 2,
                              static_cast<uint32_t>(x_row_bytes), xfull);
        }
      }
    } else {  // the whole warp, 16-byte cp.async: each lane's arrival counts once its copies land
      for (int token = 0; token < a.m; ++token)
        for (int64_t off = lane * 16; off < x_row_bytes; off += 512)
          cp_async_16(base + p.off_x + token * p.x_pitch + static_cast<uint32_t>(off), x + token * a.x_stride * 2 + off);
      cp_async_arrive(xfull);
    }
    StageCursor cur(start, C);
    for (int64_t q = start; q < end;) {
      const int64_t tile = cur.tile;
      const int c0 = cur.c0;
      const int n = static_cast<int>(min(static_cast<int64_t>(min(kStageChunks, C - c0)), end - q));
      if (q == start || c0 == 0) {  // the tile's scales and zero points
        cur.next_slot(slots);
        const int slot = cur.slot;
        mbarrier_wait(sempty0 + 8 * slot, cur.slot_parity ^ 1);
        const uint32_t bar = sfull0 + 8 * slot, dst = base + p.off_slots + slot * p.slot_bytes;
        const uint8_t* scales = static_cast<const uint8_t*>(a.scales) + tile * p.scale_bytes;
        const uint8_t* zeros = a.zeros + tile * p.zero_bytes;
        if (p.bulk) {
          if (lane == 0) {
            mbarrier_arrive_expect_tx(bar, p.scale_bytes + p.zero_bytes);
            bulk_copy_to_shared(dst, scales, p.scale_bytes, bar);
            if (p.zero_bytes != 0) bulk_copy_to_shared(dst + p.scale_bytes, zeros, p.zero_bytes, bar);
          }
        } else {
          for (uint32_t off = lane * 16; off < p.scale_bytes; off += 512) cp_async_16(dst + off, scales + off);
          for (uint32_t off = lane * 16; off < p.zero_bytes; off += 512) cp_async_16(dst + p.scale_bytes + off, zeros + off);
          cp_async_arrive(bar);
        }
      }
      const int r = cur.stage;
      mbarrier_wait(empty0 + 8 * r, cur.stage_parity ^ 1);
      const uint32_t dst = base + r * (kStageChunks * kChunkBytes);
      const uint8_t* src = a.qweight + q * kChunkBytes;
      if (p.bulk) {
        if (lane == 0) {
          mbarrier_arrive_expect_tx(full0 + 8 * r, n * kChunkBytes);
          bulk_copy_to_shared(dst, src, n * kChunkBytes, full0 + 8 * r);
        }
      } else {
        for (int off = lane * 16; off < n * kChunkBytes; off += 512) cp_async_16(dst + off, src + off);
        cp_async_arrive(full0 + 8 * r);
      }
      cur.advance(n, C, stages);
      q += n;
    }
    cp_async_wait_all();  // no copy outlives its thread
    return;
  }

  // The consumers.
  const int64_t first_tile = start / C;
  float acc[kMTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[mt][i] = 0.0f;
  mbarrier_wait(xfull, 0);
  // Each token's x sum over each 128-K chunk (for the zero points), 16 lanes a chunk; and the
  // zero line that tokens past M read.
  {
    const int units = a.m * C * 16;  // 16-byte pieces of x
    float* xsum = reinterpret_cast<float*>(smem + p.off_xsum);
    for (int u0 = 0; u0 < units; u0 += kConsumerThreads) {
      const int u = u0 + static_cast<int>(threadIdx.x);
      const int token = u / (C * 16), piece = u - token * (C * 16);
      float sum = 0.0f;
      if (u < units) {
        const uint4 v = *reinterpret_cast<const uint4*>(smem + p.off_x + token * p.x_pitch + piece * 16);
        float f[8];
        load8(&v, a.x_type, 0, f);
        sum = ((f[0] + f[1]) + (f[2] + f[3])) + ((f[4] + f[5]) + (f[6] + f[7]));
      }
#pragma unroll
      for (int o = 8; o >= 1; o >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
      if (u < units && (lane & 15) == 0) xsum[token * C + piece / 16] = sum;
    }
    if (threadIdx.x < 4) reinterpret_cast<uint4*>(smem + p.off_zero)[threadIdx.x] = make_uint4(0, 0, 0, 0);
    named_barrier_sync(kConsumerBarrier, kConsumerThreads);
  }

  StageCursor cur(start, C);
  int ts = 0;  // tiles finished (parity of the reduction buffer)
  for (int64_t q = start; q < end;) {
    const int64_t tile = cur.tile;
    const int c0 = cur.c0;
    const int n = static_cast<int>(min(static_cast<int64_t>(min(kStageChunks, C - c0)), end - q));
    if (q == start || c0 == 0) {
      cur.next_slot(slots);
      mbarrier_wait(sfull0 + 8 * cur.slot, cur.slot_parity);
    }
    const int slot = cur.slot;
    const int r = cur.stage;
    mbarrier_wait(full0 + 8 * r, cur.stage_parity);
    const uint8_t* stage = smem + r * (kStageChunks * kChunkBytes);
    const uint8_t* sc = smem + p.off_slots + slot * p.slot_bytes;
    static_assert(kStageChunks <= kConsumerWarps, "a chunk a warp and stage");
    if (warp < n) consume_chunks<kType, kMTiles, 1>(a, p, smem, stage, sc, c0, n, warp, lane, acc);
    __syncwarp();
    if (lane == 0) mbarrier_arrive(empty0 + 8 * r);
    cur.advance(n, C, stages);
    q += n;
    if (q == end || c0 + n == C) {  // the CTA's last chunk of this tile: reduce over the warps
      if (lane == 0) mbarrier_arrive(sempty0 + 8 * slot);
      float* red = reinterpret_cast<float*>(smem + p.off_red) + (ts & 1) * (kConsumerWarps * kMTiles * 128);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        *reinterpret_cast<float4*>(red + ((warp * kMTiles + mt) * 32 + lane) * 4) =
            make_float4(acc[mt][0], acc[mt][1], acc[mt][2], acc[mt][3]);
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][i] = 0.0f;
      }
      // Double-buffered by tile parity: a warp writes red[(ts + 2) & 1] only after the barrier
      // of tile ts + 1, which every thread reaches after its reads of tile ts.
      named_barrier_sync(kConsumerBarrier, kConsumerThreads);
      const int out = threadIdx.x;  // (token, row) = (out / 16, out % 16)
      const int token = out / 16, row = out % 16;
      if (token < a.m) {
        const int mt = token / 8, tk = token % 8;
        const int src_lane = (row % 8) * 4 + tk / 2, i = (row / 8) * 2 + tk % 2;
        float sum = 0.0f;
#pragma unroll
        for (int wp = 0; wp < kConsumerWarps; ++wp) sum += red[((wp * kMTiles + mt) * 32 + src_lane) * 4 + i];
        const bool whole = tile * C >= start && (tile + 1) * C <= end;
        const int64_t col = tile * 16 + row;
        if (whole) {
          const float bias = a.bias != nullptr ? load_one(a.bias, a.bias_type, col) : 0.0f;
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, col, sum + bias);
        } else {
          const int which = tile == first_tile ? 0 : 1;
          partials[((cta * 2 + which) * a.m + token) * 16 + row] = sum;
        }
      }
      ++ts;
    }
  }
}

// The tiles that CTAs share: block b takes the tile its range ends in when that tile is split
// and b is the first CTA on it, and adds the partials of every CTA on it in CTA order.
__global__ void __launch_bounds__(kConsumerThreads) w4a16_stream_fixup_kernel(W4A16Args a, StreamPlan p, int ctas,
                                                                                const float* partials) {
  pdl_wait();
  pdl_release();
  const int C = p.chunks_per_tile;
  const int64_t b = blockIdx.x;
  const int64_t start = range_start(b, ctas, p.total_chunks), end = range_start(b + 1, ctas, p.total_chunks);
  const int64_t tile = (end - 1) / C;
  if (end % C == 0 || start > tile * C) return;  // ends on a tile boundary, or not the tile's first CTA
  const int token = threadIdx.x / 16, row = threadIdx.x % 16;
  if (token >= a.m) return;
  float sum = 0.0f;
  for (int64_t c = b; c < ctas; ++c) {
    const int64_t cs = range_start(c, ctas, p.total_chunks);
    if (cs >= (tile + 1) * C) break;
    const int which = cs / C == tile ? 0 : 1;
    sum += partials[((c * 2 + which) * a.m + token) * 16 + row];
  }
  const int64_t col = tile * 16 + row;
  const float bias = a.bias != nullptr ? load_one(a.bias, a.bias_type, col) : 0.0f;
  store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, col, sum + bias);
}

int num_ctas(const W4A16Args& a, int num_sms) {
  const int64_t total = (a.n / 16) * (a.k / 128);
  return static_cast<int>(std::clamp<int64_t>(num_sms, 1, total));
}

// The plan for these arguments; false when they do not fit the kernel.
bool make_plan(const W4A16Args& a, StreamPlan& p) {
  if (a.x_type != FloatType::kBF16 && a.x_type != FloatType::kF16) return false;
  if (a.m < 1 || a.m > kW4A16StreamMaxRows || a.n % 16 != 0 || a.k % 128 != 0 || a.group_size % 128 != 0) return false;
  if (reinterpret_cast<uintptr_t>(a.scales) % 16 != 0 || reinterpret_cast<uintptr_t>(a.zeros) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(a.x) % 16 != 0 || (a.m > 1 && a.x_stride % 8 != 0)) {
    return false;
  }
  if (a.scale_type != FloatType::kF32 && a.scale_type != FloatType::kF16 && a.scale_type != FloatType::kBF16) return false;
  const int64_t k = a.k;
  p.chunks_per_tile = static_cast<int>(k / 128);
  p.groups = static_cast<int>(k / a.group_size);
  p.chunks_per_group = a.group_size / 128;
  p.total_chunks = (a.n / 16) * p.chunks_per_tile;
  p.scale_bytes = static_cast<uint32_t>(16 * p.groups * (a.scale_type == FloatType::kF32 ? 4 : 2));
  p.zero_bytes = a.zeros != nullptr ? static_cast<uint32_t>(16 * p.groups) : 0u;
  p.slot_bytes = align16(p.scale_bytes + p.zero_bytes);
  p.x_pitch = static_cast<uint32_t>(k * 2 + 16);
  const int m_tiles = (a.m + 7) / 8;
  const int64_t x_bytes = int64_t{a.m} * p.x_pitch;
  const int64_t red_bytes = 2 * kConsumerWarps * m_tiles * 128 * 4;
  const int64_t xsum_bytes = align16(static_cast<uint32_t>(std::min<int64_t>(int64_t{a.m} * p.chunks_per_tile * 4, 1 << 30)));
  const int cpg = p.chunks_per_group;
  p.group_shift = (cpg & (cpg - 1)) == 0 ? __builtin_ctz(static_cast<unsigned>(cpg)) : -1;
  const int stages_per_tile = std::max(1, p.chunks_per_tile / kStageChunks);
  p.bulk = w4a16_stream_bulk_copies;
  const int max_stages = std::clamp(w4a16_stream_max_stages, 2, kMaxStages);
  for (int stages = max_stages; stages >= std::min(3, max_stages); --stages) {
    const int slots = std::min({kMaxScaleSlots, stages + 1, (stages + stages_per_tile - 1) / stages_per_tile + 2});
    const int64_t ring = int64_t{stages} * kStageChunks * kChunkBytes;
    const int64_t off_slots = ring;
    const int64_t off_x = off_slots + int64_t{slots} * p.slot_bytes;
    const int64_t off_xsum = off_x + align16(static_cast<uint32_t>(std::min<int64_t>(x_bytes, 1 << 30)));
    const int64_t off_zero = off_xsum + xsum_bytes;
    const int64_t off_red = off_zero + 64;
    const int64_t off_bars = off_red + red_bytes;
    const int64_t total = off_bars + 8 * (2 * stages + 2 * slots + 1);
    if (total <= kSharedLimit) {
      p.stages = stages;
      p.scale_slots = slots;
      p.off_slots = static_cast<uint32_t>(off_slots);
      p.off_x = static_cast<uint32_t>(off_x);
      p.off_xsum = static_cast<uint32_t>(off_xsum);
      p.off_zero = static_cast<uint32_t>(off_zero);
      p.off_red = static_cast<uint32_t>(off_red);
      p.off_bars = static_cast<uint32_t>(off_bars);
      p.smem_bytes = static_cast<uint32_t>(total);
      return true;
    }
  }
  return false;
}

template <FloatType kType, int kMTiles>
void launch_typed(const W4A16Args& a, const StreamPlan& p, float* partials, int ctas, cudaStream_t stream) {
  constexpr auto kernel = w4a16_stream_kernel<kType, kMTiles>;
  allow_dynamic_shared_memory<kernel>(kSharedLimit);
  launch_pdl(kernel, dim3(ctas), dim3(kThreads), p.smem_bytes, stream, a, p, partials);
}

}  // namespace

bool w4a16_stream_supported(const W4A16Args& a) {
  StreamPlan p;
  return make_plan(a, p);
}

int64_t w4a16_stream_partial_floats(const W4A16Args& a, int num_sms) {
  return int64_t{num_ctas(a, num_sms)} * 2 * a.m * 16;
}

void launch_w4a16_stream(const W4A16Args& a, float* partials, int num_sms, cudaStream_t stream) {
  StreamPlan p;
  // The caller checks w4a16_stream_supported first; anything else is a programming error.
  if (!make_plan(a, p)) BRISK_CUDA_CHECK(cudaErrorInvalidValue);
  const int ctas = num_ctas(a, num_sms);
  const bool f16 = a.x_type == FloatType::kF16;
  if (a.m <= 8) {
    f16 ? launch_typed<FloatType::kF16, 1>(a, p, partials, ctas, stream)
        : launch_typed<FloatType::kBF16, 1>(a, p, partials, ctas, stream);
  } else {
    f16 ? launch_typed<FloatType::kF16, 2>(a, p, partials, ctas, stream)
        : launch_typed<FloatType::kBF16, 2>(a, p, partials, ctas, stream);
  }
  if (ctas > 1) {
    launch_pdl(w4a16_stream_fixup_kernel, dim3(ctas), dim3(kConsumerThreads), 0, stream, a, p, ctas,
               static_cast<const float*>(partials));
  }
}

}  // namespace brisk::cuda
