// Tensor parallelism on the CPU backend: the ranks are threads of one process, and a collective
// is a meeting of all of them (every rank's view published, the result computed, a second
// meeting before anyone may reuse its buffer).
#pragma once

#include <memory>
#include <vector>

#include "backend/communicator.h"

namespace brisk {

// The communicators of one group of `size` ranks; element i is rank i's. all_reduce_sum adds in
// fp32 in pairs ((x0 + x1) + (x2 + x3)), which with the CPU gemm's halving sums (cpu/float_rows.h
// dot_f32_halving) makes a row-parallel product over 2^k ranks equal the one-rank product exactly.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int size);

}  // namespace brisk
