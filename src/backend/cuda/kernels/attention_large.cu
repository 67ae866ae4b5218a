// head_dim 128 and 256 instantiations of the attention kernel (see attention.cu).
#include "backend/cuda/kernels/generic_attention/attention_kernel.cuh"

namespace brisk::cuda {

template void launch_attention_head_dim<128>(const AttentionArgs&, cudaStream_t);
template void launch_attention_head_dim<256>(const AttentionArgs&, cudaStream_t);

}  // namespace brisk::cuda
