// head_dim 128 instances of the prefill attention kernel (bf16, f16 KV). The table in
// prefill_attention.cu lists every instance and its tile shape.
#include "backend/cuda/kernels/prefill_attention/prefill_attention.cuh"

namespace brisk::cuda::prefill {

template void launch_prefill_attention_instance<FloatType::kBF16, 128, 2, 32, 3, 2>(const PrefillAttentionArgs&,
                                                                                  cudaStream_t);
template void launch_prefill_attention_instance<FloatType::kF16, 128, 2, 32, 3, 2>(const PrefillAttentionArgs&,
                                                                                 cudaStream_t);

}  // namespace brisk::cuda::prefill
