// Row normalisation kernels: rms_norm (with the fused residual add) and rope_kv_append (per-head
// q/k RMSNorm, rotate-half RoPE, paged KV write). fp32 math; rms_norm one block per row.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/kv_codes.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/rope_rotate.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kNormThreads = 256;
// 8-element chunks of a row that rms_norm_cached_kernel keeps in each thread's registers.
constexpr int kNormCachedChunks = 4;
// Row counts up to which launch_rms_norm takes rms_norm_cached_kernel: decode steps, where the
// kernel before is still running when it launches. Past them (serving batches, prefill) its
// registers cost more occupancy than its early weight read gains (docs/perf/low_batch_decode.md).
constexpr int64_t kNormCachedMaxRows = 64;
constexpr int kRopeThreads = 128;
constexpr int kMaxRopePairsPerLane = 8;  // head_dim <= 2 * 32 * 8 = 512

// Elements [i, i + 8) of a vectorized row into v, with the residual added (stored, then used
// rounded to its dtype as the CPU reference does).
__device__ __forceinline__ void load_norm_chunk(const RmsNormArgs& a, const void* x, void* residual, int64_t i,
                                                float (&v)[8]) {
  load8(x, a.x_type, i, v);
  if (residual == nullptr) return;
  float res[8];
  load8(residual, a.residual_type, i, res);
#pragma unroll
  for (int j = 0; j < 8; ++j) res[j] += v[j];
  store8(residual, a.residual_type, i, res);
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = round_to(res[j], a.residual_type);
}

// Pass 1 adds the residual and sums squares; pass 2 re-reads the row (each thread its own
// elements, which it wrote itself, so no barrier is needed for them) and writes the normalised
// output. out may alias x: a thread reads x[i] before writing out[i] for the same i.
__global__ void rms_norm_kernel(RmsNormArgs a) {
  pdl_wait();
  pdl_release();
  __shared__ float scratch[32];
  const bool has_residual = a.residual != nullptr;
  for (int64_t r = blockIdx.x; r < a.num_rows; r += gridDim.x) {
    const void* x = row_ptr(a.x, a.x_type, r, a.x_stride);
    void* residual = has_residual ? row_ptr(a.residual, a.residual_type, r, a.residual_stride) : nullptr;
    void* out = row_ptr(a.out, a.out_type, r, a.out_stride);
    float sum_squares = 0.0f;
    if (a.vectorized) {
      for (int64_t i = threadIdx.x * 8; i < a.dim; i += blockDim.x * 8) {
        float v[8];
        load_norm_chunk(a, x, residual, i, v);
#pragma unroll
        for (int j = 0; j < 8; ++j) sum_squares += v[j] * v[j];
      }
    } else {
      for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) {
        float v = load_one(x, a.x_type, i);
        if (has_residual) {
          const float sum = load_one(residual, a.residual_type, i) + v;
          store_one(residual, a.residual_type, i, sum);
          v = round_to(sum, a.residual_type);
        }
        sum_squares += v * v;
      }
    }
    const float total = block_sum(sum_squares, scratch);
    const float inv_rms = 1.0f / sqrtf(total / static_cast<float>(a.dim) + a.eps);
    const void* src = has_residual ? residual : x;
    const FloatType src_type = has_residual ? a.residual_type : a.x_type;
    if (a.vectorized) {
      for (int64_t i = threadIdx.x * 8; i < a.dim; i += blockDim.x * 8) {
        float v[8], w[8];
        load8(src, src_type, i, v);
        load8(a.weight, a.weight_type, i, w);
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = v[j] * inv_rms * w[j];
        store8(out, a.out_type, i, v);
      }
    } else {
      for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x) {
        const float v = load_one(src, src_type, i);
        store_one(out, a.out_type, i, v * inv_rms * load_one(a.weight, a.weight_type, i));
      }
    }
  }
}

// rms_norm_kernel for vectorized rows of at most kNormCachedChunks chunks a thread, as a decode
// step's rows are: the weight (the model's, written at load time) is read before the
// programmatic-dependent wait, so it arrives while the kernel before finishes, and the row stays
// in registers between the passes, so the normalisation waits on no second read. The same
// arithmetic in the same order as rms_norm_kernel.
__global__ void __launch_bounds__(kNormThreads) rms_norm_cached_kernel(RmsNormArgs a) {
  float w[kNormCachedChunks][8];
#pragma unroll
  for (int c = 0; c < kNormCachedChunks; ++c) {
    const int64_t i = (threadIdx.x + int64_t{c} * kNormThreads) * 8;
    if (i < a.dim) load8(a.weight, a.weight_type, i, w[c]);
  }
  pdl_wait();
  pdl_release();
  __shared__ float scratch[32];
  for (int64_t r = blockIdx.x; r < a.num_rows; r += gridDim.x) {
    const void* x = row_ptr(a.x, a.x_type, r, a.x_stride);
    void* residual = a.residual != nullptr ? row_ptr(a.residual, a.residual_type, r, a.residual_stride) : nullptr;
    void* out = row_ptr(a.out, a.out_type, r, a.out_stride);
    float v[kNormCachedChunks][8];
    float sum_squares = 0.0f;
#pragma unroll
    for (int c = 0; c < kNormCachedChunks; ++c) {
      const int64_t i = (threadIdx.x + int64_t{c} * kNormThreads) * 8;
      if (i >= a.dim) break;
      load_norm_chunk(a, x, residual, i, v[c]);
#pragma unroll
      for (int j = 0; j < 8; ++j) sum_squares += v[c][j] * v[c][j];
    }
    const float inv_rms = 1.0f / sqrtf(block_sum(sum_squares, scratch) / static_cast<float>(a.dim) + a.eps);
#pragma unroll
    for (int c = 0; c < kNormCachedChunks; ++c) {
      const int64_t i = (threadIdx.x + int64_t{c} * kNormThreads) * 8;
      if (i >= a.dim) break;
#pragma unroll
      for (int j = 0; j < 8; ++j) v[c][j] = v[c][j] * inv_rms * w[c][j];
      store8(out, a.out_type, i, v[c]);
    }
  }
}

__device__ __forceinline__ float warp_sum(float value) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xFFFFFFFFu, value, offset);
  return value;
}

// Block (t, y) handles token t's heads y * num_warps + w (one per warp w, so a decode step's
// heads run in parallel rather than one after another) and a slice of its v heads; lane l
// handles the rotation pairs (i, i + half) for i = l, l + 32, ... The fp32 result goes both to
// qkv (rounded to its dtype) and, for k heads, to the cache (rounded once to the cache's dtype),
// like the CPU op.
__global__ void rope_kv_append_kernel(RopeKvAppendArgs a) {
  pdl_wait();
  pdl_release();
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  const int half = a.head_dim / 2;
  for (int64_t t = blockIdx.x; t < a.num_tokens; t += gridDim.x) {
    const int32_t position = a.positions[t];
    if (position < 0 || position >= a.num_positions) continue;
    const int32_t slot = a.slot_mapping[t];
    const bool write_cache = slot >= 0 && slot < a.num_slots;
    const int64_t block = write_cache ? slot / a.block_size : 0;
    const int64_t offset = write_cache ? slot % a.block_size : 0;
    const float* cos = a.cos_sin + position * a.cos_sin_stride;
    const float* sin = cos + half;
    void* row = row_ptr(a.qkv, a.qkv_type, t, a.qkv_stride);

    for (int h = blockIdx.y * num_warps + warp; h < a.num_heads + a.num_kv_heads; h += num_warps * gridDim.y) {
      const bool is_q = h < a.num_heads;
      const int64_t head_start = int64_t{h} * a.head_dim;
      float x1[kMaxRopePairsPerLane], x2[kMaxRopePairsPerLane];
      float sum_squares = 0.0f;
#pragma unroll
      for (int c = 0; c < kMaxRopePairsPerLane; ++c) {
        const int i = lane + 32 * c;
        x1[c] = i < half ? load_one(row, a.qkv_type, head_start + i) : 0.0f;
        x2[c] = i < half ? load_one(row, a.qkv_type, head_start + half + i) : 0.0f;
        sum_squares += x1[c] * x1[c] + x2[c] * x2[c];
      }
      const void* norm = is_q ? a.q_norm : a.k_norm;
      const FloatType norm_type = is_q ? a.q_norm_type : a.k_norm_type;
      float inv_rms = 1.0f;
      if (norm != nullptr) {
        inv_rms = 1.0f / sqrtf(warp_sum(sum_squares) / static_cast<float>(a.head_dim) + a.norm_eps);
      }
      const int64_t cache_index =
          ((block * a.num_kv_heads + (h - a.num_heads)) * a.block_size + offset) * a.head_dim;
#pragma unroll
      for (int c = 0; c < kMaxRopePairsPerLane; ++c) {
        const int i = lane + 32 * c;
        if (i >= half) continue;
        float v1 = x1[c], v2 = x2[c];
        if (norm != nullptr) {
          v1 = v1 * inv_rms * load_one(norm, norm_type, i);
          v2 = v2 * inv_rms * load_one(norm, norm_type, half + i);
        }
        const float y1 = rope_first_half(v1, v2, cos[i], sin[i]);
        const float y2 = rope_second_half(v1, v2, cos[i], sin[i]);
        store_one(row, a.qkv_type, head_start + i, y1);
        store_one(row, a.qkv_type, head_start + half + i, y2);
        if (!is_q && write_cache) {
          store_one(a.k_cache, a.k_type, cache_index + i, y1);
          store_one(a.k_cache, a.k_type, cache_index + half + i, y2);
        }
      }
    }
    if (!write_cache) continue;
    // v heads: copied (converted) into the cache; qkv's v part is not modified.
    const int64_t v_start = int64_t{a.num_heads + a.num_kv_heads} * a.head_dim;
    for (int64_t e = blockIdx.y * blockDim.x + threadIdx.x; e < int64_t{a.num_kv_heads} * a.head_dim;
         e += int64_t{blockDim.x} * gridDim.y) {
      const int64_t g = e / a.head_dim;
      const int64_t d = e % a.head_dim;
      const int64_t cache_index = ((block * a.num_kv_heads + g) * a.block_size + offset) * a.head_dim + d;
      store_one(a.v_cache, a.v_type, cache_index, load_one(row, a.qkv_type, v_start + e));
    }
  }
}

// Lane j of a head's group: its 8 pairs (dims 8 j + e, half + 8 j + e) normalised (norm: the
// head's weight, else none) and rotated in place.
__device__ __forceinline__ void rotate_head(const RopeKvAppendArgs& a, int32_t position, int j, const void* norm,
                                            FloatType norm_type, float inv_rms, float (&x1)[8], float (&x2)[8]) {
  const int64_t half = a.head_dim / 2;
  float cos[8], sin[8];
  load8(a.cos_sin, FloatType::kF32, position * a.cos_sin_stride + 8 * j, cos);
  load8(a.cos_sin, FloatType::kF32, position * a.cos_sin_stride + half + 8 * j, sin);
  if (norm != nullptr) {
    float w1[8], w2[8];
    load8(norm, norm_type, 8 * j, w1);
    load8(norm, norm_type, half + 8 * j, w2);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      x1[e] = x1[e] * inv_rms * w1[e];
      x2[e] = x2[e] * inv_rms * w2[e];
    }
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float y1 = rope_first_half(x1[e], x2[e], cos[e], sin[e]);
    const float y2 = rope_second_half(x1[e], x2[e], cos[e], sin[e]);
    x1[e] = y1;
    x2[e] = y2;
  }
}

// One (token, kv head) row quantized into a cache of codes (kv_codes.cuh) by the `lanes` lanes of
// its group, lane j holding dims [8 j, 8 j + 8) in x1 and the same of the second half in x2; the
// row's min and max go round the group (every lane of the warp calls this). Writes only with
// `write`; lane 0 writes the row's scale and zero.
__device__ __forceinline__ void store_quantized_row(const KvQuantArgs& q, void* cache, bool value, bool write, int64_t row,
                                                    int head_dim, int j, int lanes, const float (&x1)[8],
                                                    const float (&x2)[8]) {
  const int half = head_dim / 2;
  if (q.codes == KvCodes::kFp8) {
    if (!write) return;
    const float scale = value ? q.v_fp8_scale : q.k_fp8_scale;
    uint8_t* codes = static_cast<uint8_t*>(cache) + row * head_dim;
    for (int h = 0; h < 2; ++h) {
      const float(&x)[8] = h == 0 ? x1 : x2;
      uint32_t w[2] = {0, 0};
#pragma unroll
      for (int e = 0; e < 8; ++e) w[e / 4] |= e4m3_code(x[e], scale) << (8 * (e % 4));
      *reinterpret_cast<uint2*>(codes + h * half + 8 * j) = make_uint2(w[0], w[1]);
    }
    return;
  }
  float lo = 0.0f, hi = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    lo = fminf(lo, fminf(x1[e], x2[e]));
    hi = fmaxf(hi, fmaxf(x1[e], x2[e]));
  }
  for (int o = 1; o < lanes; o *= 2) {
    lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, o));
    hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, o));
  }
  if (!write) return;
  const bool int4 = q.codes == KvCodes::kInt4;
  const RowQuant r = row_quant(lo, hi, int4 ? 15.0f : 255.0f);
  if (j == 0) {
    (value ? q.v_scale : q.k_scale)[row] = r.scale_bits;
    (value ? q.v_zero : q.k_zero)[row] = static_cast<uint8_t>(r.zero);
  }
  uint8_t* codes = static_cast<uint8_t*>(cache) + row * (int4 ? half : head_dim);
  for (int h = 0; h < 2; ++h) {
    const float(&x)[8] = h == 0 ? x1 : x2;
    if (int4) {
      uint32_t w = 0;
#pragma unroll
      for (int e = 0; e < 8; ++e) w |= quantize_value(x[e], r) << (4 * e);
      *reinterpret_cast<uint32_t*>(codes + (h * half + 8 * j) / 2) = w;
    } else {
      uint32_t w[2] = {0, 0};
#pragma unroll
      for (int e = 0; e < 8; ++e) w[e / 4] |= quantize_value(x[e], r) << (8 * (e % 4));
      *reinterpret_cast<uint2*>(codes + h * half + 8 * j) = make_uint2(w[0], w[1]);
    }
  }
}

// rope_kv_append with 16-byte accesses (RopeKvAppendArgs::vectorized): a group of head_dim / 16
// lanes takes one (token, head) of q, k or v, lane j of it the 8 elements [8 j, 8 j + 8) of the
// head's first half and their rotation partners in the second half. A warp takes 32 / (head_dim /
// 16) consecutive items at once (the kernel above, one warp per head and 2-byte accesses, is
// several times slower: docs/perf/gemm.md). The arithmetic is the kernel above's.
__global__ void rope_kv_append_vec_kernel(RopeKvAppendArgs a, int group_lanes_log2) {
  pdl_wait();
  pdl_release();
  const int heads = a.num_heads + 2 * a.num_kv_heads;
  const int group_lanes = 1 << group_lanes_log2;
  const int lane = threadIdx.x % 32;
  const int j = lane & (group_lanes - 1);
  const int64_t half = a.head_dim / 2;
  const int64_t items = a.num_tokens * heads;
  const int64_t warp_items = 32 >> group_lanes_log2;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  // Loop bounds uniform per warp: the groups' shuffles need every lane.
  for (int64_t first = (int64_t{blockIdx.x} * (blockDim.x / 32) + threadIdx.x / 32) * warp_items; first < items;
       first += warps * warp_items) {
    const int64_t item = first + (lane >> group_lanes_log2);
    const int64_t t = item < items ? item / heads : 0;
    const int h = static_cast<int>(item - t * heads);
    const int32_t position = a.positions[t];
    const bool valid = item < items && position >= 0 && position < a.num_positions;
    const int32_t slot = a.slot_mapping[t];
    const bool write_cache = valid && slot >= 0 && slot < a.num_slots;
    const int64_t block = write_cache ? slot / a.block_size : 0;
    const int64_t offset = write_cache ? slot % a.block_size : 0;
    const int64_t index = t * a.qkv_stride + int64_t{h} * a.head_dim + 8 * j;
    float x1[8] = {}, x2[8] = {};
    if (valid) {
      load8(a.qkv, a.qkv_type, index, x1);
      load8(a.qkv, a.qkv_type, index + half, x2);
    }
    const bool is_q = h < a.num_heads, is_v = h >= a.num_heads + a.num_kv_heads;
    const int cache_head = h - a.num_heads - (is_v ? a.num_kv_heads : 0);
    const int64_t cache_index = ((block * a.num_kv_heads + cache_head) * a.block_size + offset) * a.head_dim + 8 * j;
    const void* norm = is_q ? a.q_norm : a.k_norm;
    const FloatType norm_type = is_q ? a.q_norm_type : a.k_norm_type;
    float inv_rms = 1.0f;
    if (a.q_norm != nullptr || a.k_norm != nullptr) {  // uniform over the warp, as its shuffles need
      float sum_squares = 0.0f;
#pragma unroll
      for (int e = 0; e < 8; ++e) sum_squares += valid ? x1[e] * x1[e] + x2[e] * x2[e] : 0.0f;
      for (int o = 1; o < group_lanes; o *= 2) sum_squares += __shfl_xor_sync(0xFFFFFFFFu, sum_squares, o);
      inv_rms = 1.0f / sqrtf(sum_squares / static_cast<float>(a.head_dim) + a.norm_eps);
    }
    if (a.quant.codes != KvCodes::kNone) {  // uniform over the warp, as the row reductions' shuffles need
      if (valid && !is_v) {
        rotate_head(a, position, j, norm, norm_type, inv_rms, x1, x2);
        store8(a.qkv, a.qkv_type, index, x1);
        store8(a.qkv, a.qkv_type, index + half, x2);
      }
      const int64_t row = (block * a.num_kv_heads + cache_head) * a.block_size + offset;
      store_quantized_row(a.quant, is_v ? a.v_cache : a.k_cache, is_v, write_cache && !is_q, row, a.head_dim, j,
                          group_lanes, x1, x2);
      continue;
    }
    if (!valid) continue;
    if (is_v) {
      if (write_cache) {
        store8(a.v_cache, a.v_type, cache_index, x1);
        store8(a.v_cache, a.v_type, cache_index + half, x2);
      }
      continue;
    }
    rotate_head(a, position, j, norm, norm_type, inv_rms, x1, x2);
    store8(a.qkv, a.qkv_type, index, x1);
    store8(a.qkv, a.qkv_type, index + half, x2);
    if (!is_q && write_cache) {
      store8(a.k_cache, a.k_type, cache_index, x1);
      store8(a.k_cache, a.k_type, cache_index + half, x2);
    }
  }
}

}  // namespace

void launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
  if (a.num_rows == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.num_rows, 1 << 20));
  if (a.num_rows <= kNormCachedMaxRows && a.vectorized && a.dim <= int64_t{kNormCachedChunks} * 8 * kNormThreads) {
    launch_pdl(rms_norm_cached_kernel, blocks, kNormThreads, 0, stream, a);
  } else {
    launch_pdl(rms_norm_kernel, blocks, kNormThreads, 0, stream, a);
  }
}

void launch_rope_kv_append(const RopeKvAppendArgs& a, cudaStream_t stream) {
  if (a.num_tokens == 0) return;
  if (a.vectorized) {
    constexpr int kThreads = 256;
    const int group_lanes_log2 = __builtin_ctz(static_cast<unsigned>(a.head_dim / 16));
    const int64_t items = a.num_tokens * (a.num_heads + 2 * a.num_kv_heads);
    const int64_t items_per_block = (kThreads / 32) * (32 >> group_lanes_log2);
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((items + items_per_block - 1) / items_per_block, 8192));
    launch_pdl(rope_kv_append_vec_kernel, blocks, kThreads, 0, stream, a, group_lanes_log2);
    return;
  }
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.num_tokens, 1 << 20));
  const unsigned head_groups = static_cast<unsigned>((a.num_heads + a.num_kv_heads + kRopeThreads / 32 - 1) / (kRopeThreads / 32));
  launch_pdl(rope_kv_append_kernel, dim3(blocks, head_groups), kRopeThreads, 0, stream, a);
}

}  // namespace brisk::cuda
