// head_dim 128 instances for short contexts (2-warp blocks, 4 per SM; bf16, f16 KV). The table
// in decode_attention.cu lists every instance and when it is used.
#include "backend/cuda/kernels/decode_attention/decode_attention.cuh"

namespace brisk::cuda::decode {

template void launch_decode_attention_instance<FloatType::kBF16, 128, 2, 3, 4>(const DecodeAttentionArgs&,
                                                                               cudaStream_t);
template void launch_decode_attention_instance<FloatType::kF16, 128, 2, 3, 4>(const DecodeAttentionArgs&,
                                                                              cudaStream_t);

}  // namespace brisk::cuda::decode
