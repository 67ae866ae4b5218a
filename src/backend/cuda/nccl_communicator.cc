#include "backend/cuda/nccl_communicator.h"

#include <cstdlib>

#include <nccl.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "core/error.h"

namespace brisk {
namespace {

void check_nccl(ncclResult_t result, const char* what) {
  if (result != ncclSuccess && result != ncclInProgress)
    throw_error(ErrorCode::kBackend, "NCCL {} failed: {} ({})", what, ncclGetErrorString(result),
                ncclGetLastError(nullptr));
}

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32: return ncclFloat32;
    case DType::kF16: return ncclFloat16;
    case DType::kBF16: return ncclBfloat16;
    case DType::kI32: return ncclInt32;
    default: throw_error(ErrorCode::kUnsupported, "NCCL collectives: dtype {} is not supported", dtype_name(dtype));
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, CudaBackend& backend, int rank, int size)
      : comm_(comm), backend_(backend), rank_(rank), size_(size) {}
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(TensorView x) override {
    BRISK_CHECK(x.is_contiguous() && x.device() == Device::kCuda, "all_reduce_sum: x must be contiguous on the "
                "device, got {}", x.describe());
    check_nccl(ncclAllReduce(x.data(), x.data(), x.num_elements(), nccl_dtype(x.dtype()), ncclSum, comm_,
                             backend_.stream()),
               "all-reduce");
  }

  void all_gather_columns(TensorView x, TensorView out) override {
    BRISK_CHECK(x.rank() == 2 && out.rank() == 2 && x.is_contiguous() && out.is_contiguous() &&
                    x.dtype() == out.dtype() && out.size(0) == x.size(0) && out.size(1) == x.size(1) * size_,
                "all_gather_columns: out must be contiguous {}[{}, {}] for contiguous x {}", dtype_name(x.dtype()),
                x.size(0), x.size(1) * size_, x.describe());
    const int64_t rows = x.size(0), cols = x.size(1);
    if (rows == 1) {  // rank r's row is already columns [r * cols, (r + 1) * cols)
      check_nccl(ncclAllGather(x.data(), out.data(), cols, nccl_dtype(x.dtype()), comm_, backend_.stream()),
                 "all-gather");
      return;
    }
    // NCCL gathers rank after rank: [size, rows, cols], then each rank's block goes to its columns.
    Tensor gathered(backend_.allocator(), x.dtype(), {size_, rows, cols});
    check_nccl(ncclAllGather(x.data(), gathered.view().data(), rows * cols, nccl_dtype(x.dtype()), comm_,
                             backend_.stream()),
               "all-gather");
    const size_t col_bytes = dtype_bytes(x.dtype(), cols);
    for (int r = 0; r < size_; ++r)
      BRISK_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(out.data()) + r * col_bytes, col_bytes * size_,
                                         static_cast<const char*>(gathered.view().data()) + r * rows * col_bytes,
                                         col_bytes, col_bytes, rows, cudaMemcpyDeviceToDevice, backend_.stream()));
  }

  void abort() override { ncclCommAbort(comm_); }

 private:
  ncclComm_t comm_;
  CudaBackend& backend_;
  int rank_, size_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<Backend*>& backends) {
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  const int size = static_cast<int>(backends.size());
  std::vector<int> devices;
  std::vector<CudaBackend*> cuda;
  for (Backend* b : backends) {
    auto* c = dynamic_cast<CudaBackend*>(b);
    BRISK_CHECK(c != nullptr, "NCCL communicators need CUDA backends, got '{}'", b->name());
    cuda.push_back(c);
    devices.push_back(c->ordinal());
  }
  std::vector<ncclComm_t> comms(size);
  check_nccl(ncclCommInitAll(comms.data(), size, devices.data()), "communicator set-up (ncclCommInitAll)");
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<NcclCommunicator>(comms[r], *cuda[r], r, size));
  return out;
}

}  // namespace brisk
