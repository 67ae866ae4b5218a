// rope_kv_append: optional q/k RMSNorm, rotate-half RoPE in place, K/V into the paged cache.
// Positions outside cos_sin leave their token untouched and slots outside the cache skip the
// write (the CPU reference rejects both up front; here that would need a device-to-host copy).
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

constexpr std::string_view kOp = "rope_kv_append";
constexpr int kMaxHeadDim = 512;  // the kernel keeps head_dim / 64 pairs per lane in registers

void check_params(const RopeKvAppendParams& p) {
  BRISK_CHECK(p.num_heads > 0 && p.num_kv_heads > 0,
              "rope_kv_append: num_heads ({}) and num_kv_heads ({}) must be positive",
              p.num_heads, p.num_kv_heads);
  BRISK_CHECK(p.head_dim > 0 && p.head_dim % 2 == 0 && p.head_dim <= kMaxHeadDim,
              "rope_kv_append: head_dim is {} but must be positive, even and at most {} on cuda",
              p.head_dim, kMaxHeadDim);
  check_view(kOp, "qkv", p.qkv, 2, Layout::kStridedRows);
  check_float(kOp, "qkv", p.qkv);
  const int64_t num_tokens = p.qkv.size(0);
  const int64_t width = int64_t{p.num_heads + 2 * p.num_kv_heads} * p.head_dim;
  BRISK_CHECK(p.qkv.size(1) == width,
              "rope_kv_append: qkv is {} but (num_heads {} + 2 * num_kv_heads {}) * head_dim {} "
              "= {} columns are expected", p.qkv.describe(), p.num_heads, p.num_kv_heads,
              p.head_dim, width);
  check_index_vector(kOp, "positions", p.positions, num_tokens);
  check_index_vector(kOp, "slot_mapping", p.slot_mapping, num_tokens);
  check_view(kOp, "cos_sin", p.cos_sin, 2, Layout::kStridedRows);
  check_dtype(kOp, "cos_sin", p.cos_sin, DType::kF32);
  BRISK_CHECK(p.cos_sin.size(1) == p.head_dim, "rope_kv_append: cos_sin is {} but head_dim is {}",
              p.cos_sin.describe(), p.head_dim);
  for (auto [name, norm] : {std::pair{"q_norm", p.q_norm}, std::pair{"k_norm", p.k_norm}}) {
    if (norm.empty()) continue;
    check_view(kOp, name, norm, 1, Layout::kContiguous);
    check_float(kOp, name, norm);
    BRISK_CHECK(norm.size(0) == p.head_dim, "rope_kv_append: {} is {} but head_dim is {}", name,
                norm.describe(), p.head_dim);
  }
  BRISK_CHECK(p.norm_eps >= 0.0f, "rope_kv_append: norm_eps is {} but must be >= 0", p.norm_eps);
  for (auto [name, cache] : {std::pair{"k_cache", p.k_cache}, std::pair{"v_cache", p.v_cache}}) {
    check_view(kOp, name, cache, 4, Layout::kContiguous);
    check_float(kOp, name, cache);
    BRISK_CHECK(cache.size(1) == p.num_kv_heads && cache.size(3) == p.head_dim,
                "rope_kv_append: {} is {} but must be [num_blocks, num_kv_heads {}, block_size, "
                "head_dim {}]", name, cache.describe(), p.num_kv_heads, p.head_dim);
  }
  check_same_shape(kOp, "k_cache", p.k_cache, "v_cache", p.v_cache);
}

}  // namespace

void rope_kv_append(const OpContext& ctx, const RopeKvAppendParams& p) {
  check_params(p);
  RopeKvAppendArgs a;
  a.qkv = p.qkv.data();
  a.qkv_stride = p.qkv.stride(0);
  a.qkv_type = float_type(p.qkv.dtype());
  a.positions = p.positions.data_as<const int32_t>();
  a.cos_sin = p.cos_sin.data_as<const float>();
  a.cos_sin_stride = p.cos_sin.stride(0);
  a.num_positions = p.cos_sin.size(0);
  if (!p.q_norm.empty()) {
    a.q_norm = p.q_norm.data();
    a.q_norm_type = float_type(p.q_norm.dtype());
  }
  if (!p.k_norm.empty()) {
    a.k_norm = p.k_norm.data();
    a.k_norm_type = float_type(p.k_norm.dtype());
  }
  a.norm_eps = p.norm_eps;
  a.num_heads = p.num_heads;
  a.num_kv_heads = p.num_kv_heads;
  a.head_dim = p.head_dim;
  a.slot_mapping = p.slot_mapping.data_as<const int32_t>();
  a.k_cache = p.k_cache.data();
  a.k_type = float_type(p.k_cache.dtype());
  a.v_cache = p.v_cache.data();
  a.v_type = float_type(p.v_cache.dtype());
  a.num_slots = p.k_cache.size(0) * p.k_cache.size(2);
  a.block_size = static_cast<int>(p.k_cache.size(2));
  a.num_tokens = p.qkv.size(0);
  launch_rope_kv_append(a, ctx.stream);
}

}  // namespace brisk::cuda
