#include "backend/cuda/runtime/event_fence.h"

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

EventFence::EventFence(cudaStream_t stream) {
  BRISK_CUDA_CHECK(cudaEventCreate(&event_));
  BRISK_CUDA_CHECK(cudaEventRecord(event_, stream));
}

EventFence::~EventFence() { cudaEventDestroy(event_); }  // destructors must not throw

void EventFence::wait() { BRISK_CUDA_CHECK(cudaEventSynchronize(event_)); }

double EventFence::seconds_since(const Fence& earlier) const {
  float ms = 0;
  BRISK_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<const EventFence&>(earlier).event_, event_));
  return ms * 1e-3;
}

}  // namespace brisk::cuda
