// ids[dst[j]] = sampled[src[j]]: the tokens one step sampled become the next step's inputs.
#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace brisk::cpu {

void feed_tokens(const FeedTokensParams& p) {
  check_op_params(p, Device::kCpu);
  int32_t* ids = p.ids.data_as<int32_t>();
  const int32_t* dst = p.dst.data_as<const int32_t>();
  const int32_t* src = p.src.data_as<const int32_t>();
  const int32_t* sampled = p.sampled.data_as<const int32_t>();
  const int64_t num_ids = p.ids.size(0), num_sampled = p.sampled.size(0);
  for (int64_t j = 0; j < p.dst.size(0); ++j) {
    if (dst[j] < 0) continue;
    // The CUDA kernel skips such pairs; the reference names them, since they are a caller's bug.
    BRISK_CHECK(dst[j] < num_ids && src[j] >= 0 && src[j] < num_sampled,
                "feed_tokens: pair {} copies sampled[{}] of {} into ids[{}] of {}", j, src[j], num_sampled, dst[j],
                num_ids);
    ids[dst[j]] = sampled[src[j]];
  }
}

}  // namespace brisk::cpu
