#include "backend/make_backend.h"

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#ifdef BRISK_WITH_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace brisk {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_backend();
#ifdef BRISK_WITH_CUDA
  if (name == "cuda") return make_cuda_backend();
#else
  if (name == "cuda")
    throw_error(ErrorCode::kUnsupported,
                "backend 'cuda' requested but this brisk was built without CUDA (use the cuda preset)");
#endif
  throw_error(ErrorCode::kInvalidArgument, "unknown backend '{}' (expected cpu or cuda)", name);
}

}  // namespace brisk
