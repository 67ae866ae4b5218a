// Memory-bound element and row kernels: dtype conversion, embedding gather, SwiGLU, bias add,
// feeding sampled tokens to the next step.
// Each thread handles 8 consecutive elements with 16-byte accesses where the layout allows,
// else one element at a time; all math is fp32.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kThreads = 256;

// Enough blocks to fill the GPU several times over, never more than needed; kernels grid-stride.
unsigned grid_for(int64_t num_items) {
  const int64_t blocks = (num_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65536));
}

__global__ void convert_kernel(ConvertArgs a, bool vectorized) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (vectorized) {
    const int64_t num_vectors = a.num_elements / 8;
    for (int64_t v = first; v < num_vectors; v += stride) {
      float values[8];
      load8(a.src, a.src_type, v * 8, values);
      store8(a.dst, a.dst_type, v * 8, values);
    }
    done = num_vectors * 8;
  }
  if (a.num_cols > 0) {  // strided rows
    for (int64_t i = first; i < a.num_elements; i += stride) {
      const int64_t row = i / a.num_cols;
      const int64_t col = i % a.num_cols;
      store_one(a.dst, a.dst_type, row * a.dst_stride + col,
                load_one(a.src, a.src_type, row * a.src_stride + col));
    }
    return;
  }
  for (int64_t i = done + first; i < a.num_elements; i += stride)
    store_one(a.dst, a.dst_type, i, load_one(a.src, a.src_type, i));
}

// One block per token (grid-strided over tokens).
__global__ void embedding_kernel(EmbeddingArgs a) {
  pdl_wait();
  pdl_release();
  for (int64_t t = blockIdx.x; t < a.num_tokens; t += gridDim.x) {
    const int64_t id = a.ids[t] - a.first_id;
    char* out = static_cast<char*>(a.out) + t * a.out_stride_bytes;
    const bool valid = id >= 0 && id < a.num_rows;
    const char* row = static_cast<const char*>(a.table) + int64_t{valid ? id : 0} * a.table_stride_bytes;
    if (a.raw_copy) {
      const bool aligned = (reinterpret_cast<uintptr_t>(row) % 16 == 0) &&
                           (reinterpret_cast<uintptr_t>(out) % 16 == 0) && a.row_bytes % 16 == 0;
      if (aligned) {
        const uint4* src = reinterpret_cast<const uint4*>(row);
        uint4* dst = reinterpret_cast<uint4*>(out);
        for (int64_t i = threadIdx.x; i < a.row_bytes / 16; i += blockDim.x)
          dst[i] = valid ? src[i] : make_uint4(0, 0, 0, 0);
      } else {
        for (int64_t i = threadIdx.x; i < a.row_bytes; i += blockDim.x) out[i] = valid ? row[i] : 0;
      }
    } else {
      for (int64_t i = threadIdx.x; i < a.dim; i += blockDim.x)
        store_one(out, a.out_type, i, valid ? load_one(row, a.table_type, i) : 0.0f);
    }
  }
}

__global__ void silu_mul_kernel(SiluMulArgs a) {
  pdl_wait();
  pdl_release();
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (a.vectorized) {
    const int64_t per_row = a.dim / 8;
    for (int64_t item = first; item < a.num_tokens * per_row; item += stride) {
      const int64_t t = item / per_row;
      const int64_t i = (item % per_row) * 8;
      const void* x = row_ptr(a.x, a.x_type, t, a.x_stride);
      float gate[8], up[8];
      load8(x, a.x_type, i, gate);
      load8(x, a.x_type, a.dim + i, up);
#pragma unroll
      for (int j = 0; j < 8; ++j) gate[j] = silu_times(gate[j], up[j]);
      store8(row_ptr(a.out, a.out_type, t, a.out_stride), a.out_type, i, gate);
    }
    return;
  }
  for (int64_t item = first; item < a.num_tokens * a.dim; item += stride) {
    const int64_t t = item / a.dim;
    const int64_t i = item % a.dim;
    const void* x = row_ptr(a.x, a.x_type, t, a.x_stride);
    const float value = silu_times(load_one(x, a.x_type, i), load_one(x, a.x_type, a.dim + i));
    store_one(row_ptr(a.out, a.out_type, t, a.out_stride), a.out_type, i, value);
  }
}

__global__ void feed_tokens_kernel(FeedTokensArgs a) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t j = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < a.num_pairs; j += stride) {
    const int32_t dst = a.dst[j], src = a.src[j];
    if (dst >= 0 && dst < a.num_ids && src >= 0 && src < a.num_sampled) a.ids[dst] = a.sampled[src];
  }
}

// One thread per logit: a warp reads one mask word (a broadcast) and writes 32 adjacent logits.
// A mask index outside the bitmask masks the whole row (the CPU refuses it).
__global__ void apply_token_bitmask_kernel(TokenBitmaskArgs a) {
  const int64_t v = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (v >= a.vocab) return;
  const int64_t word = v / 32;
  const int64_t mask = a.mask_index != nullptr ? a.mask_index[blockIdx.y] : blockIdx.y;
  const bool known = word < a.num_words && mask >= 0 && mask < a.num_masks;
  const uint32_t bits = known ? a.bitmask[mask * a.num_words + word] : 0u;
  if (((bits >> (v % 32)) & 1u) == 0) a.logits[a.rows[blockIdx.y] * a.logits_stride + v] = -INFINITY;
}

// One thread per pair; the pairs name distinct logits, so no two threads add to one.
__global__ void logit_bias_kernel(LogitBiasArgs a) {
  const int64_t j = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (j >= a.num_biases) return;
  const int32_t row = a.rows[j], token = a.tokens[j];
  if (row >= 0 && row < a.num_seqs && token >= 0 && token < a.vocab)
    a.logits[row * a.logits_stride + token] += a.values[j];
}

__global__ void bias_kernel(BiasArgs a) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t item = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
       item < a.num_rows * a.num_cols; item += stride) {
    const int64_t m = item / a.num_cols;
    const int64_t n = item % a.num_cols;
    void* y = row_ptr(a.y, a.y_type, m, a.y_stride);
    float value = a.accumulate ? load_one(y, a.y_type, n) : 0.0f;
    if (a.bias != nullptr) value += load_one(a.bias, a.bias_type, n);
    store_one(y, a.y_type, n, value);
  }
}

}  // namespace

void launch_convert(const ConvertArgs& a, cudaStream_t stream) {
  if (a.num_elements == 0) return;
  const bool vectorized = a.num_cols == 0 && reinterpret_cast<uintptr_t>(a.src) % 16 == 0 &&
                          reinterpret_cast<uintptr_t>(a.dst) % 16 == 0;
  const int64_t items = vectorized ? std::max<int64_t>(a.num_elements / 8, 1) : a.num_elements;
  convert_kernel<<<grid_for(items), kThreads, 0, stream>>>(a, vectorized);
  BRISK_CUDA_CHECK_LAUNCH();
}

void launch_embedding(const EmbeddingArgs& a, cudaStream_t stream) {
  if (a.num_tokens == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.num_tokens, 65536));
  launch_pdl(embedding_kernel, blocks, kThreads, 0, stream, a);
}

void launch_silu_mul(const SiluMulArgs& a, cudaStream_t stream) {
  if (a.num_tokens == 0 || a.dim == 0) return;
  const int64_t items = a.num_tokens * (a.vectorized ? a.dim / 8 : a.dim);
  launch_pdl(silu_mul_kernel, grid_for(items), kThreads, 0, stream, a);
}

void launch_feed_tokens(const FeedTokensArgs& a, cudaStream_t stream) {
  if (a.num_pairs == 0) return;
  feed_tokens_kernel<<<grid_for(a.num_pairs), kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

void launch_logit_bias(const LogitBiasArgs& a, cudaStream_t stream) {
  if (a.num_biases == 0) return;
  logit_bias_kernel<<<grid_for(a.num_biases), kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

void launch_apply_token_bitmask(const TokenBitmaskArgs& a, cudaStream_t stream) {
  if (a.num_masked == 0 || a.vocab == 0) return;
  const dim3 grid(static_cast<unsigned>((a.vocab + kThreads - 1) / kThreads), static_cast<unsigned>(a.num_masked));
  apply_token_bitmask_kernel<<<grid, kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

void launch_bias(const BiasArgs& a, cudaStream_t stream) {
  if (a.num_rows == 0 || a.num_cols == 0) return;
  bias_kernel<<<grid_for(a.num_rows * a.num_cols), kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda
