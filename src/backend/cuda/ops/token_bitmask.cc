// apply_token_bitmask: the tokens a grammar does not allow get a logit of -inf.
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "core/error.h"

namespace brisk::cuda {

void apply_token_bitmask(const OpContext& ctx, const TokenBitmaskParams& p) {
  check_op_params(p, Device::kCuda);
  BRISK_CHECK(p.rows.size(0) <= 65535, "apply_token_bitmask: {} masked rows exceed the grid's 65535", p.rows.size(0));
  TokenBitmaskArgs a;
  a.logits = p.logits.data_as<float>();
  a.logits_stride = p.logits.stride(0);
  a.vocab = p.logits.size(1);
  a.bitmask = p.bitmask.data_as<const uint32_t>();
  a.num_words = p.bitmask.size(1);
  a.rows = p.rows.data_as<const int32_t>();
  a.mask_index = p.mask_index.empty() ? nullptr : p.mask_index.data_as<const int32_t>();
  a.num_masks = p.bitmask.size(0);
  a.num_masked = p.rows.size(0);
  launch_apply_token_bitmask(a, ctx.stream);
}

}  // namespace brisk::cuda
