// Backends by name: the one place that knows every backend brisk was built with (the CPU
// reference always, the CUDA backend with BRISK_CUDA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"

namespace brisk {

// "cpu", or "cuda" when brisk was built with CUDA, or "cpu-graphs" (the CPU reference with
// recorded graphs, replay_graph_backend.h); anything else is a clear error.
std::unique_ptr<Backend> make_backend(const std::string& name);
// Rank `rank`'s backend of a tensor-parallel group: on CUDA, on the rank's GPU (the default
// device + rank), which becomes the calling thread's device.
std::unique_ptr<Backend> make_backend(const std::string& name, int rank);
// Makes the calling thread work with `backend` (its GPU on CUDA; nothing on the CPU).
void bind_thread(Backend& backend);

// The communicators of a tensor-parallel group, one per rank's backend (rank r's at index r):
// threads meeting in memory on the CPU, NCCL on CUDA.
std::vector<std::unique_ptr<Communicator>> make_communicators(const std::vector<Backend*>& backends);

}  // namespace brisk
