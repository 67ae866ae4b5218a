// Tensor parallelism on CUDA: the collectives of a group of GPU ranks over NCCL, each queued on
// its rank's backend stream (so they order with the rank's ops and CUDA graphs capture them).
// NVLink SHARP (multicast) stays off unless the environment sets NCCL_NVLS_ENABLE.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"

namespace brisk {

// One communicator per backend (each a CudaBackend on its own GPU; rank r's at index r), made
// together in this process (ncclCommInitAll).
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<Backend*>& backends);

}  // namespace brisk
