// A CUDA graph recorded from the ops a function queues on the backend's stream, replayed with
// one launch: a decode step's few hundred kernels then cost one launch's host time.
#pragma once

#include <functional>
#include <memory>

#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/cuda/runtime/caching_allocator.h"

namespace brisk::cuda {

class CudaGraph final : public RecordedGraph {
 public:
  // Runs `ops` once eagerly (cuBLASLt plans and the graph pool's blocks get made then), then
  // captures them. Both runs allocate from the allocator's graph pool.
  static std::unique_ptr<CudaGraph> record(cudaStream_t stream, CachingAllocator& allocator,
                                           const std::function<void()>& ops);
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void replay() override;

 private:
  explicit CudaGraph(cudaStream_t stream) : stream_(stream) {}

  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace brisk::cuda
