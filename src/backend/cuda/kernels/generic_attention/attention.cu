// Generic attention dispatch: the head dims of the instances (instances/, generated with their
// support matrix by tools/gen_kernel_instances.py) and the combine kernel; the split-KV plan is
// attention_plan.cc.
#include <algorithm>
#include <cmath>

#include "backend/cuda/kernels/generic_attention/attention_kernel.cuh"
#include "backend/cuda/kernels/generic_attention/instances/instances.inc"

namespace brisk::cuda {

#define BRISK_DECLARE(head_dim) \
  extern template void launch_attention_head_dim<head_dim>(const AttentionArgs&, cudaStream_t);
BRISK_GENERIC_ATTENTION_INSTANCES(BRISK_DECLARE)
#undef BRISK_DECLARE

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
#define BRISK_CASE(instance_head_dim) \
  if (head_dim == instance_head_dim) return true;
  BRISK_GENERIC_ATTENTION_INSTANCES(BRISK_CASE)
#undef BRISK_CASE
  return false;
}

void launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.num_tokens == 0 || a.num_seqs == 0) return;
  switch (a.head_dim) {
#define BRISK_CASE(head_dim)                     \
  case head_dim:                                 \
    launch_attention_head_dim<head_dim>(a, stream); \
    break;
    BRISK_GENERIC_ATTENTION_INSTANCES(BRISK_CASE)
#undef BRISK_CASE
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
