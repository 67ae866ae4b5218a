#include "backend/cpu/cpu_backend.h"

#include "backend/cpu/cpu_ops.h"

namespace brisk {

void CpuBackend::copy(TensorView dst, TensorView src) { cpu::copy(dst, src); }
void CpuBackend::convert(TensorView dst, TensorView src) { cpu::convert(dst, src); }
void CpuBackend::embedding(const EmbeddingParams& p) { cpu::embedding(p); }
void CpuBackend::rms_norm(const RmsNormParams& p) { cpu::rms_norm(p); }
void CpuBackend::rope_kv_append(const RopeKvAppendParams& p) { cpu::rope_kv_append(p); }
void CpuBackend::gemm(const GemmParams& p) { cpu::gemm(p); }
void CpuBackend::gemm_w4a16(const GemmW4A16Params& p) { cpu::gemm_w4a16(p); }
void CpuBackend::gemm_fp8(const GemmFp8Params& p) { cpu::gemm_fp8(p); }
void CpuBackend::attention(const AttentionParams& p) { cpu::attention(p); }
void CpuBackend::silu_mul(const SiluMulParams& p) { cpu::silu_mul(p); }
void CpuBackend::sample(const SampleParams& p) { cpu::sample(p); }
void CpuBackend::top_logprobs(const TopLogprobsParams& p) { cpu::top_logprobs(p); }
void CpuBackend::token_logprobs(const TokenLogprobsParams& p) { cpu::token_logprobs(p); }
void CpuBackend::feed_tokens(const FeedTokensParams& p) { cpu::feed_tokens(p); }
void CpuBackend::apply_token_bitmask(const TokenBitmaskParams& p) { cpu::apply_token_bitmask(p); }
void CpuBackend::logit_bias(const LogitBiasParams& p) { cpu::logit_bias(p); }

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace brisk
