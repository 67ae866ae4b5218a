// rope_kv_append: optional q/k RMSNorm, rotate-half RoPE in place, K/V into the paged cache.
// Positions outside cos_sin leave their token untouched and slots outside the cache skip the
// write (the CPU reference rejects both up front; here that would need a device-to-host copy).
#include <bit>
#include <cstdint>

#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

constexpr int kMaxHeadDim = 512;  // the kernel keeps head_dim / 64 pairs per lane in registers

void check_params(const RopeKvAppendParams& p) {
  check_op_params(p, Device::kCuda);
  BRISK_CHECK(p.head_dim <= kMaxHeadDim,
              "rope_kv_append: head_dim is {} but must be at most {} on cuda", p.head_dim,
              kMaxHeadDim);
}

}  // namespace

static_assert(static_cast<int>(KvCodes::kInt8) == static_cast<int>(KvQuant::kInt8) &&
              static_cast<int>(KvCodes::kInt4) == static_cast<int>(KvQuant::kInt4) &&
              static_cast<int>(KvCodes::kFp8) == static_cast<int>(KvQuant::kFp8));

KvQuantArgs kv_quant_args(const KvQuantParams& p) {
  KvQuantArgs a;
  a.codes = static_cast<KvCodes>(p.kind);
  if (p.kind == KvQuant::kInt8 || p.kind == KvQuant::kInt4) {
    a.k_scale = p.k_scale.data_as<uint16_t>();
    a.v_scale = p.v_scale.data_as<uint16_t>();
    a.k_zero = p.k_zero.data_as<uint8_t>();
    a.v_zero = p.v_zero.data_as<uint8_t>();
  }
  a.k_fp8_scale = p.k_fp8_scale;
  a.v_fp8_scale = p.v_fp8_scale;
  return a;
}

RopeKvAppendArgs rope_kv_append_args(const RopeKvAppendParams& p) {
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
  a.v_cache = p.v_cache.data();
  a.quant = kv_quant_args(p.kv_quant);
  const bool quantized = a.quant.codes != KvCodes::kNone;
  a.k_type = quantized ? FloatType::kF16 : float_type(p.k_cache.dtype());
  a.v_type = quantized ? FloatType::kF16 : float_type(p.v_cache.dtype());
  a.num_slots = p.k_cache.size(0) * p.k_cache.size(2);
  a.block_size = static_cast<int>(p.k_cache.size(2));
  a.num_tokens = p.qkv.size(0);
  auto aligned = [](const TensorView& v) { return v.empty() || reinterpret_cast<uintptr_t>(v.data()) % 16 == 0; };
  a.vectorized = p.head_dim % 16 == 0 && std::has_single_bit(static_cast<unsigned>(p.head_dim / 16)) &&
                 rows_vectorizable(p.qkv) && aligned(p.k_cache) && aligned(p.v_cache) && aligned(p.cos_sin) &&
                 p.cos_sin.stride(0) % 4 == 0 && aligned(p.q_norm) && aligned(p.k_norm);
  // The quantizing writes are the 16-byte kernel's: a group of lanes holds the whole row.
  BRISK_CHECK(!quantized || a.vectorized,
              "rope_kv_append: a quantized KV cache on cuda needs head_dim 16 x a power of two and 16-byte "
              "aligned rows (head_dim {}, qkv {})", p.head_dim, p.qkv.describe());
  return a;
}

void rope_kv_append(const OpContext& ctx, const RopeKvAppendParams& p) {
  launch_rope_kv_append(rope_kv_append_args(p), ctx.stream);
}

}  // namespace brisk::cuda
