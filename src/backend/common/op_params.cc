#include "backend/common/op_params.h"

#include <cmath>
#include <string_view>
#include <tuple>
#include <utility>

#include "backend/common/op_checks.h"
#include "core/error.h"

namespace brisk {
namespace {

// The [num_blocks, num_kv_heads, block_size, head_dim] paged caches of one layer.
void check_kv_caches(std::string_view op, const TensorView& k_cache, const TensorView& v_cache,
                     const KvQuantParams& quant, int num_kv_heads, int head_dim, Device device) {
  const int64_t row_bytes = quant.kind == KvQuant::kInt4 ? head_dim / 2 : head_dim;
  for (auto [name, cache] : {std::pair{"k_cache", k_cache}, std::pair{"v_cache", v_cache}}) {
    check_view(op, name, cache, 4, Layout::kContiguous, device);
    switch (quant.kind) {
      case KvQuant::kNone: check_float(op, name, cache); break;
      case KvQuant::kInt8:
      case KvQuant::kInt4: check_dtype(op, name, cache, DType::kU8); break;
      case KvQuant::kFp8: check_dtype(op, name, cache, DType::kF8E4M3); break;
    }
    BRISK_CHECK(cache.size(1) == num_kv_heads && cache.size(3) == row_bytes,
                "{}: {} is {} but must be [num_blocks, num_kv_heads {}, block_size, {}]", op, name,
                cache.describe(), num_kv_heads, row_bytes);
  }
  check_same_shape(op, "k_cache", k_cache, "v_cache", v_cache);
  BRISK_CHECK(quant.kind != KvQuant::kInt4 || head_dim % 2 == 0, "{}: an int4 KV cache needs an even head_dim, got {}",
              op, head_dim);
  if (quant.kind == KvQuant::kFp8)
    BRISK_CHECK(quant.k_fp8_scale > 0 && quant.v_fp8_scale > 0 && std::isfinite(quant.k_fp8_scale) &&
                std::isfinite(quant.v_fp8_scale), "{}: fp8 KV scales must be positive, got {} and {}", op,
                quant.k_fp8_scale, quant.v_fp8_scale);
  if (quant.kind != KvQuant::kInt8 && quant.kind != KvQuant::kInt4) return;
  const Shape params_shape{k_cache.size(0), k_cache.size(1), k_cache.size(2)};
  for (auto [name, t, dtype] : {std::tuple{"k_scale", quant.k_scale, DType::kF16},
                                std::tuple{"v_scale", quant.v_scale, DType::kF16},
                                std::tuple{"k_zero", quant.k_zero, DType::kU8},
                                std::tuple{"v_zero", quant.v_zero, DType::kU8}}) {
    check_view(op, name, t, 3, Layout::kContiguous, device);
    check_dtype(op, name, t, dtype);
    BRISK_CHECK(t.shape() == params_shape, "{}: {} is {} but the cache needs [{}, {}, {}]", op, name, t.describe(),
                params_shape[0], params_shape[1], params_shape[2]);
  }
}

// Ragged token lists: start [num_seqs + 1] into tokens [total], given together or not at all.
void check_token_lists(std::string_view start_name, const TensorView& start,
                       std::string_view tokens_name, const TensorView& tokens, int64_t num_seqs,
                       Device device) {
  constexpr std::string_view kOp = "sample";
  BRISK_CHECK(start.empty() == tokens.empty(), "sample: {} and {} must be given together",
              start_name, tokens_name);
  if (start.empty()) return;
  check_index_vector(kOp, start_name, start, num_seqs + 1, device);
  check_view(kOp, tokens_name, tokens, 1, Layout::kContiguous, device);
  check_dtype(kOp, tokens_name, tokens, DType::kI32);
}

}  // namespace

void check_op_params(const EmbeddingParams& p, Device device) {
  constexpr std::string_view kOp = "embedding";
  check_view(kOp, "table", p.table, 2, Layout::kStridedRows, device);
  check_view(kOp, "out", p.out, 2, Layout::kStridedRows, device);
  check_index_vector(kOp, "ids", p.ids, p.out.size(0), device);
  BRISK_CHECK(p.out.size(1) == p.table.size(1), "embedding: table is {} but out is {}: dim differs",
              p.table.describe(), p.out.describe());
  if (p.table.dtype() == p.out.dtype()) {
    BRISK_CHECK(dtype_bits(p.table.dtype()) >= 8, "embedding: table is {}; packed dtypes cannot be "
                "gathered row by row", p.table.describe());
  } else {
    check_float(kOp, "table", p.table);
    check_float(kOp, "out", p.out);
  }
}

void check_op_params(const RmsNormParams& p, Device device) {
  constexpr std::string_view kOp = "rms_norm";
  check_view(kOp, "x", p.x, 2, Layout::kStridedRows, device);
  check_view(kOp, "out", p.out, 2, Layout::kStridedRows, device);
  check_view(kOp, "weight", p.weight, 1, Layout::kContiguous, device);
  check_float(kOp, "x", p.x);
  check_float(kOp, "out", p.out);
  check_float(kOp, "weight", p.weight);
  check_same_shape(kOp, "out", p.out, "x", p.x);
  BRISK_CHECK(p.weight.size(0) == p.x.size(1), "rms_norm: x is {} but weight is {}: dim differs",
              p.x.describe(), p.weight.describe());
  if (!p.residual.empty()) {
    check_view(kOp, "residual", p.residual, 2, Layout::kStridedRows, device);
    check_float(kOp, "residual", p.residual);
    check_same_shape(kOp, "residual", p.residual, "x", p.x);
  }
  BRISK_CHECK(p.eps >= 0.0f, "rms_norm: eps is {} but must be >= 0", p.eps);
}

void check_op_params(const RopeKvAppendParams& p, Device device) {
  constexpr std::string_view kOp = "rope_kv_append";
  BRISK_CHECK(p.num_heads > 0 && p.num_kv_heads > 0,
              "rope_kv_append: num_heads ({}) and num_kv_heads ({}) must be positive",
              p.num_heads, p.num_kv_heads);
  BRISK_CHECK(p.head_dim > 0 && p.head_dim % 2 == 0,
              "rope_kv_append: head_dim is {} but must be positive and even", p.head_dim);
  check_view(kOp, "qkv", p.qkv, 2, Layout::kStridedRows, device);
  check_float(kOp, "qkv", p.qkv);
  const int64_t num_tokens = p.qkv.size(0);
  const int64_t width = int64_t{p.num_heads + 2 * p.num_kv_heads} * p.head_dim;
  BRISK_CHECK(p.qkv.size(1) == width,
              "rope_kv_append: qkv is {} but (num_heads {} + 2 * num_kv_heads {}) * head_dim {} "
              "= {} columns are expected", p.qkv.describe(), p.num_heads, p.num_kv_heads,
              p.head_dim, width);
  check_index_vector(kOp, "positions", p.positions, num_tokens, device);
  check_index_vector(kOp, "slot_mapping", p.slot_mapping, num_tokens, device);
  check_view(kOp, "cos_sin", p.cos_sin, 2, Layout::kStridedRows, device);
  check_dtype(kOp, "cos_sin", p.cos_sin, DType::kF32);
  BRISK_CHECK(p.cos_sin.size(1) == p.head_dim, "rope_kv_append: cos_sin is {} but head_dim is {}",
              p.cos_sin.describe(), p.head_dim);
  for (auto [name, norm] : {std::pair{"q_norm", p.q_norm}, std::pair{"k_norm", p.k_norm}}) {
    if (norm.empty()) continue;
    check_view(kOp, name, norm, 1, Layout::kContiguous, device);
    check_float(kOp, name, norm);
    BRISK_CHECK(norm.size(0) == p.head_dim, "rope_kv_append: {} is {} but head_dim is {}", name,
                norm.describe(), p.head_dim);
  }
  BRISK_CHECK(p.norm_eps >= 0.0f, "rope_kv_append: norm_eps is {} but must be >= 0", p.norm_eps);
  check_kv_caches(kOp, p.k_cache, p.v_cache, p.kv_quant, p.num_kv_heads, p.head_dim, device);
}

void check_op_params(const GemmParams& p, Device device) {
  constexpr std::string_view kOp = "gemm";
  check_view(kOp, "x", p.x, 2, Layout::kStridedRows, device);
  check_view(kOp, "w", p.w, 2, Layout::kStridedRows, device);
  check_view(kOp, "y", p.y, 2, Layout::kStridedRows, device);
  check_float(kOp, "x", p.x);
  check_float(kOp, "w", p.w);
  check_float(kOp, "y", p.y);
  BRISK_CHECK(p.x.size(1) == p.w.size(1), "gemm: x is {} but w is {}: K differs",
              p.x.describe(), p.w.describe());
  BRISK_CHECK(p.y.size(0) == p.x.size(0), "gemm: x is {} but y is {}: M differs",
              p.x.describe(), p.y.describe());
  BRISK_CHECK(p.y.size(1) == p.w.size(0), "gemm: w is {} but y is {}: N differs",
              p.w.describe(), p.y.describe());
  if (!p.bias.empty()) {
    check_view(kOp, "bias", p.bias, 1, Layout::kContiguous, device);
    check_float(kOp, "bias", p.bias);
    BRISK_CHECK(p.bias.size(0) == p.w.size(0), "gemm: w is {} but bias is {}: N differs",
                p.w.describe(), p.bias.describe());
  }
}

void check_op_params(const GemmW4A16Params& p, Device device) {
  constexpr std::string_view kOp = "gemm_w4a16";
  check_view(kOp, "x", p.x, 2, Layout::kStridedRows, device);
  check_view(kOp, "qweight", p.qweight, 2, Layout::kContiguous, device);
  check_view(kOp, "scales", p.scales, 2, Layout::kContiguous, device);
  check_view(kOp, "y", p.y, 2, Layout::kStridedRows, device);
  check_float(kOp, "x", p.x);
  check_dtype(kOp, "qweight", p.qweight, DType::kI4);
  check_float(kOp, "scales", p.scales);
  check_float(kOp, "y", p.y);
  const int64_t n = p.qweight.size(0), k = p.qweight.size(1);
  BRISK_CHECK(p.x.size(1) == k, "gemm_w4a16: x is {} but qweight is {}: K differs", p.x.describe(),
              p.qweight.describe());
  BRISK_CHECK(k % 8 == 0, "gemm_w4a16: qweight is {} but K must be a multiple of 8",
              p.qweight.describe());
  BRISK_CHECK(p.group_size > 0 && k % p.group_size == 0,
              "gemm_w4a16: group_size is {} but must be positive and divide K ({})", p.group_size, k);
  BRISK_CHECK(p.y.size(0) == p.x.size(0), "gemm_w4a16: x is {} but y is {}: M differs",
              p.x.describe(), p.y.describe());
  if (p.silu_gate) {
    BRISK_CHECK(n % 2 == 0 && p.y.size(1) == n / 2,
                "gemm_w4a16: qweight is {} but y is {}: with silu_gate, N must be even and y [M, N / 2]",
                p.qweight.describe(), p.y.describe());
  } else {
    BRISK_CHECK(p.y.size(1) == n, "gemm_w4a16: qweight is {} but y is {}: N differs",
                p.qweight.describe(), p.y.describe());
  }
  if (p.layout == Int4Layout::kTiles16) {
    BRISK_CHECK(device == Device::kCuda,
                "gemm_w4a16: qweight {} is in the CUDA tile layout (kTiles16), which only the cuda backend reads",
                p.qweight.describe());
    BRISK_CHECK(n % 16 == 0 && k % 128 == 0,
                "gemm_w4a16: qweight {} in the tile layout (kTiles16) needs N % 16 == 0 and K % 128 == 0",
                p.qweight.describe());
  } else {
    BRISK_CHECK(p.layout == Int4Layout::kRows, "gemm_w4a16: unknown int4 layout {}", static_cast<int>(p.layout));
  }
  const Shape group_shape{n, k / p.group_size};
  BRISK_CHECK(p.scales.shape() == group_shape,
              "gemm_w4a16: scales is {} but qweight {} with group_size {} needs {}", p.scales.describe(),
              p.qweight.describe(), p.group_size, group_shape.to_string());
  if (!p.zeros.empty()) {
    check_view(kOp, "zeros", p.zeros, 2, Layout::kContiguous, device);
    check_dtype(kOp, "zeros", p.zeros, DType::kU8);
    check_same_shape(kOp, "zeros", p.zeros, "scales", p.scales);
  }
  if (!p.bias.empty()) {
    check_view(kOp, "bias", p.bias, 1, Layout::kContiguous, device);
    check_float(kOp, "bias", p.bias);
    BRISK_CHECK(p.bias.size(0) == n, "gemm_w4a16: qweight is {} but bias is {}: N differs",
                p.qweight.describe(), p.bias.describe());
  }
}

void check_op_params(const GemmFp8Params& p, Device device) {
  constexpr std::string_view kOp = "gemm_fp8";
  check_view(kOp, "x", p.x, 2, Layout::kStridedRows, device);
  check_view(kOp, "weight", p.weight, 2, Layout::kContiguous, device);
  check_view(kOp, "weight_scale", p.weight_scale, 2, Layout::kContiguous, device);
  check_view(kOp, "y", p.y, 2, Layout::kStridedRows, device);
  check_float(kOp, "x", p.x);
  check_dtype(kOp, "weight", p.weight, DType::kF8E4M3);
  check_dtype(kOp, "weight_scale", p.weight_scale, DType::kF32);
  check_float(kOp, "y", p.y);
  const int64_t n = p.weight.size(0), k = p.weight.size(1);
  BRISK_CHECK(p.x.size(1) == k, "gemm_fp8: x is {} but weight is {}: K differs", p.x.describe(), p.weight.describe());
  BRISK_CHECK(p.y.size(0) >= p.x.size(0) && p.y.size(1) == n, "gemm_fp8: x is {} and weight {} but y is {}",
              p.x.describe(), p.weight.describe(), p.y.describe());
  BRISK_CHECK(p.block_size == 0 || p.block_size == 128, "gemm_fp8: block_size is {} but must be 0 or 128", p.block_size);
  const Shape scale_shape{n, p.block_size > 0 ? (k + p.block_size - 1) / p.block_size : 1};
  BRISK_CHECK(p.weight_scale.shape() == scale_shape, "gemm_fp8: weight_scale is {} but weight {} with block_size {} needs {}",
              p.weight_scale.describe(), p.weight.describe(), p.block_size, scale_shape.to_string());
  BRISK_CHECK(!p.row_blocks || p.block_size == 128, "gemm_fp8: row_blocks needs block_size 128 (it is {})",
              p.block_size);
  if (!p.input_scale.empty()) {
    check_view(kOp, "input_scale", p.input_scale, 1, Layout::kContiguous, device);
    check_dtype(kOp, "input_scale", p.input_scale, DType::kF32);
    BRISK_CHECK(p.input_scale.size(0) == 1 && p.block_size == 0,
                "gemm_fp8: input_scale is {} but a static scale is one value, without block_size", p.input_scale.describe());
  }
  if (!p.bias.empty()) {
    check_view(kOp, "bias", p.bias, 1, Layout::kContiguous, device);
    check_float(kOp, "bias", p.bias);
    BRISK_CHECK(p.bias.size(0) == n, "gemm_fp8: weight is {} but bias is {}: N differs", p.weight.describe(),
                p.bias.describe());
  }
}

void check_op_params(const AttentionParams& p, Device device) {
  constexpr std::string_view kOp = "attention";
  BRISK_CHECK(p.num_heads > 0 && p.num_kv_heads > 0 && p.num_heads % p.num_kv_heads == 0,
              "attention: num_heads ({}) must be a positive multiple of num_kv_heads ({})",
              p.num_heads, p.num_kv_heads);
  BRISK_CHECK(p.head_dim > 0, "attention: head_dim is {} but must be positive", p.head_dim);
  BRISK_CHECK(p.sliding_window >= 0, "attention: sliding_window is {} but must be >= 0",
              p.sliding_window);
  const int64_t width = int64_t{p.num_heads} * p.head_dim;
  check_view(kOp, "q", p.q, 2, Layout::kStridedRows, device);
  check_view(kOp, "out", p.out, 2, Layout::kStridedRows, device);
  check_float(kOp, "q", p.q);
  check_float(kOp, "out", p.out);
  BRISK_CHECK(p.q.size(1) == width, "attention: q is {} but num_heads {} * head_dim {} = {}",
              p.q.describe(), p.num_heads, p.head_dim, width);
  check_same_shape(kOp, "out", p.out, "q", p.q);
  check_kv_caches(kOp, p.k_cache, p.v_cache, p.kv_quant, p.num_kv_heads, p.head_dim, device);
  check_view(kOp, "block_tables", p.block_tables, 2, Layout::kContiguous, device);
  check_dtype(kOp, "block_tables", p.block_tables, DType::kI32);
  const int64_t num_seqs = p.block_tables.size(0);
  check_index_vector(kOp, "query_start", p.query_start, num_seqs + 1, device);
  check_index_vector(kOp, "context_lens", p.context_lens, num_seqs, device);
}

void check_op_params(const SiluMulParams& p, Device device) {
  constexpr std::string_view kOp = "silu_mul";
  check_view(kOp, "x", p.x, 2, Layout::kStridedRows, device);
  check_view(kOp, "out", p.out, 2, Layout::kStridedRows, device);
  check_float(kOp, "x", p.x);
  check_float(kOp, "out", p.out);
  BRISK_CHECK(p.out.size(0) == p.x.size(0) && p.x.size(1) == 2 * p.out.size(1),
              "silu_mul: x is {} but out is {}: x must be [num_tokens, 2 * dim] for out "
              "[num_tokens, dim]", p.x.describe(), p.out.describe());
}

void check_op_params(const SampleParams& p, Device device) {
  constexpr std::string_view kOp = "sample";
  check_view(kOp, "logits", p.logits, 2, Layout::kStridedRows, device);
  check_dtype(kOp, "logits", p.logits, DType::kF32);
  const int64_t num_seqs = p.logits.size(0);
  BRISK_CHECK(p.logits.size(1) > 0, "sample: logits is {} but the vocabulary must not be empty",
              p.logits.describe());
  BRISK_CHECK(p.rows != nullptr || num_seqs == 0, "sample: rows is null but logits is {}",
              p.logits.describe());
  check_index_vector(kOp, "out_tokens", p.out_tokens, num_seqs, device);
  if (!p.out_logprobs.empty()) {
    check_view(kOp, "out_logprobs", p.out_logprobs, 1, Layout::kContiguous, device);
    check_dtype(kOp, "out_logprobs", p.out_logprobs, DType::kF32);
    BRISK_CHECK(p.out_logprobs.size(0) == num_seqs, "sample: logits is {} but out_logprobs is {}",
                p.logits.describe(), p.out_logprobs.describe());
  }
  check_token_lists("prompt_start", p.prompt_start, "prompt_tokens", p.prompt_tokens, num_seqs,
                    device);
  check_token_lists("output_start", p.output_start, "output_tokens", p.output_tokens, num_seqs,
                    device);
}

void check_op_params(const TopLogprobsParams& p, Device device) {
  constexpr std::string_view kOp = "top_logprobs";
  check_view(kOp, "logits", p.logits, 2, Layout::kStridedRows, device);
  check_dtype(kOp, "logits", p.logits, DType::kF32);
  check_view(kOp, "out_tokens", p.out_tokens, 2, Layout::kContiguous, device);
  check_dtype(kOp, "out_tokens", p.out_tokens, DType::kI32);
  check_view(kOp, "out_logprobs", p.out_logprobs, 2, Layout::kContiguous, device);
  check_dtype(kOp, "out_logprobs", p.out_logprobs, DType::kF32);
  check_same_shape(kOp, "out_tokens", p.out_tokens, "out_logprobs", p.out_logprobs);
  BRISK_CHECK(p.out_tokens.size(0) == p.logits.size(0), "top_logprobs: logits is {} but out_tokens is {}",
              p.logits.describe(), p.out_tokens.describe());
  BRISK_CHECK(p.out_tokens.size(1) <= p.logits.size(1), "top_logprobs: out_tokens is {}: k exceeds the "
              "vocabulary of logits {}", p.out_tokens.describe(), p.logits.describe());
}

void check_op_params(const TokenLogprobsParams& p, Device device) {
  constexpr std::string_view kOp = "token_logprobs";
  check_view(kOp, "logits", p.logits, 2, Layout::kStridedRows, device);
  check_dtype(kOp, "logits", p.logits, DType::kF32);
  const int64_t num_seqs = p.logits.size(0);
  check_index_vector(kOp, "tokens", p.tokens, num_seqs, device);
  check_view(kOp, "out_logprobs", p.out_logprobs, 1, Layout::kContiguous, device);
  check_dtype(kOp, "out_logprobs", p.out_logprobs, DType::kF32);
  check_index_vector(kOp, "out_ranks", p.out_ranks, num_seqs, device);
  BRISK_CHECK(p.out_logprobs.size(0) == num_seqs, "token_logprobs: logits is {} but out_logprobs is {}",
              p.logits.describe(), p.out_logprobs.describe());
}

void check_op_params(const FeedTokensParams& p, Device device) {
  constexpr std::string_view kOp = "feed_tokens";
  check_view(kOp, "ids", p.ids, 1, Layout::kContiguous, device);
  check_dtype(kOp, "ids", p.ids, DType::kI32);
  check_view(kOp, "sampled", p.sampled, 1, Layout::kContiguous, device);
  check_dtype(kOp, "sampled", p.sampled, DType::kI32);
  check_view(kOp, "dst", p.dst, 1, Layout::kContiguous, device);
  check_index_vector(kOp, "dst", p.dst, p.dst.size(0), device);
  check_index_vector(kOp, "src", p.src, p.dst.size(0), device);
}

void check_op_params(const LogitBiasParams& p, Device device) {
  constexpr std::string_view kOp = "logit_bias";
  check_view(kOp, "logits", p.logits, 2, Layout::kStridedRows, device);
  check_dtype(kOp, "logits", p.logits, DType::kF32);
  check_index_vector(kOp, "rows", p.rows, p.rows.size(0), device);
  check_index_vector(kOp, "tokens", p.tokens, p.rows.size(0), device);
  check_view(kOp, "values", p.values, 1, Layout::kContiguous, device);
  check_dtype(kOp, "values", p.values, DType::kF32);
  BRISK_CHECK(p.values.size(0) == p.rows.size(0), "logit_bias: values is {} but rows is {}: counts differ",
              p.values.describe(), p.rows.describe());
}

void check_op_params(const TokenBitmaskParams& p, Device device) {
  constexpr std::string_view kOp = "apply_token_bitmask";
  check_view(kOp, "logits", p.logits, 2, Layout::kStridedRows, device);
  check_dtype(kOp, "logits", p.logits, DType::kF32);
  check_view(kOp, "bitmask", p.bitmask, 2, Layout::kContiguous, device);
  check_dtype(kOp, "bitmask", p.bitmask, DType::kU32);
  if (p.mask_index.empty()) {
    check_index_vector(kOp, "rows", p.rows, p.bitmask.size(0), device);
  } else {
    check_index_vector(kOp, "mask_index", p.mask_index, p.rows.size(0), device);
  }
}

}  // namespace brisk
