// logit_bias: additions to single logits (OpenAI's logit_bias).
#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace brisk::cpu {

void logit_bias(const LogitBiasParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_seqs = p.logits.size(0), vocab = p.logits.size(1);
  const int32_t* rows = p.rows.data_as<const int32_t>();
  const int32_t* tokens = p.tokens.data_as<const int32_t>();
  const float* values = p.values.data_as<const float>();
  for (int64_t j = 0; j < p.rows.size(0); ++j) {
    BRISK_CHECK(rows[j] >= 0 && rows[j] < num_seqs, "logit_bias: rows[{}] = {} is outside the {} rows of logits", j,
                rows[j], num_seqs);
    BRISK_CHECK(tokens[j] >= 0 && tokens[j] < vocab, "logit_bias: tokens[{}] = {} is outside the vocabulary [0, {})",
                j, tokens[j], vocab);
    p.logits.data_as<float>()[rows[j] * p.logits.stride(0) + tokens[j]] += values[j];
  }
}

}  // namespace brisk::cpu
