// feed_tokens: the tokens one step sampled become the next step's inputs on the device.
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"

namespace brisk::cuda {

void feed_tokens(const OpContext& ctx, const FeedTokensParams& p) {
  check_op_params(p, Device::kCuda);
  FeedTokensArgs a;
  a.ids = p.ids.data_as<int32_t>();
  a.num_ids = p.ids.size(0);
  a.dst = p.dst.data_as<const int32_t>();
  a.src = p.src.data_as<const int32_t>();
  a.num_pairs = p.dst.size(0);
  a.sampled = p.sampled.data_as<const int32_t>();
  a.num_sampled = p.sampled.size(0);
  launch_feed_tokens(a, ctx.stream);
}

}  // namespace brisk::cuda
