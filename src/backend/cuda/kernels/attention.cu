// Generic attention dispatch (generic_attention/): head-dim instantiations (32 and 64 here, 128
// and 256 in attention_large.cu so the two compile in parallel) and the combine kernel; the
// split-KV plan is generic_attention/attention_plan.cc.
#include <algorithm>
#include <cmath>

#include "backend/cuda/kernels/generic_attention/attention_kernel.cuh"

namespace brisk::cuda {

template void launch_attention_head_dim<32>(const AttentionArgs&, cudaStream_t);
template void launch_attention_head_dim<64>(const AttentionArgs&, cudaStream_t);
extern template void launch_attention_head_dim<128>(const AttentionArgs&, cudaStream_t);
extern template void launch_attention_head_dim<256>(const AttentionArgs&, cudaStream_t);

namespace {

constexpr int kCombineThreads = 128;

// out[t, h] = sum_s acc_s * e^(m_s - M) / sum_s l_s * e^(m_s - M), M = max_s m_s: the exact
// merge of the splits' online-softmax states.
__global__ void attention_combine_kernel(AttentionArgs a) {
  const int64_t num_items = int64_t{a.num_tokens} * a.num_heads;
  for (int64_t item = blockIdx.x; item < num_items; item += gridDim.x) {
    const int64_t token = item / a.num_heads;
    const int64_t head = item % a.num_heads;
    const int64_t split_stride = num_items;
    float max_m = -INFINITY;
    for (int s = 0; s < a.num_splits; ++s) max_m = fmaxf(max_m, a.partial_ml[(s * split_stride + item) * 2]);
    float sum = 0.0f;
    for (int s = 0; s < a.num_splits; ++s) {
      const float m = a.partial_ml[(s * split_stride + item) * 2];
      if (m != -INFINITY) sum += a.partial_ml[(s * split_stride + item) * 2 + 1] * expf(m - max_m);
    }
    const float inv_sum = sum > 0.0f ? 1.0f / sum : 0.0f;
    void* out_row = row_ptr(a.out, a.out_type, token, a.out_stride);
    for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
      float value = 0.0f;
      for (int s = 0; s < a.num_splits; ++s) {
        const float m = a.partial_ml[(s * split_stride + item) * 2];
        if (m != -INFINITY) value += a.partial_acc[(s * split_stride + item) * a.head_dim + d] * expf(m - max_m);
      }
      store_one(out_row, a.out_type, head * a.head_dim + d, value * inv_sum);
    }
  }
}

}  // namespace

bool attention_supports_head_dim(int head_dim) {
  return head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256;
}

void launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.num_tokens == 0 || a.num_seqs == 0) return;
  switch (a.head_dim) {
    case 32: launch_attention_head_dim<32>(a, stream); break;
    case 64: launch_attention_head_dim<64>(a, stream); break;
    case 128: launch_attention_head_dim<128>(a, stream); break;
    case 256: launch_attention_head_dim<256>(a, stream); break;
    default: return;  // the host side checked attention_supports_head_dim
  }
  if (a.num_splits > 1) {
    const int64_t items = int64_t{a.num_tokens} * a.num_heads;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(items, 1 << 20));
    attention_combine_kernel<<<blocks, kCombineThreads, 0, stream>>>(a);
    BRISK_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace brisk::cuda
