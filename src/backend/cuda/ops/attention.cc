// attention: paged causal GQA attention (kernels/attention_kernel.cuh). The ragged layout and the
// block tables are read on the device; reads outside a sequence's block table or the cache give
// zeros instead of the CPU reference's up-front errors (those would need a device-to-host copy).
// max_query_len and max_context_len, when given, must be upper bounds: they size the grid.
#include <limits>

#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

void check_views(const AttentionParams& p) {
  check_op_params(p, Device::kCuda);
  BRISK_CHECK(attention_supports_head_dim(p.head_dim),
              "attention: head_dim is {} but the cuda backend supports 32, 64, 128 and 256",
              p.head_dim);
  for (auto [name, cache] : {std::pair{"k_cache", p.k_cache}, std::pair{"v_cache", p.v_cache}}) {
    BRISK_CHECK(reinterpret_cast<uintptr_t>(cache.data()) % 16 == 0,
                "attention: {} ({}) must start 16-byte aligned", name, cache.describe());
  }
  const int64_t num_seqs = p.block_tables.size(0);
  BRISK_CHECK(num_seqs <= 65535, "attention: {} sequences in one call; the cuda backend takes at "
              "most 65535", num_seqs);
  BRISK_CHECK(p.q.size(0) <= std::numeric_limits<int32_t>::max() / p.num_heads,
              "attention: q is {}: too many tokens", p.q.describe());
}

}  // namespace

void attention(const OpContext& ctx, const AttentionParams& p) {
  check_views(p);
  AttentionArgs a;
  a.q = p.q.data();
  a.q_stride = p.q.stride(0);
  a.q_type = float_type(p.q.dtype());
  a.k_cache = p.k_cache.data();
  a.k_type = float_type(p.k_cache.dtype());
  a.v_cache = p.v_cache.data();
  a.v_type = float_type(p.v_cache.dtype());
  a.block_tables = p.block_tables.data_as<const int32_t>();
  a.max_blocks_per_seq = p.block_tables.size(1);
  a.num_cache_blocks = p.k_cache.size(0);
  a.query_start = p.query_start.data_as<const int32_t>();
  a.context_lens = p.context_lens.data_as<const int32_t>();
  a.out = p.out.data();
  a.out_stride = p.out.stride(0);
  a.out_type = float_type(p.out.dtype());
  a.num_seqs = static_cast<int>(p.block_tables.size(0));
  a.num_tokens = static_cast<int>(p.q.size(0));
  a.num_heads = p.num_heads;
  a.num_kv_heads = p.num_kv_heads;
  a.head_dim = p.head_dim;
  a.block_size = static_cast<int>(p.k_cache.size(2));
  a.scale = p.scale;
  a.sliding_window = p.sliding_window;
  a.max_query_len = p.max_query_len > 0 ? p.max_query_len : a.num_tokens;
  a.max_context_len = p.max_context_len;
  if (a.num_tokens == 0 || a.num_seqs == 0) return;

  a.num_splits = attention_num_splits(a, ctx.num_sms);
  Tensor partial_acc, partial_ml;  // freed on return: reuse is stream-ordered after the kernels
  if (a.num_splits > 1) {
    const int64_t items = int64_t{a.num_splits} * a.num_tokens * a.num_heads;
    partial_acc = Tensor(*ctx.allocator, DType::kF32, {items, a.head_dim});
    partial_ml = Tensor(*ctx.allocator, DType::kF32, {items, 2});
    a.partial_acc = partial_acc.data_as<float>();
    a.partial_ml = partial_ml.data_as<float>();
  }
  launch_attention(a, ctx.stream);
}

}  // namespace brisk::cuda
