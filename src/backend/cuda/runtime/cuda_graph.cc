#include "backend/cuda/runtime/cuda_graph.h"

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

// Turns the graph pool on for its lifetime, and ends a capture left open by an exception.
class RecordingScope {
 public:
  RecordingScope(cudaStream_t stream, CachingAllocator& allocator) : stream_(stream), allocator_(allocator) {
    allocator_.set_graph_pool(true);
  }
  ~RecordingScope() {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream_, &partial);  // errors ignored: we are unwinding already
      if (partial != nullptr) cudaGraphDestroy(partial);
      cudaGetLastError();
    }
    allocator_.set_graph_pool(false);
  }

 private:
  cudaStream_t stream_;
  CachingAllocator& allocator_;
};

}  // namespace

std::unique_ptr<CudaGraph> CudaGraph::record(cudaStream_t stream, CachingAllocator& allocator,
                                             const std::function<void()>& ops) {
  std::unique_ptr<CudaGraph> graph(new CudaGraph(stream));
  RecordingScope scope(stream, allocator);
  ops();
  // Relaxed: a cudaMalloc for a block the warm-up did not need is allowed (it joins the pool).
  BRISK_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  ops();
  BRISK_CUDA_CHECK(cudaStreamEndCapture(stream, &graph->graph_));
  BRISK_CUDA_CHECK(cudaGraphInstantiate(&graph->exec_, graph->graph_, 0));
  return graph;
}

CudaGraph::~CudaGraph() {
  // Destructors must not throw; a failure here means the context is already gone.
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
}

void CudaGraph::replay() { BRISK_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

}  // namespace brisk::cuda
