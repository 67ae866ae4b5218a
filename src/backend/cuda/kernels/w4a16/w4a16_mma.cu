// W4A16 on tensor cores for small and medium M (decode, short prefills): y = x * dequant(w)^T
// with mma.sync m16n8k16, the dequantized weights as the A operand (16 output features) and x
// as B (8 tokens), so one fragment serves M <= 8 and kMTiles fragments M <= 8 kMTiles.
// Weights in brisk's int4 row layout (model/int4_weight.h) or, faster, in the tile layout
// (Int4Layout::kTiles16, backend.h) that Backend::repack_int4 makes at load time: the same 16
// bytes per lane, stored so that each warp streams one contiguous run per 16-row tile.
//
// The K order inside an MMA is free (a dot product does not care), so each lane reads the
// weights in long contiguous runs: lane (g = lane / 4, t = lane % 4) streams rows g and g + 8 of
// its warp's 16-row tile, 32 K values (one 16-byte non-caching load) per row and chunk at
// K offset k0 + 128 c + 32 t. Word w of such a load (K values 8w..8w+7) gives the lane two MMA
// k-steps: nibble pairs (i, i + 4) for i = 0..3 are exactly what one LOP3 turns into a packed
// bf16x2 / f16x2 (magic-number conversion, below), and they stand in for the fragment's
// logical k pairs (2t, 2t + 1) and (2t + 8, 2t + 9). The B fragment takes x at the same
// physical positions: pairs (x[8w + i], x[8w + i + 4]).
//
// x comes from one of two places (W4A16XSource, per configuration): a copy a small kernel first
// writes in fragment order (permute_x: the 16 bytes lane l needs for tile mt, chunk and word are
// unit ((mt * K / 128 + chunk) * 4 + w) * 32 + l), so a warp's x loads are 512 contiguous bytes;
// or shared memory that each block fills once with its tokens' x over its K range, already in
// pair order, with each token's sums per chunk (no first kernel, and fewer instructions a step).
//
// Dequantization: OR-ing a nibble into the mantissa of 128 (bf16 0x4300) or 1024 (f16 0x6400)
// gives 128 + q / 1024 + q exactly. With group_size % 128 == 0 (one group per 128-K chunk) these
// go into the MMA as they are, and each chunk's fp32 sums become s (sum (128 + q) x - (128 + z)
// sum x) per row: two LOP3-class instructions per pair of weights. Otherwise (q - z) * s is
// rounded once to x's dtype before the MMA, as the dequantize-then-GEMM path does. Accumulation
// is fp32 in the MMA.
//
// Pipelining: each warp holds the next step's weight loads (kNTiles * 2 * kChunks 16-byte loads
// per lane, plus their scales and zero points) in registers while it dequantizes and multiplies
// the current step. Split-K (when N alone gives too few warps) writes fp32 partials that
// launch_w4a16_reduce sums: deterministic and graph safe. With silu_gate a warp's tile pairs 8
// gate rows with their 8 up rows (first_row), so each lane stores silu(gate) * up of its own
// sums (or the reduction does, from the partials). The kernels are programmatic
// dependents (pdl.cuh): the first steps' weight loads go out before the previous kernel ends.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_heuristics.h"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

// One pipeline step's global loads of one lane: raw, so that issuing them never waits.
template <int kNTiles, int kChunks>
struct Step {
  uint4 w[kNTiles][2][kChunks];
  uint32_t scale[kNTiles][2][kChunks];  // raw bits of the scale's own type; 0 for a chunk past the split
  uint32_t zero[kNTiles][2][kChunks];
};

// The bytes of a block's shared x (W4A16XSource::kShared) for m tokens and k_len K values: the
// rows in pair order, each padded by 16 bytes (spreads the tokens' reads over the banks), then
// each token's sum over each 128-K chunk.
__host__ __device__ constexpr int64_t shared_x_units(int64_t k_len) { return k_len / 8 + 1; }
__host__ __device__ constexpr int64_t shared_x_bytes(int64_t m, int64_t k_len) {
  return m * shared_x_units(k_len) * 16 + m * (k_len / 128) * 4;
}

// The sum of the 8 16-bit x values of v (one lane's share of a chunk sum).
__device__ __forceinline__ float sum8(const uint4& v, FloatType type) {
  float f[8];
  load8(&v, type, 0, f);
  return ((f[0] + f[1]) + (f[2] + f[3])) + ((f[4] + f[5]) + (f[6] + f[7]));
}

template <FloatType kType, FloatType kScale, int kIndex, bool kScaleAfter, bool kSiluGate>
__global__ void __launch_bounds__(kThreads, kW4A16MmaConfigs[kIndex].min_blocks)
    w4a16_mma_kernel(W4A16Args a, bool tiles, const uint4* xp, const float* xsum) {
  constexpr W4A16MmaConfig kCfg = kW4A16MmaConfigs[kIndex];
  constexpr int kMTiles = kCfg.m_tiles, kNTiles = kCfg.n_tiles, kChunks = kCfg.chunks, kStages = kCfg.stages;
  constexpr bool kShared = kCfg.x == W4A16XSource::kShared;
  using Math = Int4Pairs<kType>;
  constexpr int kStepK = 128 * kChunks;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // The warp's rows: 16 kNTiles consecutive ones from n0; with silu_gate 8 kNTiles features
  // from n0, tile nt's first 8 rows (h = 0) their gate rows and the other 8 their up rows
  // (+ N / 2), so that each lane holds the gate and up sums of the features it stores.
  const int64_t half_n = a.n / 2;
  const int64_t n0 = (int64_t{blockIdx.x} * kWarps + threadIdx.x / 32) * (kSiluGate ? 8 : 16) * kNTiles;
  const bool active = n0 < (kSiluGate ? half_n : a.n);  // uniform per warp
  auto first_row = [&](int nt, int h) -> int64_t {  // of the 8 rows g = 0..7 of tile nt, half h
    return kSiluGate ? h * half_n + n0 + 8 * nt : n0 + 16 * nt + 8 * h;
  };
  if (!kShared && !active) return;  // (shared x: the warp helps fill it first)
  // K positions in 32 bits (K < 2^31).
  const int k_begin = static_cast<int>(blockIdx.y * a.k_per_split);
  const int k_end = static_cast<int>(min(a.k, int64_t{k_begin} + a.k_per_split));
  const int64_t row_bytes = a.k / 2;
  const GroupIndex groups(a.group_size);
  const int64_t chunks_per_row = a.k / 128;

  // The lane's 16 bytes of chunk ci (K values [128 ci, 128 ci + 128)) of row h of tile nt lie
  // wstride apart from one chunk to the next: 64 bytes along a row (kRows), N / 16 KiB in the
  // chunk-major kTiles16 (where a warp's loads are 512 contiguous bytes); wptr runs along them
  // (load_step runs once per step, in order). The rows' scales and zero points start at index
  // group_row.
  const uint8_t* wptr[kNTiles][2];
  uint32_t group_row[kNTiles][2];
  const int64_t wstride = tiles ? (a.n / 16) * 1024 : 64;
  const ZeroPoints zeros(a.zeros);
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t r8 = first_row(nt, h), n = min(r8 + g, a.n - 1);  // a clamped row is never written
      const int64_t tile_bytes = kSiluGate ? (r8 / 16) * 1024 + (r8 / 8 % 2) * 512 : (n0 / 16 + nt) * 1024 + h * 512;
      wptr[nt][h] = (tiles ? a.qweight + tile_bytes + lane * 16 : a.qweight + n * row_bytes + 16 * t) +
                    (k_begin / 128) * wstride;
      group_row[nt][h] = groups.row_start(n, a.k);
    }

  // Steps at or past k_end are never computed: no loads. A chunk past k_end inside a computed
  // step (kChunks > 1) is zero-filled (scale 0: its weights count 0). kScaleAfter: one group a
  // chunk or fewer (a power of two from 128), the lane's t does not change it.
  auto load_step = [&](int k0, Step<kNTiles, kChunks>& s) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const unsigned kc = static_cast<unsigned>(k0 + 128 * c);
      const bool valid = k0 + 128 * c < k_end;
      const unsigned group = kScaleAfter ? kc >> groups.shift : groups.of(kc + 32 * t);
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (valid) {
            s.w[nt][h][c] = load_streaming(wptr[nt][h] + c * wstride);
            s.scale[nt][h][c] = load_scale<kScale>(a.scales, group_row[nt][h] + group);
            s.zero[nt][h][c] = zeros.load(group_row[nt][h] + group);
          } else if (kChunks > 1) {
            s.w[nt][h][c] = make_uint4(0, 0, 0, 0);
            s.scale[nt][h][c] = 0;
            s.zero[nt][h][c] = 0;
          }
        }
    }
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) wptr[nt][h] += kChunks * wstride;
  };

  // A ring of kStages steps in registers: kStages - 1 steps of loads stay in flight while one
  // is computed. The ring is indexed by compile-time constants (the inner loop unrolls).
  Step<kNTiles, kChunks> ring[kStages];
  if (active) {
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) load_step(k_begin + s * kStepK, ring[s]);
  }
  // Programmatic dependent launch (pdl.cuh): the weights, scales and zero points (the model's,
  // written at load time) are on their way while the kernel before this one finishes; x, its
  // permuted copy and the outputs wait for it.
  pdl_wait();

  // Shared x: the block's tokens over [k_begin, k_end) in pair order (pair_halves), row by row,
  // and each token's sum over each chunk (16 consecutive units, on 16 consecutive lanes).
  extern __shared__ uint4 x_shared[];
  const int units = (k_end - k_begin) / 8, chunks_local = (k_end - k_begin) / 128;
  const int row_units = static_cast<int>(shared_x_units(k_end - k_begin));
  float* xsum_shared = reinterpret_cast<float*>(x_shared + a.m * row_units);
  if constexpr (kShared) {
    // kFillLoads loads a thread in flight at once: every block reads the same x at the start,
    // and one at a time each would wait out that contention in turn (H200, gate_up M 1:
    // 23.6 -> 22.7 us).
    constexpr int kFillLoads = 4;
    const int total = a.m * units;
    for (int base = 0; base < total; base += kFillLoads * kThreads) {  // uniform: every lane shuffles
      uint4 v[kFillLoads];
      int token[kFillLoads], j[kFillLoads];
#pragma unroll
      for (int b = 0; b < kFillLoads; ++b) {
        const int u = base + b * kThreads + static_cast<int>(threadIdx.x);
        token[b] = u < total ? u / units : a.m;
        j[b] = u - token[b] * units;
        v[b] = make_uint4(0, 0, 0, 0);
        if (token[b] < a.m) {
          v[b] = __ldg(reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(a.x) + token[b] * a.x_stride +
                                                      k_begin + 8 * j[b]));
        }
      }
#pragma unroll
      for (int b = 0; b < kFillLoads; ++b) {
        float sum = sum8(v[b], a.x_type);
#pragma unroll
        for (int o = 1; o < 16; o *= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        if (token[b] < a.m) {
          x_shared[token[b] * row_units + j[b]] = pair_halves(v[b]);
          if (j[b] % 16 == 0) xsum_shared[token[b] * chunks_local + j[b] / 16] = sum;
        }
      }
    }
    __syncthreads();
    if (!active) return;
  }

  float acc[kMTiles][kNTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;

  // Shared x: the lane's row offsets (tokens past M read the last token's x: their MMA columns
  // are never stored).
  int x_row[kMTiles], xsum_row[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
    x_row[mt] = min(8 * mt + g, a.m - 1) * row_units + 4 * t;
    xsum_row[mt][0] = min(8 * mt + 2 * t, a.m - 1) * chunks_local;
    xsum_row[mt][1] = min(8 * mt + 2 * t + 1, a.m - 1) * chunks_local;
  }
  const int tokens_padded = 8 * kMTiles;
  auto compute_step = [&](const Step<kNTiles, kChunks>& cur, int k0) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int chunk = (k0 + 128 * c) >> 7;
      const bool valid = k0 + 128 * c < k_end;  // uniform per warp
      float scale[kNTiles][2], zero[kNTiles][2];
      uint32_t z2[kNTiles][2], s2[kNTiles][2];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          scale[nt][h] = scale_value<kScale>(cur.scale[nt][h][c]);
          zero[nt][h] = Math::offset_plus(cur.zero[nt][h][c]);
          if constexpr (!kScaleAfter && kType == FloatType::kF16) {
            s2[nt][h] = Math::splat(scale[nt][h]);
            z2[nt][h] = Math::splat(zero[nt][h]);
          }
        }
      // kScaleAfter: the MMA takes 128 + q (1024 + q) exactly, and the chunk's sums are turned
      // into s (sum (offset + q) x - (offset + z) sum x) per row (one group per chunk).
      float part[kMTiles][kNTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) part[mt][nt][i] = 0.0f;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        uint32_t frag[kNTiles][2][4];  // [tile][row g / g + 8][nibble pair i]
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint32_t word = word_of(cur.w[nt][h][c], w);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const uint32_t q = int4_pair<kType>(word, i);
              if constexpr (kScaleAfter) {
                frag[nt][h][i] = q;
              } else if constexpr (kType == FloatType::kBF16) {
                frag[nt][h][i] = Math::dequant_fp32(q, scale[nt][h], zero[nt][h] * scale[nt][h]);
              } else {
                frag[nt][h][i] = Math::dequant(q, z2[nt][h], s2[nt][h]);
              }
            }
          }
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          uint4 xv = make_uint4(0, 0, 0, 0);
          if constexpr (kShared) {
            if (kChunks == 1 || valid) {
              xv = x_shared[x_row[mt] + ((k0 - k_begin) >> 3) + 16 * c + w];
            }
          } else {
            if (valid) xv = __ldg(xp + ((mt * chunks_per_row + chunk) * 4 + w) * 32 + lane);
          }
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) {
            const uint32_t a0[4] = {frag[nt][0][0], frag[nt][1][0], frag[nt][0][1], frag[nt][1][1]};
            const uint32_t a1[4] = {frag[nt][0][2], frag[nt][1][2], frag[nt][0][3], frag[nt][1][3]};
            KvTraits<kType>::mma(part[mt][nt], a0, xv.x, xv.y);
            KvTraits<kType>::mma(part[mt][nt], a1, xv.z, xv.w);
          }
        }
      }
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        float x0 = 0.0f, x1 = 0.0f;  // the chunk's x sums of tokens 2t, 2t + 1 (c0, c1)
        if (kScaleAfter && (kChunks == 1 || valid)) {
          const int token = 8 * mt + 2 * t;
          if constexpr (kShared) {  // (tokens past M as above)
            const int cl = ((k0 - k_begin) >> 7) + c;
            x0 = xsum_shared[xsum_row[mt][0] + cl];
            x1 = xsum_shared[xsum_row[mt][1] + cl];
          } else {
            const float2 v = *reinterpret_cast<const float2*>(xsum + chunk * tokens_padded + token);
            x0 = v.x;
            x1 = v.y;
          }
        }
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            if constexpr (kScaleAfter) {
              const int h = i >> 1;
              acc[mt][nt][i] =
                  fmaf(scale[nt][h], fmaf(-zero[nt][h], (i & 1) ? x1 : x0, part[mt][nt][i]), acc[mt][nt][i]);
            } else {
              acc[mt][nt][i] += part[mt][nt][i];
            }
          }
      }
    }
  };

  for (int k0 = k_begin; k0 < k_end; k0 += kStages * kStepK) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      const int ks = k0 + s * kStepK;
      if (ks >= k_end) break;
      load_step(ks + (kStages - 1) * kStepK, ring[(s + kStages - 1) % kStages]);
      compute_step(ring[s], ks);
    }
  }
  // The kernel after this one may start as the blocks finish (each block's exit counts too):
  // released before the stores, not ahead of the main loop, where the next kernel's early
  // blocks took bandwidth and SM room from this one's (H200, gate_up M 1: 23.9 against 27.5 us,
  // and 25.4 without programmatic launch).
  pdl_release();

  // c0, c1: row g, tokens 2t, 2t + 1; c2, c3: row g + 8 (silu_gate: the up row), the same tokens.
  auto bias_of = [&](int64_t n) { return a.bias != nullptr ? load_one(a.bias, a.bias_type, n) : 0.0f; };
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int token = 8 * mt + 2 * t + (i & 1);
        const int64_t n = first_row(nt, i >> 1) + g;
        if (token >= a.m || (kSiluGate ? n0 + 8 * nt + g >= half_n : n >= a.n)) continue;
        if (a.num_splits > 1) {
          a.partials[(int64_t{blockIdx.y} * a.m + token) * a.n + n] = acc[mt][nt][i];
        } else if constexpr (!kSiluGate) {
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, n, acc[mt][nt][i] + bias_of(n));
        } else if (i < 2) {  // feature n: gate here, up in c2 / c3
          const float v = silu_times(acc[mt][nt][i] + bias_of(n), acc[mt][nt][i + 2] + bias_of(half_n + n));
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, n, v);
        }
      }
}

// x [m, k] (16-bit) into fragment order for m_tiles * 8 tokens (zeros past m), and the sum of
// each token's x over each 128-K chunk: xsum [k / 128, m_tiles * 8]. A block of 128 threads
// handles one (tile, chunk): thread = word w * 32 + lane.
__global__ void __launch_bounds__(128) w4a16_permute_x_kernel(W4A16Args a, int m_tiles, uint4* out, float* xsum) {
  __shared__ float sums[4][8];
  pdl_wait();  // x comes from the kernel before
  pdl_release();
  const int64_t chunks_per_row = a.k / 128;
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  for (int64_t block = blockIdx.x; block < m_tiles * chunks_per_row; block += gridDim.x) {
    const int64_t chunk = block % chunks_per_row, mt = block / chunks_per_row;
    const int64_t token = 8 * mt + g;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (token < a.m) {
      const uint16_t* xr = static_cast<const uint16_t*>(a.x) + token * a.x_stride + chunk * 128 + 32 * t + 8 * w;
      v = *reinterpret_cast<const uint4*>(xr);
    }
    out[block * 128 + threadIdx.x] = pair_halves(v);
    float sum = sum8(v, a.x_type);
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
    if (t == 0) sums[w][g] = sum;
    __syncthreads();
    if (threadIdx.x < 8) {
      xsum[chunk * (8 * m_tiles) + 8 * mt + threadIdx.x] =
          (sums[0][threadIdx.x] + sums[1][threadIdx.x]) + (sums[2][threadIdx.x] + sums[3][threadIdx.x]);
    }
    __syncthreads();
  }
}

template <FloatType kType, FloatType kScale, int kIndex, bool kScaleAfter, bool kSiluGate>
void launch_config(const W4A16Args& a, bool tiles, const uint4* xp, const float* xsum, cudaStream_t stream) {
  constexpr W4A16MmaConfig kCfg = kW4A16MmaConfigs[kIndex];
  constexpr auto kernel = w4a16_mma_kernel<kType, kScale, kIndex, kScaleAfter, kSiluGate>;
  const int64_t num_warps = (a.n + 16 * kCfg.n_tiles - 1) / (16 * kCfg.n_tiles);  // (silu_gate: N / 2 by 8)
  const dim3 grid(static_cast<unsigned>((num_warps + kWarps - 1) / kWarps), static_cast<unsigned>(a.num_splits));
  int shared = 0;
  if constexpr (kCfg.x == W4A16XSource::kShared) {
    allow_dynamic_shared_memory<kernel>(static_cast<int>(kW4A16MmaMaxSharedX));
    shared = static_cast<int>(shared_x_bytes(a.m, a.k_per_split));
  }
  launch_pdl(kernel, grid, dim3(kThreads), shared, stream, a, tiles, xp, xsum);
}

// Scales applied after the MMA where each 128-K chunk lies in one group (a power of two from
// 128); only these instantiations fuse silu_gate.
template <FloatType kType, FloatType kScale, int kIndex>
void launch_scales(const W4A16Args& a, bool tiles, const uint4* xp, const float* xsum, cudaStream_t stream) {
  if (a.silu_gate) {
    launch_config<kType, kScale, kIndex, true, true>(a, tiles, xp, xsum, stream);
  } else if (w4a16_mma_scales_after(a.group_size)) {
    launch_config<kType, kScale, kIndex, true, false>(a, tiles, xp, xsum, stream);
  } else {
    launch_config<kType, kScale, kIndex, false, false>(a, tiles, xp, xsum, stream);
  }
}

template <FloatType kType, int kIndex>
void launch_index(const W4A16Args& a, bool tiles, const uint4* xp, const float* xsum, int index, cudaStream_t stream) {
  if constexpr (kIndex < kW4A16MmaNumConfigs) {
    if (index != kIndex) {
      launch_index<kType, kIndex + 1>(a, tiles, xp, xsum, index, stream);
    } else if (a.scale_type == FloatType::kF32) {
      launch_scales<kType, FloatType::kF32, kIndex>(a, tiles, xp, xsum, stream);
    } else if (a.scale_type == FloatType::kBF16) {
      launch_scales<kType, FloatType::kBF16, kIndex>(a, tiles, xp, xsum, stream);
    } else {
      launch_scales<kType, FloatType::kF16, kIndex>(a, tiles, xp, xsum, stream);
    }
  }
}

}  // namespace

int64_t w4a16_mma_x_frag_bytes(const W4A16Args& a) {
  const W4A16MmaConfig cfg = kW4A16MmaConfigs[a.mma_config];
  if (cfg.x != W4A16XSource::kPermuted) return 0;
  const int64_t tokens = 8 * cfg.m_tiles;
  return tokens * a.k * 2 + tokens * (a.k / 128) * 4;  // x in fragment order, then xsum
}

namespace {
// Configuration `index`'s split over K for these sizes (k_per_split, num_splits).
void plan_splits(W4A16Args& a, int index, int num_sms) {
  const W4A16MmaConfig cfg = kW4A16MmaConfigs[index];
  const int64_t step_k = 128 * cfg.chunks;
  const int64_t num_warps = (a.n + 16 * cfg.n_tiles - 1) / (16 * cfg.n_tiles);
  const int64_t sms = std::max(num_sms, 1);
  const int64_t steps = (a.k + step_k - 1) / step_k;
  int64_t splits = 1;
  if (num_warps < sms * kW4A16MmaMinWarpsPerSm) {
    splits = std::clamp<int64_t>((sms * kW4A16MmaWarpsPerSm + num_warps - 1) / num_warps, 1,
                                 std::min<int64_t>(steps, kW4A16MmaMaxSplits));
  }
  const int64_t steps_per_split = (steps + splits - 1) / splits;
  a.k_per_split = steps_per_split * step_k;
  a.num_splits = static_cast<int>((steps + steps_per_split - 1) / steps_per_split);
}
}  // namespace

void w4a16_mma_plan(W4A16Args& a, int num_sms) {
  int index = w4a16_mma_config_index(a.m);
  plan_splits(a, index, num_sms);
  // Shared x past a block's share (a long K range, several tokens): x permuted instead.
  if (kW4A16MmaConfigs[index].x == W4A16XSource::kShared && shared_x_bytes(a.m, a.k_per_split) > kW4A16MmaMaxSharedX) {
    index = w4a16_mma_permuted_config_index(a.m);
    plan_splits(a, index, num_sms);
  }
  a.mma_config = index;
}

void launch_w4a16_mma(const W4A16Args& a, bool tiles, void* x_frag, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  const int index = a.mma_config;
  const W4A16MmaConfig cfg = kW4A16MmaConfigs[index];
  const uint4* xp = nullptr;
  const float* xsum = nullptr;
  if (cfg.x == W4A16XSource::kPermuted) {
    const int64_t tokens = 8 * cfg.m_tiles;
    uint4* frag = static_cast<uint4*>(x_frag);
    float* sums = reinterpret_cast<float*>(static_cast<char*>(x_frag) + tokens * a.k * 2);
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(cfg.m_tiles * (a.k / 128), 1, 65535));
    launch_pdl(w4a16_permute_x_kernel, dim3(blocks), dim3(128), 0, stream, a, cfg.m_tiles, frag, sums);
    BRISK_CUDA_CHECK(cudaGetLastError());
    xp = frag;
    xsum = sums;
  }
  if (a.x_type == FloatType::kF16) {
    launch_index<FloatType::kF16, 0>(a, tiles, xp, xsum, index, stream);
  } else {
    launch_index<FloatType::kBF16, 0>(a, tiles, xp, xsum, index, stream);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
  if (a.num_splits > 1) launch_w4a16_reduce(a, stream);
}

}  // namespace brisk::cuda
