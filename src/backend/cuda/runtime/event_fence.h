// Backend::record_fence on CUDA: an event recorded on the stream. wait() spins on it (the engine
// thread waits for one step while the next is queued; a blocking wake-up would add latency).
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace brisk::cuda {

class EventFence final : public Fence {
 public:
  explicit EventFence(cudaStream_t stream);
  ~EventFence() override;
  EventFence(const EventFence&) = delete;
  EventFence& operator=(const EventFence&) = delete;

  void wait() override;
  double seconds_since(const Fence& earlier) const override;

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace brisk::cuda
