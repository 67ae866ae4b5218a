// The CPU reference ops, one function per op family (each in its own .cc). CpuBackend forwards
// to them; they validate their params and throw brisk::Error naming the op and the parameter.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace brisk::cpu {

void copy(TensorView dst, TensorView src);
void convert(TensorView dst, TensorView src);
void embedding(const EmbeddingParams& p);
void rms_norm(const RmsNormParams& p);
void rope_kv_append(const RopeKvAppendParams& p);
void gemm(const GemmParams& p);
void gemm_w4a16(const GemmW4A16Params& p);
void gemm_fp8(const GemmFp8Params& p);
// x quantized as gemm_fp8 does (backend.h): the e4m3 values q [M, K] as floats, and the scale of
// each token and group [M, groups] (groups: ceil(K / block_size), or 1).
struct Fp8QuantizedRows {
  std::vector<float> q, scales;
  int64_t groups = 1;
};
Fp8QuantizedRows quantize_fp8_activations(const TensorView& x, int block_size, const TensorView& input_scale);
void attention(const AttentionParams& p);
void silu_mul(const SiluMulParams& p);
void sample(const SampleParams& p);
void top_logprobs(const TopLogprobsParams& p);
void token_logprobs(const TokenLogprobsParams& p);
void feed_tokens(const FeedTokensParams& p);
void apply_token_bitmask(const TokenBitmaskParams& p);
void logit_bias(const LogitBiasParams& p);

// The uniform number in [0, 1) that sample() draws for (seed, step); the exact recipe is
// documented at its definition (sample.cc) because the CUDA sampler must reproduce it.
double sampling_uniform(uint64_t seed, uint64_t step);

}  // namespace brisk::cpu
