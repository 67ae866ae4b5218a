// dequantize_kv (launch.h: DequantizeKvArgs): the blocks a batch's sequences hold in a quantized
// paged cache, as a 16-bit cache the Hopper prefill kernel reads. One thread block per (block of
// the table, sequence); thread tid takes the runs of 8 values e = tid + i blockDim (K's rows, then
// V's). In f16 the values equal those the kernels dequantize themselves (one rounding of the same
// exact products).
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/kv_codes.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kThreads = 256;

template <KvCodes kCodes>
__global__ void dequantize_kv_kernel(DequantizeKvArgs a) {
  pdl_wait();
  pdl_release();
  const int j = blockIdx.x, s = blockIdx.y;
  const int64_t out_block = int64_t{s} * a.max_blocks_per_seq + j;
  if (threadIdx.x == 0) a.out_tables[out_block] = static_cast<int32_t>(out_block);
  if (j >= (a.context_lens[s] + a.block_size - 1) / a.block_size) return;
  const int id = a.block_tables[out_block];
  const bool valid = id >= 0 && id < a.num_cache_blocks;
  constexpr int kCodeBytes = kCodes == KvCodes::kInt4 ? 4 : 8;  // of a run of 8 values
  const int runs_log2 = __ffs(a.head_dim / 8) - 1;  // head_dim / 8 a power of two
  const int rows = a.num_kv_heads * a.block_size;
  for (int e = threadIdx.x; e < (2 * rows) << runs_log2; e += blockDim.x) {
    const int run = e & ((1 << runs_log2) - 1);
    const bool value = (e >> runs_log2) >= rows;
    const int r = (e >> runs_log2) - (value ? rows : 0);
    float x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (valid) {
      const int64_t row = int64_t{id} * rows + r;
      const auto* codes = static_cast<const uint8_t*>(value ? a.v_cache : a.k_cache) +
                          row * (a.head_dim * kCodeBytes / 8) + run * kCodeBytes;
      uint32_t words[2] = {0, 0};
      if constexpr (kCodeBytes == 8) {
        const uint2 v = *reinterpret_cast<const uint2*>(codes);
        words[0] = v.x;
        words[1] = v.y;
      } else {
        words[0] = *reinterpret_cast<const uint32_t*>(codes);
      }
      if constexpr (kCodes == KvCodes::kFp8) {
        const float scale = value ? a.quant.v_fp8_scale : 1.0f;  // K's scale is in the softmax scale
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 pair = __half22float2(as_half2(e4m3_pair_to_f16(words[i / 2], i % 2 == 1)));
          x[2 * i] = pair.x * scale;
          x[2 * i + 1] = pair.y * scale;
        }
      } else {  // (code - zero) * scale: exact in fp32, rounded once on the store
        const float zero = (value ? a.quant.v_zero : a.quant.k_zero)[row];
        const float scale = __half2float(kv_scale((value ? a.quant.v_scale : a.quant.k_scale)[row]));
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const uint32_t code = kCodes == KvCodes::kInt8 ? (words[i / 4] >> (8 * (i % 4))) & 0xFFu
                                                         : (words[0] >> (4 * i)) & 0xFu;
          x[i] = (static_cast<float>(code) - zero) * scale;
        }
      }
    }
    store8(value ? a.v_out : a.k_out, a.out_type, ((out_block * rows + r) << (runs_log2 + 3)) + run * 8, x);
  }
}

}  // namespace

void launch_dequantize_kv(const DequantizeKvArgs& a, cudaStream_t stream) {
  if (a.num_seqs == 0 || a.max_blocks_per_seq == 0) return;
  const dim3 grid(static_cast<unsigned>(a.max_blocks_per_seq), static_cast<unsigned>(a.num_seqs));
  switch (a.quant.codes) {
    case KvCodes::kInt8: launch_pdl(dequantize_kv_kernel<KvCodes::kInt8>, grid, kThreads, 0, stream, a); break;
    case KvCodes::kInt4: launch_pdl(dequantize_kv_kernel<KvCodes::kInt4>, grid, kThreads, 0, stream, a); break;
    case KvCodes::kFp8: launch_pdl(dequantize_kv_kernel<KvCodes::kFp8>, grid, kThreads, 0, stream, a); break;
    default: break;
  }
}

}  // namespace brisk::cuda
