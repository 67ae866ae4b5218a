// sample: penalties, greedy / temperature, top-k, top-p, min-p and the seeded draw on the device
// (kernels/sample.cu). rows must point to device memory; their values are not checked here
// (that would need a copy to the host), so callers validate SamplingRow on the host, as the
// engine does for every request.
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

constexpr std::string_view kOp = "sample";

void check_token_lists(std::string_view start_name, const TensorView& start,
                       std::string_view tokens_name, const TensorView& tokens, int64_t num_seqs) {
  BRISK_CHECK(start.empty() == tokens.empty(), "sample: {} and {} must be given together",
              start_name, tokens_name);
  if (start.empty()) return;
  check_index_vector(kOp, start_name, start, num_seqs + 1);
  check_view(kOp, tokens_name, tokens, 1, Layout::kContiguous);
  check_dtype(kOp, tokens_name, tokens, DType::kI32);
}

void check_device_pointer(const void* ptr) {
  cudaPointerAttributes attributes{};
  BRISK_CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
  BRISK_CHECK(attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged,
              "sample: rows points to host memory but the cuda backend reads it on the device "
              "(copy the SamplingRow array with Backend::copy or to_backend)");
}

}  // namespace

void sample(const OpContext& ctx, const SampleParams& p) {
  check_view(kOp, "logits", p.logits, 2, Layout::kStridedRows);
  check_dtype(kOp, "logits", p.logits, DType::kF32);
  const int64_t num_seqs = p.logits.size(0);
  const int64_t vocab = p.logits.size(1);
  BRISK_CHECK(vocab > 0, "sample: logits is {} but the vocabulary must not be empty",
              p.logits.describe());
  BRISK_CHECK(vocab < (int64_t{1} << 31), "sample: logits is {}: vocabulary too large",
              p.logits.describe());
  BRISK_CHECK(p.rows != nullptr || num_seqs == 0, "sample: rows is null but logits is {}",
              p.logits.describe());
  check_index_vector(kOp, "out_tokens", p.out_tokens, num_seqs);
  if (!p.out_logprobs.empty()) {
    check_view(kOp, "out_logprobs", p.out_logprobs, 1, Layout::kContiguous);
    check_dtype(kOp, "out_logprobs", p.out_logprobs, DType::kF32);
    BRISK_CHECK(p.out_logprobs.size(0) == num_seqs, "sample: logits is {} but out_logprobs is {}",
                p.logits.describe(), p.out_logprobs.describe());
  }
  check_token_lists("prompt_start", p.prompt_start, "prompt_tokens", p.prompt_tokens, num_seqs);
  check_token_lists("output_start", p.output_start, "output_tokens", p.output_tokens, num_seqs);
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
    // The log-probability is of the raw logits, which the kernel modifies in place.
    raw = Tensor(*ctx.allocator, DType::kF32, {num_seqs, vocab});
    BRISK_CUDA_CHECK(cudaMemcpy2DAsync(raw.view().data(), vocab * sizeof(float), p.logits.data(),
                                       p.logits.stride(0) * sizeof(float), vocab * sizeof(float),
                                       num_seqs, cudaMemcpyDeviceToDevice, ctx.stream));
    a.raw_logits = raw.data_as<const float>();
    a.raw_stride = vocab;
    a.out_logprobs = p.out_logprobs.data_as<float>();
  }
  launch_sample(a, ctx.stream);
}

}  // namespace brisk::cuda
