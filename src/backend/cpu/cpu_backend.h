// The CPU backend: the reference every other backend is tested against, and the embedded
// default where no GPU exists. Activations stay in fp32; ops accept f32, f16 and bf16 views.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace brisk {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::kCpu; }
  Allocator& allocator() override { return cpu_allocator(); }
  bool shares_host_memory() const override { return true; }
  // fp32 whatever the weights are: the CPU has no fast 16-bit arithmetic, and fp32 keeps the
  // reference as accurate as possible.
  DType activation_dtype(DType weight_dtype) const override { return DType::kF32; }

  void copy(TensorView dst, TensorView src) override;
  void convert(TensorView dst, TensorView src) override;
  void synchronize() override {}  // ops run synchronously on the calling thread and the pool

  void embedding(const EmbeddingParams& p) override;
  void rms_norm(const RmsNormParams& p) override;
  void rope_kv_append(const RopeKvAppendParams& p) override;
  void gemm(const GemmParams& p) override;
  void gemm_w4a16(const GemmW4A16Params& p) override;
  void gemm_fp8(const GemmFp8Params& p) override;
  // Room for a few rows, filled with NaN past m (gemm_fp8 below): every CPU test of an FP8 model
  // then checks that no op reads the rows a GPU's whole tiles write.
  int64_t gemm_fp8_rows(int64_t m) const override { return (m + 7) / 8 * 8; }
  void attention(const AttentionParams& p) override;
  void silu_mul(const SiluMulParams& p) override;
  void sample(const SampleParams& p) override;
  void top_logprobs(const TopLogprobsParams& p) override;
  void token_logprobs(const TokenLogprobsParams& p) override;
  void feed_tokens(const FeedTokensParams& p) override;
  void apply_token_bitmask(const TokenBitmaskParams& p) override;
  void logit_bias(const LogitBiasParams& p) override;
};

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace brisk
