// The calibration statistics of AWQ: a LinearObserver that keeps, for every layer and linear
// input, a bounded uniform random subsample of the rows it sees (reservoir sampling) and the
// mean |x| of every channel over all of them.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama_model.h"
#include "quant/awq_search.h"

namespace brisk {

class ActivationSampler : public LinearObserver {
 public:
  // Keeps at most max_rows rows per (layer, input); the subsample is deterministic for a seed.
  ActivationSampler(int64_t num_layers, int64_t max_rows, uint64_t seed);

  // x must be in host memory (the CPU backend).
  void observe(int64_t layer, LinearInput input, TensorView x) override;

  // The statistics of one input; empty (num_rows 0) before any forward.
  const ActivationRows& rows(int64_t layer, LinearInput input) const;

 private:
  struct Slot {
    ActivationRows rows;
    std::vector<double> sum_abs;  // [num_cols]
    int64_t num_seen = 0;
  };
  uint64_t next_random();

  int64_t max_rows_;
  uint64_t rng_state_;
  std::vector<Slot> slots_;  // [num_layers * kNumLinearInputs]
};

}  // namespace brisk
