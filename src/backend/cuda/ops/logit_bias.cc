// logit_bias: additions to single logits (OpenAI's logit_bias).
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"

namespace brisk::cuda {

void logit_bias(const OpContext& ctx, const LogitBiasParams& p) {
  check_op_params(p, Device::kCuda);
  LogitBiasArgs a;
  a.logits = p.logits.data_as<float>();
  a.logits_stride = p.logits.stride(0);
  a.num_seqs = p.logits.size(0);
  a.vocab = p.logits.size(1);
  a.rows = p.rows.data_as<const int32_t>();
  a.tokens = p.tokens.data_as<const int32_t>();
  a.values = p.values.data_as<const float>();
  a.num_biases = p.rows.size(0);
  launch_logit_bias(a, ctx.stream);
}

}  // namespace brisk::cuda
