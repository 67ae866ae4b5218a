#include "backend/make_backend.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_communicator.h"
#include "backend/op_timing_backend.h"
#include "backend/replay_graph_backend.h"
#include "core/error.h"
#ifdef BRISK_WITH_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/nccl_communicator.h"
#include "backend/cuda/runtime/device.h"
#endif

namespace brisk {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cpu-graphs") return std::make_unique<ReplayGraphBackend>(make_cpu_backend());
#ifdef BRISK_WITH_CUDA
  if (name == "cuda") return make_cuda_backend();
#else
  if (name == "cuda")
    throw_error(ErrorCode::kUnsupported,
                "backend 'cuda' requested but this brisk was built without CUDA (use the cuda preset)");
#endif
  throw_error(ErrorCode::kInvalidArgument, "unknown backend '{}' (expected cpu, cuda or cpu-graphs)", name);
}

std::unique_ptr<Backend> make_backend(const std::string& name, int rank) {
#ifdef BRISK_WITH_CUDA
  if (name == "cuda") {
    const int ordinal = cuda::default_device() + rank;
    BRISK_CHECK(ordinal < cuda::num_devices(), "tensor-parallel rank {} needs CUDA device {}, but {} are visible",
                rank, ordinal, cuda::num_devices());
    return make_cuda_backend(ordinal);
  }
#endif
  BRISK_CHECK(name != "cpu-graphs" || rank == 0,
              "backend 'cpu-graphs' runs one rank (its graphs would not record the collectives)");
  return make_backend(name);
}

void bind_thread(Backend& backend) {
  if (auto* timer = dynamic_cast<OpTimingBackend*>(&backend)) return bind_thread(timer->inner());
#ifdef BRISK_WITH_CUDA
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend)) cuda->bind_thread();
#endif
}

std::vector<std::unique_ptr<Communicator>> make_communicators(const std::vector<Backend*>& backends) {
  BRISK_CHECK(!backends.empty(), "tensor parallelism: no backends");
  if (backends.front()->device() == Device::kCpu) return make_thread_communicators(static_cast<int>(backends.size()));
#ifdef BRISK_WITH_CUDA
  return make_nccl_communicators(backends);
#else
  throw_error(ErrorCode::kUnsupported, "tensor parallelism on backend '{}' is not available in this brisk",
              backends.front()->name());
#endif
}

}  // namespace brisk
