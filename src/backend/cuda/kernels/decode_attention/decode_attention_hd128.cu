// head_dim 128 instances of the decode attention kernel (bf16, f16 KV). The table in
// decode_attention.cu lists every instance and when it is used.
#include "backend/cuda/kernels/decode_attention/decode_attention.cuh"

namespace brisk::cuda::decode {

template void launch_decode_attention_instance<FloatType::kBF16, 128, 4, 3, 2>(const DecodeAttentionArgs&,
                                                                              cudaStream_t);
template void launch_decode_attention_instance<FloatType::kF16, 128, 4, 3, 2>(const DecodeAttentionArgs&,
                                                                             cudaStream_t);

}  // namespace brisk::cuda::decode
