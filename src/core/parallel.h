// A small persistent thread pool for the CPU backend's data-parallel loops.
#pragma once

#include <cstdint>
#include <functional>

namespace brisk {

// Splits [0, num_items) into contiguous chunks and runs fn(begin, end) on the pool's threads;
// returns when all chunks are done. Runs inline when num_items is below min_chunk or when
// called from inside a pool thread (no nested parallelism). Exceptions propagate to the caller.
void parallel_for(int64_t num_items, int64_t min_chunk,
                  const std::function<void(int64_t begin, int64_t end)>& fn);

// Number of worker threads (defaults to hardware concurrency; BRISK_NUM_THREADS overrides).
int num_cpu_threads();

}  // namespace brisk
