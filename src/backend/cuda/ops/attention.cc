// attention: paged causal GQA attention. Decode batches (every sequence <= 8 new tokens, bf16 /
// f16 KV or a quantized cache, head_dim 64 / 128 / 256, power-of-two block size) go to the
// tensor-core decode kernel (kernels/decode_attention/), other batches with such KV to the
// tensor-core prefill kernel (kernels/prefill_attention/); the rest (fp32 KV, head_dim 32, other
// block sizes; never a quantized cache) to the generic kernel (kernels/generic_attention/). The ragged layout and the block tables are read on the device;
// reads outside a sequence's block table or the cache give zeros instead of the CPU reference's
// up-front errors (those would need a device-to-host copy). max_query_len and max_context_len,
// when given, must be upper bounds: they size the grid. The launch shape depends on host-known
// sizes only, so the op can be captured in a CUDA graph with max_context_len set to the model's
// maximum. The decode kernel reads query_start, context_lens, block_tables and the K / V of
// every key but the new tokens' before its programmatic-dependent wait (to start streaming K / V
// sooner): they must not be written by the kernel launched just before the op (the engine writes
// the first three with host copies, and the cache only by rope_kv_append, the new tokens').
// fused_rope_append_attention runs rope_kv_append (without q / k norms; quantizing rows for a quantized
// cache) inside the decode kernel.
#include <bit>
#include <limits>

#include "backend/common/op_params.h"
#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/decode_attention/decode_plan.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"
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

// Both tensor-core kernels copy the row parameters of int8 / int4 caches 4 keys at a time.
bool block_size_fits(const AttentionArgs& a) {
  return std::has_single_bit(static_cast<unsigned>(a.block_size)) && (a.quant.codes == KvCodes::kNone || a.block_size >= 4);
}

// The decode kernel's share of the support matrix (decode_attention.h); the rest goes generic.
bool use_decode_kernel(const AttentionArgs& a) {
  return a.max_query_len <= kDecodeMaxQueryLen && a.k_type == a.v_type &&
         decode_attention_supports(a.k_type, a.head_dim, a.quant.codes) && block_size_fits(a);
}

// The prefill kernel's share (prefill_attention.h): batches the decode kernel does not take
// (some sequence has more than kDecodeMaxQueryLen new tokens) with 16-bit or quantized KV of a
// head dim in its table; fp32 KV and head_dim 32 stay on the generic kernel.
bool use_prefill_kernel(const AttentionArgs& a) {
  return a.k_type == a.v_type && (a.k_type == FloatType::kBF16 || a.k_type == FloatType::kF16) &&
         prefill_attention_supports(a.k_type, a.head_dim, a.quant.codes) && block_size_fits(a);
}

// The split-KV kernels' partial results: accumulators [num_splits * num_tokens * num_heads,
// head_dim] and running (max, sum) pairs; none without splits.
class SplitWorkspace {
 public:
  SplitWorkspace(const OpContext& ctx, int num_splits, int num_tokens, int num_heads, int head_dim) {
    if (num_splits <= 1) return;
    const int64_t items = int64_t{num_splits} * num_tokens * num_heads;
    acc_ = Tensor(*ctx.allocator, DType::kF32, {items, head_dim});
    ml_ = Tensor(*ctx.allocator, DType::kF32, {items, 2});
  }
  float* acc() const { return acc_.data_as<float>(); }  // null without splits
  float* ml() const { return ml_.data_as<float>(); }

 private:
  Tensor acc_, ml_;
};

// The part of the generic arguments both tensor-core kernels take.
PagedAttentionArgs paged_args(const AttentionArgs& g) {
  PagedAttentionArgs a;
  a.q = g.q;
  a.q_stride = g.q_stride;
  a.q_type = g.q_type;
  a.k_cache = g.k_cache;
  a.v_cache = g.v_cache;
  a.kv_type = g.k_type;
  a.quant = g.quant;
  a.block_tables = g.block_tables;
  a.max_blocks_per_seq = g.max_blocks_per_seq;
  a.num_cache_blocks = g.num_cache_blocks;
  a.query_start = g.query_start;
  a.context_lens = g.context_lens;
  a.out = g.out;
  a.out_stride = g.out_stride;
  a.out_type = g.out_type;
  a.num_seqs = g.num_seqs;
  a.num_tokens = g.num_tokens;
  a.num_heads = g.num_heads;
  a.num_kv_heads = g.num_kv_heads;
  a.head_dim = g.head_dim;
  a.block_size_log2 = std::countr_zero(static_cast<unsigned>(g.block_size));
  a.scale = g.scale;
  a.sliding_window = g.sliding_window;
  return a;
}

// The Hopper prefill kernel reads 16-bit caches only. A quantized cache's blocks of the batch's
// sequences are dequantized into a scratch 16-bit cache for it (launch.h: DequantizeKvArgs) where
// that copy takes at most kMaxDequantizedBytes;
// else, and where the Hopper kernel does not apply (head_dim 256, blocks under 8 keys), the mma.sync
// kernel dequantizes tile by tile. Returns whether `a` now names the scratch cache.
constexpr int64_t kMaxDequantizedBytes = int64_t{1} << 30;

struct DequantizedCache {
  Tensor k, v, tables;
};

bool dequantize_for_hopper(const OpContext& ctx, PrefillAttentionArgs& a, DequantizedCache& out) {
  const int block_size = 1 << a.block_size_log2;
  if (a.quant.codes == KvCodes::kNone || (a.head_dim != 64 && a.head_dim != 128) || block_size < 8) return false;
  const int64_t blocks = int64_t{a.num_seqs} * a.max_blocks_per_seq;
  const Shape shape{blocks, int64_t{a.num_kv_heads}, int64_t{block_size}, int64_t{a.head_dim}};
  if (2 * shape.num_elements() * 2 > kMaxDequantizedBytes) return false;
  // In q's dtype where that is bf16 (the Hopper kernel then loads q by TMA), else f16.
  const bool bf16 = a.q_type == FloatType::kBF16;
  out.k = Tensor(*ctx.allocator, bf16 ? DType::kBF16 : DType::kF16, shape);
  out.v = Tensor(*ctx.allocator, bf16 ? DType::kBF16 : DType::kF16, shape);
  out.tables = Tensor(*ctx.allocator, DType::kI32, {int64_t{a.num_seqs}, a.max_blocks_per_seq});
  DequantizeKvArgs d;
  d.k_cache = a.k_cache;
  d.v_cache = a.v_cache;
  d.quant = a.quant;
  d.block_tables = a.block_tables;
  d.context_lens = a.context_lens;
  d.max_blocks_per_seq = a.max_blocks_per_seq;
  d.num_cache_blocks = a.num_cache_blocks;
  d.num_seqs = a.num_seqs;
  d.num_kv_heads = a.num_kv_heads;
  d.head_dim = a.head_dim;
  d.block_size = block_size;
  d.k_out = out.k.view().data();
  d.v_out = out.v.view().data();
  d.out_type = bf16 ? FloatType::kBF16 : FloatType::kF16;
  d.out_tables = out.tables.data_as<int32_t>();
  launch_dequantize_kv(d, ctx.stream);
  a.k_cache = d.k_out;
  a.v_cache = d.v_out;
  a.kv_type = d.out_type;
  a.quant = KvQuantArgs{};  // (fp8: K's scale stays in a.scale; V's is in the values)
  a.block_tables = d.out_tables;
  a.num_cache_blocks = blocks;
  return true;
}

void prefill_attention(const OpContext& ctx, const AttentionParams& p, const AttentionArgs& g) {
  PrefillAttentionArgs a;
  static_cast<PagedAttentionArgs&>(a) = paged_args(g);
  DequantizedCache dequantized;  // freed on return: reuse of the memory is stream-ordered after the kernels
  dequantize_for_hopper(ctx, a, dequantized);
  a.q_vectorized = reinterpret_cast<uintptr_t>(g.q) % 16 == 0 && g.q_stride % 8 == 0;
  a.out_pairs = reinterpret_cast<uintptr_t>(g.out) % 4 == 0 && g.out_stride % 2 == 0;
  a.out_vectorized = reinterpret_cast<uintptr_t>(g.out) % 16 == 0 && g.out_stride % 8 == 0;
  a.max_query_len = g.max_query_len;
  a.work_counters = ctx.prefill_work_counters;
  const PrefillKernelShape shape = prefill_attention_shape(a.kv_type, a.head_dim, a.quant.codes);
  const int64_t row_tiles =
      (int64_t{g.num_heads / g.num_kv_heads} * g.max_query_len + shape.rows() - 1) / shape.rows();
  BRISK_CHECK(row_tiles <= 65535, "attention: {} query tokens x group {} exceed the prefill kernel's grid",
              g.max_query_len, g.num_heads / g.num_kv_heads);
  BRISK_CHECK(launch_prefill_attention(a, ctx.num_sms, ctx.stream),
              "attention: the prefill kernel table has no entry for kv dtype {} and head_dim {}",
              dtype_name(p.k_cache.dtype()), a.head_dim);
}

// rope: the fused RoPE and KV append (none: q and the cache are ready). Returns false, launching
// nothing, when the append would not pay (decode_attention_fuses_append).
bool decode_attention(const OpContext& ctx, const AttentionParams& p, const AttentionArgs& g,
                      const RopeKvAppendArgs& rope = {}) {
  DecodeAttentionArgs a;
  static_cast<PagedAttentionArgs&>(a) = paged_args(g);
  a.rope = rope;
  a.out_vectorized = rows_vectorizable(p.out);
  a.num_row_chunks = decode_attention_row_chunks(g.num_heads / g.num_kv_heads, g.max_query_len, a.quant.codes);
  BRISK_CHECK(int64_t{a.num_kv_heads} * a.num_row_chunks <= 65535,
              "attention: {} kv heads x {} row chunks exceed the decode kernel's grid", a.num_kv_heads,
              a.num_row_chunks);
  a.max_context_len = g.max_context_len > 0 ? g.max_context_len : g.max_blocks_per_seq * g.block_size;
  a.num_splits = decode_attention_num_splits(a, ctx.num_sms);
  // One merge counter per (sequence, kv head, row chunk); grids that would need more than a pool
  // holds have thousands of blocks, where the cost model does not split anyway.
  if (int64_t{a.num_seqs} * a.num_kv_heads * a.num_row_chunks > kDecodeMergeCounters) a.num_splits = 1;
  if (rope.qkv != nullptr && !decode_attention_fuses_append(a, ctx.num_sms)) return false;
  // Freed on return: reuse of the memory is stream-ordered after the kernels.
  SplitWorkspace workspace(ctx, a.num_splits, a.num_tokens, a.num_heads, a.head_dim);
  a.partial_acc = workspace.acc();
  a.partial_ml = workspace.ml();
  if (a.num_splits > 1) a.merge_counters = ctx.decode_merge_counters;
  a.single_wave = decode_attention_single_wave(a, ctx.num_sms);
  BRISK_CHECK(launch_decode_attention(a, ctx.stream),
              "attention: the decode kernel table has no entry for kv dtype {} and head_dim {}",
              dtype_name(p.k_cache.dtype()), a.head_dim);
  return true;
}

AttentionArgs attention_args(const AttentionParams& p) {
  check_views(p);
  AttentionArgs a;
  a.q = p.q.data();
  a.q_stride = p.q.stride(0);
  a.q_type = float_type(p.q.dtype());
  a.k_cache = p.k_cache.data();
  a.v_cache = p.v_cache.data();
  a.quant = kv_quant_args(p.kv_quant);
  const bool quantized = a.quant.codes != KvCodes::kNone;
  a.k_type = quantized ? FloatType::kF16 : float_type(p.k_cache.dtype());
  a.v_type = quantized ? FloatType::kF16 : float_type(p.v_cache.dtype());
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
  a.scale = a.quant.codes == KvCodes::kFp8 ? p.scale * p.kv_quant.k_fp8_scale : p.scale;  // K's fp8 scale
  a.sliding_window = p.sliding_window;
  a.max_query_len = p.max_query_len > 0 ? p.max_query_len : a.num_tokens;
  a.max_context_len = p.max_context_len;
  return a;
}

}  // namespace

void attention(const OpContext& ctx, const AttentionParams& p) {
  AttentionArgs a = attention_args(p);
  if (a.num_tokens == 0 || a.num_seqs == 0) return;
  if (use_decode_kernel(a)) {
    decode_attention(ctx, p, a);
    return;
  }
  if (use_prefill_kernel(a)) {
    prefill_attention(ctx, p, a);
    return;
  }
  BRISK_CHECK(a.quant.codes == KvCodes::kNone,
              "attention: a quantized KV cache on cuda needs head_dim 64, 128 or 256 and a power-of-two block size "
              "of at least 4 (head_dim {}, block size {})", a.head_dim, a.block_size);

  a.num_splits = attention_num_splits(a, ctx.num_sms);
  // Freed on return: reuse of the memory is stream-ordered after the kernels.
  SplitWorkspace workspace(ctx, a.num_splits, a.num_tokens, a.num_heads, a.head_dim);
  a.partial_acc = workspace.acc();
  a.partial_ml = workspace.ml();
  launch_attention(a, ctx.stream);
}

bool fused_rope_append_attention(const OpContext& ctx, const RopeKvAppendParams& r, const AttentionParams& p) {
  const RopeKvAppendArgs rope = rope_kv_append_args(r);  // checks r
  const AttentionArgs a = attention_args(p);
  const bool fits = use_decode_kernel(a) && rope.quant == a.quant && r.q_norm.empty() && r.k_norm.empty() &&
                    r.qkv.data() == p.q.data() && r.qkv.stride(0) == p.q.stride(0) && r.qkv.dtype() == p.q.dtype() &&
                    r.qkv.size(0) == p.q.size(0) &&
                    r.k_cache.data() == p.k_cache.data() && r.v_cache.data() == p.v_cache.data() &&
                    r.num_heads == p.num_heads && r.num_kv_heads == p.num_kv_heads && r.head_dim == p.head_dim;
  if (!fits) return false;
  if (a.num_tokens == 0 || a.num_seqs == 0) return true;
  return decode_attention(ctx, p, a, rope);
}

}  // namespace brisk::cuda
