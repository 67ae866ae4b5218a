// The CUDA backend (Hopper, sm_90a): device memory from the caching allocator, all work queued
// in order on one stream, ops in ops/ and kernels in kernels/. Activations and the KV cache are
// bf16 (f16 for f16 checkpoints); every op accumulates in fp32.
//
// The stream is the backend's own, except while a caller's stream is lent to it
// (begin_caller_stream .. end_caller_stream, or backend/caller_stream.h's scope): the Python
// module runs ops on PyTorch's current stream that way. The caller's stream first waits for the
// backend's earlier work, and the backend's own stream later waits for the caller's, so brisk's
// work stays in one order across the switch: the caching allocator's immediate reuse of freed
// scratch and the GEMM workspace rely on that.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/gemm_runner.h"
#include "backend/cuda/runtime/caching_allocator.h"
#include "backend/cuda/runtime/pinned_allocator.h"
#include "backend/cuda/runtime/pinned_staging.h"
#include "backend/cuda/runtime/stream.h"

namespace brisk {

class CudaBackend final : public Backend {
 public:
  // On GPU `ordinal` (< 0: the process's default device, runtime/device.h), which becomes the
  // calling thread's device.
  explicit CudaBackend(int ordinal = -1);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::kCuda; }
  Allocator& allocator() override { return allocator_; }
  bool shares_host_memory() const override { return false; }
  // bf16 for bf16 and f32 checkpoints (f32 weights then run full-fp32 GEMMs, see gemm_runner.h),
  // f16 for f16 checkpoints (their weights may exceed bf16's precision but fit f16's range).
  // BRISK_CUDA_ACTIVATION_DTYPE=f32|bf16|f16 overrides this, for accuracy checks: an f32
  // checkpoint with f32 activations runs every op in fp32 and must match the CPU reference
  // closely.
  DType activation_dtype(DType weight_dtype) const override;

  // Any direction between host (Device::kCpu) and device views. Host-to-device copies return
  // once the caller's memory may be reused; device-to-host copies return once the data is there.
  void copy(TensorView dst, TensorView src) override;
  Allocator& host_allocator() override { return pinned_; }
  void copy_async(TensorView dst, TensorView src) override;
  std::unique_ptr<Fence> record_fence() override;
  void convert(TensorView dst, TensorView src) override;
  void synchronize() override;
  // The GPU's free memory plus what the caching allocator holds free (reusable).
  uint64_t free_memory_bytes() const override;

  void embedding(const EmbeddingParams& p) override;
  void rms_norm(const RmsNormParams& p) override;
  void rope_kv_append(const RopeKvAppendParams& p) override;
  void gemm(const GemmParams& p) override;
  void gemm_w4a16(const GemmW4A16Params& p) override;
  void gemm_fp8(const GemmFp8Params& p) override;
  int64_t gemm_fp8_rows(int64_t m) const override { return cuda::gemm_fp8_rows(m); }
  Int4Layout repack_int4(TensorView qweight) override;
  void attention(const AttentionParams& p) override;
  void rope_append_attention(const RopeKvAppendParams& append, const AttentionParams& attn) override;
  void silu_mul(const SiluMulParams& p) override;
  void sample(const SampleParams& p) override;
  void top_logprobs(const TopLogprobsParams& p) override;
  void token_logprobs(const TokenLogprobsParams& p) override;
  void feed_tokens(const FeedTokensParams& p) override;
  void apply_token_bitmask(const TokenBitmaskParams& p) override;
  void logit_bias(const LogitBiasParams& p) override;
  std::unique_ptr<RecordedGraph> record_graph(const std::function<void()>& ops) override;

  // Queues this backend's work on `stream` (a caller's; 0 is the legacy default stream) until
  // end_caller_stream(). Not nested; not thread-safe (one caller at a time).
  void begin_caller_stream(cudaStream_t stream);
  void end_caller_stream();

  // The stream ops are queued on now: the backend's own, or the caller's lent one.
  cudaStream_t stream() const { return context_.stream; }
  cuda::CachingAllocator& caching_allocator() { return allocator_; }
  int ordinal() const { return ordinal_; }
  // Makes this backend's GPU the calling thread's device: a thread queues work for one backend
  // at a time, and for a tensor-parallel rank always the same.
  void bind_thread();

 private:
  int ordinal_;
  cuda::CachingAllocator& allocator_;
  DType activation_override_ = DType::kU8;  // kU8: no override
  cuda::Stream stream_;
  cudaEvent_t order_event_ = nullptr;  // orders the own and a caller's stream at a switch
  bool caller_stream_active_ = false;
  cuda::PinnedStaging staging_;
  cuda::PinnedAllocator pinned_;
  cuda::OpContext context_;
  Tensor kernel_counters_;  // context_.decode_merge_counters, then context_.prefill_work_counters
  std::unique_ptr<cuda::GemmRunner> gemm_;
};

// A backend on GPU `ordinal` (< 0: BRISK_CUDA_DEVICE, else 0).
std::unique_ptr<Backend> make_cuda_backend(int ordinal = -1);

}  // namespace brisk
