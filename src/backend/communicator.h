// Collectives between the ranks of a tensor-parallel group: one communicator per rank, each used
// by its rank's thread with views in its rank's backend memory, every rank calling the same
// collectives in the same order with views of equal shape and dtype (each call returns once the
// rank's result is there, or is queued on its backend's stream for device backends).
#pragma once

#include "core/tensor.h"

namespace brisk {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // x = the elementwise sum of every rank's x (contiguous), in place. Sums of more than two ranks
  // are added in pairs, ((x0 + x1) + (x2 + x3)), where the implementation chooses the order (the
  // CPU's does: tensor parallelism then equals one rank exactly there).
  virtual void all_reduce_sum(TensorView x) = 0;
  // out [rows, size() * cols] = every rank's x [rows, cols] side by side: rank r's in columns
  // [r * cols, (r + 1) * cols). out is contiguous.
  virtual void all_gather_columns(TensorView x, TensorView out) = 0;
  // Called by a rank that will not reach its next collective (it failed): the other ranks' waits
  // end with an error instead of hanging.
  virtual void abort() = 0;
};

}  // namespace brisk
