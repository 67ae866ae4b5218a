#include "quant/activation_sampler.h"

#include <cmath>

#include "core/error.h"
#include "core/host_convert.h"

namespace brisk {

ActivationSampler::ActivationSampler(int64_t num_layers, int64_t max_rows, uint64_t seed)
    : max_rows_(max_rows), rng_state_(seed), slots_(num_layers * kNumLinearInputs) {
  BRISK_CHECK(max_rows > 0, "ActivationSampler: max_rows is {} but must be positive", max_rows);
}

uint64_t ActivationSampler::next_random() {  // splitmix64
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void ActivationSampler::observe(int64_t layer, LinearInput input, TensorView x) {
  BRISK_CHECK(x.device() == Device::kCpu && x.rank() == 2,
              "ActivationSampler: layer {} input is {}; calibration needs host [num_tokens, features] rows",
              layer, x.describe());
  Slot& slot = slots_.at(layer * kNumLinearInputs + static_cast<int>(input));
  const int64_t k = x.size(1);
  if (slot.rows.num_cols == 0) {
    slot.rows.num_cols = k;
    slot.sum_abs.assign(k, 0.0);
  }
  BRISK_CHECK(slot.rows.num_cols == k, "ActivationSampler: layer {} input width changed from {} to {}", layer,
              slot.rows.num_cols, k);
  std::vector<float> row(k);
  for (int64_t m = 0; m < x.size(0); ++m) {
    convert_on_host(TensorView(row.data(), DType::kF32, {k}), x.slice(0, m, m + 1).reshape({k}));
    for (int64_t i = 0; i < k; ++i) slot.sum_abs[i] += std::fabs(row[i]);
    ++slot.num_seen;
    // Algorithm R: row number t (1-based) replaces a random kept row with probability max_rows / t.
    int64_t target = slot.rows.num_rows;
    if (slot.rows.num_rows == max_rows_) {
      target = static_cast<int64_t>(next_random() % static_cast<uint64_t>(slot.num_seen));
      if (target >= max_rows_) continue;
    } else {
      ++slot.rows.num_rows;
      slot.rows.rows.resize(slot.rows.num_rows * k);
    }
    std::copy(row.begin(), row.end(), slot.rows.rows.begin() + target * k);
  }
  slot.rows.mean_abs.resize(k);
  for (int64_t i = 0; i < k; ++i) slot.rows.mean_abs[i] = static_cast<float>(slot.sum_abs[i] / slot.num_seen);
}

const ActivationRows& ActivationSampler::rows(int64_t layer, LinearInput input) const {
  return slots_.at(layer * kNumLinearInputs + static_cast<int>(input)).rows;
}

}  // namespace brisk
