// The host side of the CUDA ops, one function per op family (each in its own .cc): check the
// params as the CPU reference does, choose a kernel, allocate scratch, launch on the backend's
// stream. CudaBackend forwards to them.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

class GemmRunner;

struct OpContext {
  cudaStream_t stream = nullptr;
  Allocator* allocator = nullptr;  // device memory for scratch (stream-ordered reuse)
  int num_sms = 0;
  // The decode attention kernel's split-merge counters (kDecodeMergeCounters, decode_attention.h),
  // zero between its launches; the backend owns them (one set serves its stream and a caller's
  // lent one, which are ordered by events).
  int* decode_merge_counters = nullptr;
  // The Hopper prefill attention kernel's work queue (kPrefillWorkCounters ints,
  // PrefillAttentionArgs::work_counters), zero between its launches, owned likewise.
  int* prefill_work_counters = nullptr;
};

// Split-merge counters of the decode attention kernel that one OpContext holds.
inline constexpr int64_t kDecodeMergeCounters = int64_t{1} << 16;
inline constexpr int64_t kPrefillWorkCounters = 2;

// dst = src converted between float dtypes; same shape, rows may be strided (rank <= 2) or the
// views contiguous.
void convert(const OpContext& ctx, TensorView dst, TensorView src);
void embedding(const OpContext& ctx, const EmbeddingParams& p);
void rms_norm(const OpContext& ctx, const RmsNormParams& p);
void rope_kv_append(const OpContext& ctx, const RopeKvAppendParams& p);
// The checked kernel arguments of rope_kv_append (also those of the fused decode attention).
RopeKvAppendArgs rope_kv_append_args(const RopeKvAppendParams& p);
// The kernels' view of a quantized cache's codes and row parameters (KvCodes::kNone: floats).
KvQuantArgs kv_quant_args(const KvQuantParams& p);
void attention(const OpContext& ctx, const AttentionParams& p);
// rope_kv_append then attention as one decode kernel launch when the pair fits it (decode
// batches, no q / k norms, attn.q the q columns of append.qkv) and fusing pays
// (decode_attention_fuses_append); false, launching nothing, when not.
bool fused_rope_append_attention(const OpContext& ctx, const RopeKvAppendParams& append, const AttentionParams& attn);
// Int4 weights; large M dequantizes and multiplies through `dense` (see gemm_w4a16.cc).
void gemm_w4a16(const OpContext& ctx, GemmRunner& dense, const GemmW4A16Params& p);
// FP8 weights; larger M runs cuBLASLt's scaled FP8 matmul through `dense` (see gemm_fp8.cc).
// gemm_runner.h declares the form that names its kernel.
void gemm_fp8(const OpContext& ctx, GemmRunner& dense, const GemmFp8Params& p);
// Backend::gemm_fp8_rows: past 128 rows, whole tiles of 128 (see gemm_fp8.cc).
int64_t gemm_fp8_rows(int64_t m);
// Backend::repack_int4: brisk's row layout to Int4Layout::kTiles16 in place, where N % 16 == 0
// and K % 128 == 0 (else the rows stay and kRows is returned).
Int4Layout repack_int4(const OpContext& ctx, TensorView qweight);
void silu_mul(const OpContext& ctx, const SiluMulParams& p);
void sample(const OpContext& ctx, const SampleParams& p);
void top_logprobs(const OpContext& ctx, const TopLogprobsParams& p);
void token_logprobs(const OpContext& ctx, const TokenLogprobsParams& p);
void feed_tokens(const OpContext& ctx, const FeedTokensParams& p);
void apply_token_bitmask(const OpContext& ctx, const TokenBitmaskParams& p);
void logit_bias(const OpContext& ctx, const LogitBiasParams& p);

}  // namespace brisk::cuda
