// sample: penalties, greedy / temperature, top-k, top-p, min-p and the seeded draw on the device; top_logprobs: the k most likely tokens of raw logits;
// token_logprobs: a given token's logprob and rank
// (kernels/sample.cu). rows must point to device memory; their values are not checked here
// (that would need a copy to the host), so callers validate SamplingRow on the host, as the
// engine does for every request.
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

void check_device_pointer(const void* ptr) {
  cudaPointerAttributes attributes{};
  BRISK_CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
  BRISK_CHECK(attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged,
              "sample: rows points to host memory but the cuda backend reads it on the device "
              "(copy the SamplingRow array with Backend::copy or to_backend)");
}

}  // namespace

void sample(const OpContext& ctx, const SampleParams& p) {
  check_op_params(p, Device::kCuda);
  const int64_t num_seqs = p.logits.size(0);
  const int64_t vocab = p.logits.size(1);
  BRISK_CHECK(vocab < (int64_t{1} << 31), "sample: logits is {}: vocabulary too large",
              p.logits.describe());
  if (num_seqs == 0) return;
  check_device_pointer(p.rows);

  SampleArgs a;
  a.logits = p.logits.data_as<float>();
  a.logits_stride = p.logits.stride(0);
  a.rows = p.rows;
  a.out_tokens = p.out_tokens.data_as<int32_t>();
  a.num_seqs = num_seqs;
  a.vocab = vocab;
  // Scratch, freed on return: reuse of the memory is ordered after the kernel on the stream.
  Tensor counts, raw;
  Tensor candidates(*ctx.allocator, DType::kF32, {num_seqs, kSampleCandidates});
  Tensor candidate_tokens(*ctx.allocator, DType::kI32, {num_seqs, kSampleCandidates});
  a.candidate_logits = candidates.data_as<float>();
  a.candidate_tokens = candidate_tokens.data_as<int32_t>();
  if (!p.prompt_start.empty() || !p.output_start.empty()) {
    counts = Tensor(*ctx.allocator, DType::kU32, {num_seqs, vocab});
    BRISK_CUDA_CHECK(cudaMemsetAsync(counts.view().data(), 0, counts.view().num_bytes(), ctx.stream));
    a.counts = counts.data_as<uint32_t>();
    if (!p.prompt_start.empty()) {
      a.prompt_start = p.prompt_start.data_as<const int32_t>();
      a.prompt_tokens = p.prompt_tokens.data_as<const int32_t>();
    }
    if (!p.output_start.empty()) {
      a.output_start = p.output_start.data_as<const int32_t>();
      a.output_tokens = p.output_tokens.data_as<const int32_t>();
    }
  }
  if (!p.out_logprobs.empty()) {
    // The log-probability is of the logits as given: the kernel copies a row here before changing it.
    raw = Tensor(*ctx.allocator, DType::kF32, {num_seqs, vocab});
    a.raw_scratch = raw.data_as<float>();
    a.out_logprobs = p.out_logprobs.data_as<float>();
  }
  launch_sample(a, ctx.stream);
}

void top_logprobs(const OpContext& ctx, const TopLogprobsParams& p) {
  check_op_params(p, Device::kCuda);
  BRISK_CHECK(p.logits.size(1) < (int64_t{1} << 31), "top_logprobs: logits is {}: vocabulary too large",
              p.logits.describe());
  TopLogprobsArgs a;
  a.logits = p.logits.data_as<const float>();
  a.logits_stride = p.logits.stride(0);
  a.out_tokens = p.out_tokens.data_as<int32_t>();
  a.out_logprobs = p.out_logprobs.data_as<float>();
  a.num_seqs = p.logits.size(0);
  a.vocab = p.logits.size(1);
  a.k = static_cast<int>(p.out_tokens.size(1));
  launch_top_logprobs(a, ctx.stream);
}

void token_logprobs(const OpContext& ctx, const TokenLogprobsParams& p) {
  check_op_params(p, Device::kCuda);
  BRISK_CHECK(p.logits.size(1) < (int64_t{1} << 31), "token_logprobs: logits is {}: vocabulary too large",
              p.logits.describe());
  TokenLogprobsArgs a;
  a.logits = p.logits.data_as<const float>();
  a.logits_stride = p.logits.stride(0);
  a.tokens = p.tokens.data_as<const int32_t>();
  a.out_logprobs = p.out_logprobs.data_as<float>();
  a.out_ranks = p.out_ranks.data_as<int32_t>();
  a.num_seqs = p.logits.size(0);
  a.vocab = p.logits.size(1);
  launch_token_logprobs(a, ctx.stream);
}

}  // namespace brisk::cuda
