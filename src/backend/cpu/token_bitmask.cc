// apply_token_bitmask: the tokens a grammar does not allow get a logit of -inf.
#include <limits>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace brisk::cpu {

void apply_token_bitmask(const TokenBitmaskParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_seqs = p.logits.size(0), vocab = p.logits.size(1), num_words = p.bitmask.size(1);
  const int32_t* rows = p.rows.data_as<const int32_t>();
  const auto* bitmask = p.bitmask.data_as<const uint32_t>();
  const int32_t* mask_index = p.mask_index.empty() ? nullptr : p.mask_index.data_as<const int32_t>();
  for (int64_t j = 0; j < p.rows.size(0); ++j) {
    BRISK_CHECK(rows[j] >= 0 && rows[j] < num_seqs, "apply_token_bitmask: rows[{}] = {} is outside the {} rows of "
                "logits", j, rows[j], num_seqs);
    const int64_t mask = mask_index != nullptr ? mask_index[j] : j;
    BRISK_CHECK(mask >= 0 && mask < p.bitmask.size(0), "apply_token_bitmask: mask_index[{}] = {} is outside the {} "
                "rows of bitmask", j, mask, p.bitmask.size(0));
    float* logits = p.logits.data_as<float>() + rows[j] * p.logits.stride(0);
    const uint32_t* words = bitmask + mask * num_words;
    for (int64_t v = 0; v < vocab; ++v)
      if (v >= 32 * num_words || ((words[v / 32] >> (v % 32)) & 1u) == 0)
        logits[v] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace brisk::cpu
