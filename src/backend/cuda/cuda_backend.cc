#include "backend/cuda/cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/cuda/runtime/cuda_check.h"
#include "backend/cuda/runtime/cuda_graph.h"
#include "backend/cuda/runtime/device.h"
#include "backend/cuda/runtime/event_fence.h"
#include "core/error.h"

namespace brisk {
namespace {

// The device binding must happen before any member allocates or creates a stream.
cuda::CachingAllocator& bound_allocator(int ordinal) {
  cuda::bind_device(ordinal);
  return cuda::device_allocator(ordinal);
}

DType activation_override() {
  const char* env = std::getenv("BRISK_CUDA_ACTIVATION_DTYPE");
  if (env == nullptr || *env == '\0') return DType::kU8;
  const std::string name(env);
  if (name == "f32") return DType::kF32;
  if (name == "bf16") return DType::kBF16;
  if (name == "f16") return DType::kF16;
  throw_error(ErrorCode::kInvalidArgument,
              "BRISK_CUDA_ACTIVATION_DTYPE is '{}' but must be f32, bf16 or f16", name);
}

}  // namespace

CudaBackend::CudaBackend(int ordinal)
    : ordinal_(ordinal >= 0 ? ordinal : cuda::default_device()),
      allocator_(bound_allocator(ordinal_)),
      activation_override_(activation_override()) {
  context_.stream = stream_.get();
  context_.allocator = &allocator_;
  context_.num_sms = cuda::select_device().num_sms;
  kernel_counters_ = Tensor(allocator_, DType::kI32, {cuda::kDecodeMergeCounters + cuda::kPrefillWorkCounters});
  context_.decode_merge_counters = kernel_counters_.data_as<int>();
  context_.prefill_work_counters = context_.decode_merge_counters + cuda::kDecodeMergeCounters;
  BRISK_CUDA_CHECK(
      cudaMemsetAsync(kernel_counters_.view().data(), 0, kernel_counters_.view().num_bytes(), context_.stream));
  gemm_ = std::make_unique<cuda::GemmRunner>(allocator_);
  BRISK_CUDA_CHECK(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
}

CudaBackend::~CudaBackend() {
  // Queued work may still use memory that is about to return to the cache; errors are ignored
  // (destructors must not throw).
  cudaStreamSynchronize(stream_.get());
  cudaEventDestroy(order_event_);
}

void CudaBackend::begin_caller_stream(cudaStream_t stream) {
  BRISK_CHECK(!caller_stream_active_,
              "cuda backend: a caller's stream is already in use (caller streams do not nest)");
  BRISK_CUDA_CHECK(cudaEventRecord(order_event_, stream_.get()));
  BRISK_CUDA_CHECK(cudaStreamWaitEvent(stream, order_event_, 0));
  context_.stream = stream;
  caller_stream_active_ = true;
}

void CudaBackend::end_caller_stream() {
  BRISK_CHECK(caller_stream_active_,
              "cuda backend: end_caller_stream() without begin_caller_stream()");
  BRISK_CUDA_CHECK(cudaEventRecord(order_event_, context_.stream));
  BRISK_CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), order_event_, 0));
  context_.stream = stream_.get();
  caller_stream_active_ = false;
}

DType CudaBackend::activation_dtype(DType weight_dtype) const {
  if (activation_override_ != DType::kU8) return activation_override_;
  return weight_dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
}

void CudaBackend::copy(TensorView dst, TensorView src) {
  BRISK_CHECK(!dst.empty() && !src.empty(), "copy: dst ({}) and src ({}) must both be given",
              dst.describe(), src.describe());
  BRISK_CHECK(dst.shape() == src.shape(), "copy: dst is {} but src is {}: shapes differ",
              dst.describe(), src.describe());
  BRISK_CHECK(dst.dtype() == src.dtype(), "copy: dst is {} but src is {}: dtypes differ (use convert)",
              dst.describe(), src.describe());
  BRISK_CHECK(dst.is_contiguous() && src.is_contiguous(),
              "copy: dst ({}) and src ({}) must both be contiguous", dst.describe(), src.describe());
  const size_t num_bytes = src.num_bytes();
  if (num_bytes == 0) return;
  const bool dst_host = dst.device() == Device::kCpu;
  const bool src_host = src.device() == Device::kCpu;
  if (dst_host && src_host) {
    // Device work never touches host views, so no ordering is needed.
    std::memmove(dst.data(), src.data(), num_bytes);
  } else if (src_host) {
    staging_.copy_to_device(dst.data(), src.data(), num_bytes, stream());
  } else if (dst_host) {
    BRISK_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), num_bytes, cudaMemcpyDeviceToHost,
                                     stream()));
    BRISK_CUDA_CHECK(cudaStreamSynchronize(stream()));  // the caller reads dst next
  } else {
    BRISK_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), num_bytes, cudaMemcpyDeviceToDevice,
                                     stream()));
  }
}

void CudaBackend::copy_async(TensorView dst, TensorView src) {
  if (dst.device() != Device::kCpu || src.device() == Device::kCpu) return copy(dst, src);
  BRISK_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous(),
              "copy_async: dst is {} but src is {}: both must be contiguous, of one dtype and shape", dst.describe(),
              src.describe());
  BRISK_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.num_bytes(), cudaMemcpyDeviceToHost, stream()));
}

std::unique_ptr<Fence> CudaBackend::record_fence() { return std::make_unique<cuda::EventFence>(stream()); }

void CudaBackend::convert(TensorView dst, TensorView src) { cuda::convert(context_, dst, src); }
void CudaBackend::synchronize() { BRISK_CUDA_CHECK(cudaStreamSynchronize(stream())); }
void CudaBackend::embedding(const EmbeddingParams& p) { cuda::embedding(context_, p); }
void CudaBackend::rms_norm(const RmsNormParams& p) { cuda::rms_norm(context_, p); }
void CudaBackend::rope_kv_append(const RopeKvAppendParams& p) { cuda::rope_kv_append(context_, p); }
void CudaBackend::gemm(const GemmParams& p) { gemm_->run(context_, p); }
void CudaBackend::gemm_w4a16(const GemmW4A16Params& p) { cuda::gemm_w4a16(context_, *gemm_, p); }
void CudaBackend::gemm_fp8(const GemmFp8Params& p) { cuda::gemm_fp8(context_, *gemm_, p); }
Int4Layout CudaBackend::repack_int4(TensorView qweight) { return cuda::repack_int4(context_, qweight); }
void CudaBackend::attention(const AttentionParams& p) { cuda::attention(context_, p); }
void CudaBackend::rope_append_attention(const RopeKvAppendParams& append, const AttentionParams& attn) {
  if (cuda::fused_rope_append_attention(context_, append, attn)) return;
  Backend::rope_append_attention(append, attn);
}
void CudaBackend::silu_mul(const SiluMulParams& p) { cuda::silu_mul(context_, p); }
void CudaBackend::sample(const SampleParams& p) { cuda::sample(context_, p); }
void CudaBackend::top_logprobs(const TopLogprobsParams& p) { cuda::top_logprobs(context_, p); }
void CudaBackend::token_logprobs(const TokenLogprobsParams& p) { cuda::token_logprobs(context_, p); }
void CudaBackend::feed_tokens(const FeedTokensParams& p) { cuda::feed_tokens(context_, p); }
void CudaBackend::apply_token_bitmask(const TokenBitmaskParams& p) { cuda::apply_token_bitmask(context_, p); }
void CudaBackend::logit_bias(const LogitBiasParams& p) { cuda::logit_bias(context_, p); }

std::unique_ptr<RecordedGraph> CudaBackend::record_graph(const std::function<void()>& ops) {
  return cuda::CudaGraph::record(stream(), allocator_, ops);
}

std::unique_ptr<Backend> make_cuda_backend(int ordinal) { return std::make_unique<CudaBackend>(ordinal); }

void CudaBackend::bind_thread() { cuda::bind_device(ordinal_); }

uint64_t CudaBackend::free_memory_bytes() const {
  BRISK_CUDA_CHECK(cudaSetDevice(ordinal_));
  size_t free_bytes = 0, total_bytes = 0;
  cuda::device_memory(&free_bytes, &total_bytes);
  return free_bytes + allocator_.free_bytes();
}

}  // namespace brisk
