// The boundary between the host side of the CUDA ops (ops/*.cc: parameter checks, kernel
// choice, scratch memory) and the kernels (kernels/*.cu). Arguments are plain structs of
// pointers, element strides and sizes, so that .cu files need no brisk headers that nvcc
// cannot compile (fmt). Strides are in elements of the tensor's own type unless named _bytes.
// Every launcher queues work on the given stream and checks the launch.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace brisk {
struct SamplingRow;
}

namespace brisk::cuda {

// The float element types kernels read and write; kernels switch on it at run time (the
// branch is uniform across a warp and costs nothing next to the memory traffic), which keeps
// the number of template instantiations, and so the compile time, small.
enum class FloatType : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

// dst = src converted. With num_cols == 0 both are contiguous arrays of num_elements; else
// both are [num_elements / num_cols, num_cols] matrices with the given row strides.
struct ConvertArgs {
  const void* src = nullptr;
  FloatType src_type = FloatType::kF32;
  void* dst = nullptr;
  FloatType dst_type = FloatType::kF32;
  int64_t num_elements = 0;
  int64_t num_cols = 0;
  int64_t src_stride = 0;
  int64_t dst_stride = 0;
};
void launch_convert(const ConvertArgs& a, cudaStream_t stream);

// out[t] = table[ids[t] - first_id], either raw bytes (same dtype) or converted (float dtypes).
struct EmbeddingArgs {
  const void* table = nullptr;
  int64_t table_stride_bytes = 0;
  FloatType table_type = FloatType::kF32;
  const int32_t* ids = nullptr;  // [num_tokens]; ids outside [first_id, first_id + num_rows) give zero rows
  int64_t first_id = 0;          // a vocabulary shard's first id
  int64_t num_rows = 0;
  void* out = nullptr;
  int64_t out_stride_bytes = 0;
  FloatType out_type = FloatType::kF32;
  int64_t num_tokens = 0;
  int64_t dim = 0;
  bool raw_copy = false;  // same dtype: copy row_bytes as is
  int64_t row_bytes = 0;
};
void launch_embedding(const EmbeddingArgs& a, cudaStream_t stream);

struct RmsNormArgs {
  const void* x = nullptr;
  int64_t x_stride = 0;
  FloatType x_type = FloatType::kF32;
  void* residual = nullptr;  // optional
  int64_t residual_stride = 0;
  FloatType residual_type = FloatType::kF32;
  const void* weight = nullptr;
  FloatType weight_type = FloatType::kF32;
  void* out = nullptr;
  int64_t out_stride = 0;
  FloatType out_type = FloatType::kF32;
  int64_t num_rows = 0;
  int64_t dim = 0;
  float eps = 1e-6f;
  bool vectorized = false;  // dim % 8 == 0 and every row start 16-byte aligned
};
void launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream);

// How a paged KV cache holds its values (backend.h: KvQuant): 16-bit or fp32 floats (kNone: the
// cache's FloatType), or one code per value of a (token, kv head) row of head_dim values: int8 /
// int4 (two per byte, even dims in the low nibble) x = (code - zero) * scale with an f16 scale and
// u8 zero per row, or fp8 e4m3 x = code * the cache's scale.
enum class KvCodes : int32_t { kNone = 0, kInt8 = 1, kInt4 = 2, kFp8 = 3 };
struct KvQuantArgs {
  KvCodes codes = KvCodes::kNone;
  uint16_t* k_scale = nullptr;  // int8 / int4: f16 bits [num_blocks, num_kv_heads, block_size]
  uint16_t* v_scale = nullptr;
  uint8_t* k_zero = nullptr;  // int8 / int4: [num_blocks, num_kv_heads, block_size]
  uint8_t* v_zero = nullptr;
  float k_fp8_scale = 1.0f;  // fp8
  float v_fp8_scale = 1.0f;
  bool operator==(const KvQuantArgs&) const = default;
};

// The cache blocks a batch's sequences hold in a quantized paged cache, dequantized into a 16-bit
// one: sequence s's block j (j < ceil(context_lens[s] / block_size)) becomes block
// s * max_blocks_per_seq + j of dst, and dst_tables [num_seqs, max_blocks_per_seq] names it so.
// Values as the attention kernels read them: int8 / int4 (code - zero) * scale, fp8 K as its e4m3
// value (its scale stays with the softmax scale) and fp8 V times its scale, rounded once to
// out_type (f16 or bf16).
struct DequantizeKvArgs {
  const void* k_cache = nullptr;  // codes [num_cache_blocks, num_kv_heads, block_size, row bytes]
  const void* v_cache = nullptr;
  KvQuantArgs quant;
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  const int32_t* context_lens = nullptr;  // [num_seqs]
  int64_t max_blocks_per_seq = 0;
  int64_t num_cache_blocks = 0;  // ids outside [0, num_cache_blocks) give zero blocks
  int num_seqs = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // 8 x a power of two
  int block_size = 0;
  void* k_out = nullptr;  // [num_seqs * max_blocks_per_seq, num_kv_heads, block_size, head_dim]
  void* v_out = nullptr;
  FloatType out_type = FloatType::kF16;
  int32_t* out_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
};
void launch_dequantize_kv(const DequantizeKvArgs& a, cudaStream_t stream);

struct RopeKvAppendArgs {
  void* qkv = nullptr;
  int64_t qkv_stride = 0;
  FloatType qkv_type = FloatType::kF32;
  const int32_t* positions = nullptr;
  const float* cos_sin = nullptr;
  int64_t cos_sin_stride = 0;
  int64_t num_positions = 0;  // positions outside [0, num_positions) leave the token untouched
  const void* q_norm = nullptr;  // optional
  FloatType q_norm_type = FloatType::kF32;
  const void* k_norm = nullptr;  // optional
  FloatType k_norm_type = FloatType::kF32;
  float norm_eps = 1e-6f;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  const int32_t* slot_mapping = nullptr;
  void* k_cache = nullptr;
  FloatType k_type = FloatType::kF32;
  void* v_cache = nullptr;
  FloatType v_type = FloatType::kF32;
  int64_t num_slots = 0;  // slots >= num_slots are skipped like negative ones
  int block_size = 0;
  KvQuantArgs quant;  // codes: k_cache / v_cache hold them (k_type / v_type unused), quantized per row
  int64_t num_tokens = 0;
  // head_dim / 16 a power of two and every qkv row, cache, cos_sin row and norm weight 16-byte
  // aligned: the kernel with 16-byte accesses.
  bool vectorized = false;
};
void launch_rope_kv_append(const RopeKvAppendArgs& a, cudaStream_t stream);

struct SiluMulArgs {
  const void* x = nullptr;
  int64_t x_stride = 0;
  FloatType x_type = FloatType::kF32;
  void* out = nullptr;
  int64_t out_stride = 0;
  FloatType out_type = FloatType::kF32;
  int64_t num_tokens = 0;
  int64_t dim = 0;
  bool vectorized = false;
};
void launch_silu_mul(const SiluMulArgs& a, cudaStream_t stream);

// ids[dst[j]] = sampled[src[j]] for pairs with both indices in range (others are skipped).
struct FeedTokensArgs {
  int32_t* ids = nullptr;
  int64_t num_ids = 0;
  const int32_t* dst = nullptr;
  const int32_t* src = nullptr;
  int64_t num_pairs = 0;
  const int32_t* sampled = nullptr;
  int64_t num_sampled = 0;
};
void launch_feed_tokens(const FeedTokensArgs& a, cudaStream_t stream);

// logits[rows[j], v] = -inf where bit v of bitmask row j is clear (or v >= 32 * num_words).
struct TokenBitmaskArgs {
  float* logits = nullptr;
  int64_t logits_stride = 0;  // elements between rows
  int64_t vocab = 0;
  const uint32_t* bitmask = nullptr;     // [num_masks, num_words]
  int64_t num_words = 0;
  const int32_t* rows = nullptr;         // [num_masked]
  const int32_t* mask_index = nullptr;   // optional [num_masked]: row j's bitmask row (default j)
  int64_t num_masks = 0;
  int64_t num_masked = 0;
};
void launch_apply_token_bitmask(const TokenBitmaskArgs& a, cudaStream_t stream);

// logits[rows[j] * logits_stride + tokens[j]] += values[j] (LogitBiasParams); pairs whose row or
// token is out of range are skipped (the CPU refuses them).
struct LogitBiasArgs {
  float* logits = nullptr;
  int64_t logits_stride = 0;  // elements between rows
  int64_t num_seqs = 0;
  int64_t vocab = 0;
  const int32_t* rows = nullptr;    // [num_biases]
  const int32_t* tokens = nullptr;  // [num_biases]
  const float* values = nullptr;    // [num_biases]
  int64_t num_biases = 0;
};
void launch_logit_bias(const LogitBiasArgs& a, cudaStream_t stream);

// y[m, n] = (accumulate ? y[m, n] : 0) + bias[n]; bias may be null (then y = 0 or unchanged).
struct BiasArgs {
  void* y = nullptr;
  int64_t y_stride = 0;
  FloatType y_type = FloatType::kF32;
  const void* bias = nullptr;
  FloatType bias_type = FloatType::kF32;
  int64_t num_rows = 0;
  int64_t num_cols = 0;
  bool accumulate = true;
};
void launch_bias(const BiasArgs& a, cudaStream_t stream);

// y = x w^T (+ bias) for m <= kGemvMaxM (kernels/gemv.cu): x and w both f16 or both bf16, k a
// multiple of 8, x and w 16-byte aligned with row strides that are multiples of 8 elements. From
// M 3 cuBLASLt's tensor-core kernels decode faster (gemv's fp32 FMAs grow with M: docs/perf/gemm.md).
inline constexpr int64_t kGemvMaxM = 2;
struct GemvArgs {
  const void* x = nullptr;  // [m, k]
  int64_t x_stride = 0;
  const void* w = nullptr;  // [n, k]
  int64_t w_stride = 0;
  FloatType w_type = FloatType::kBF16;  // x's too
  const void* bias = nullptr;  // optional [n]
  FloatType bias_type = FloatType::kF32;
  void* y = nullptr;  // [m, n]
  int64_t y_stride = 0;
  FloatType y_type = FloatType::kF32;
  int64_t m = 0, n = 0, k = 0;
};
void launch_gemv(const GemvArgs& a, cudaStream_t stream);

// y = x * dequant(w)^T (+ bias) for int4 weights in brisk's layout (GemmW4A16Params), M <= 16,
// on CUDA cores: the decode path for f32 x or K not a multiple of 128 (16-bit x otherwise takes
// the tensor-core kernel, w4a16/w4a16_launch.h). Each warp streams 1024 consecutive K values of
// kCols weight rows per step (one 16-byte load per lane and row), dequantizes in registers and
// accumulates in fp32. With num_splits > 1 each split covers k_per_split values of K and writes fp32 partials
// that launch_w4a16_reduce sums (split-K where N alone cannot fill the GPU).
struct W4A16Args {
  const void* x = nullptr;  // [m, k], rows 16-byte aligned (rows_vectorizable)
  int64_t x_stride = 0;
  FloatType x_type = FloatType::kF32;
  const uint8_t* qweight = nullptr;  // [n, k / 2] bytes, 16-byte aligned rows
  const void* scales = nullptr;      // [n, k / group_size]
  FloatType scale_type = FloatType::kF16;
  const uint8_t* zeros = nullptr;    // optional [n, k / group_size]; null: zero point 8
  const void* bias = nullptr;        // optional [n]
  FloatType bias_type = FloatType::kF32;
  void* y = nullptr;                 // [m, n], or [m, n / 2] with silu_gate
  int64_t y_stride = 0;
  FloatType y_type = FloatType::kF32;
  float* partials = nullptr;         // [num_splits, m, n] when num_splits > 1 (the wgmma kernel's: w4a16_wgmma.h)
  int m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int group_size = 0;                // a multiple of 32
  int num_splits = 1;
  int64_t k_per_split = 0;           // covers k in num_splits pieces: a multiple of the kernel's K step
  int mma_config = -1;               // the tensor-core kernel's configuration (w4a16_mma_plan)
  int wgmma_config = -1;             // the wgmma kernel's configuration (w4a16_wgmma_plan)
  int64_t split_from_tile = 0;       // the wgmma kernel's first tile split over K (w4a16_wgmma_plan)
  // y[:, f] = silu(gate + bias[f]) * (up + bias[n / 2 + f]) of rows f (gate) and n / 2 + f (up):
  // GemmW4A16Params::silu_gate, in the tensor-core kernels and the reduction (partials stay [m, n]).
  bool silu_gate = false;
};
constexpr int kW4A16MaxRows = 16;
// The split count for these sizes on a GPU of num_sms multiprocessors, and k_per_split to match.
void w4a16_plan_splits(W4A16Args& a, int num_sms);
void launch_w4a16_small_m(const W4A16Args& a, cudaStream_t stream);

// out [n, k] = dequant(w) in out_type (the large-M path: dequantize, then a dense GEMM).
struct DequantizeInt4Args {
  const uint8_t* qweight = nullptr;
  const void* scales = nullptr;
  FloatType scale_type = FloatType::kF16;
  const uint8_t* zeros = nullptr;
  void* out = nullptr;
  FloatType out_type = FloatType::kBF16;
  int64_t n = 0;
  int64_t k = 0;
  int group_size = 0;  // a multiple of 8
};
void launch_dequantize_int4(const DequantizeInt4Args& a, cudaStream_t stream);

struct AttentionArgs {
  const void* q = nullptr;
  int64_t q_stride = 0;
  FloatType q_type = FloatType::kF32;
  const void* k_cache = nullptr;
  FloatType k_type = FloatType::kF32;
  const void* v_cache = nullptr;
  FloatType v_type = FloatType::kF32;
  KvQuantArgs quant;  // codes: the tensor-core kernels only (k_type / v_type f16, what they dequantize to)
  const int32_t* block_tables = nullptr;
  int64_t max_blocks_per_seq = 0;
  int64_t num_cache_blocks = 0;  // block ids outside [0, num_cache_blocks) read as zeros
  const int32_t* query_start = nullptr;
  const int32_t* context_lens = nullptr;
  void* out = nullptr;
  int64_t out_stride = 0;
  FloatType out_type = FloatType::kF32;
  int num_seqs = 0;
  int num_tokens = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_size = 0;
  float scale = 1.0f;
  int sliding_window = 0;
  int max_query_len = 0;    // an upper bound of every sequence's query count
  int max_context_len = 0;  // an upper bound of every context_lens
  // Split-KV (flash-decoding): > 1 splits each (query tile, kv head) over key ranges, writing
  // fp32 partials that a second kernel combines. Choose with attention_num_splits().
  int num_splits = 1;
  float* partial_acc = nullptr;  // [num_splits, num_tokens, num_heads, head_dim]
  float* partial_ml = nullptr;   // [num_splits, num_tokens, num_heads, 2]: running max, sum
};
bool attention_supports_head_dim(int head_dim);
int attention_num_splits(const AttentionArgs& a, int num_sms);
void launch_attention(const AttentionArgs& a, cudaStream_t stream);

// Tokens a sampled row's filters may run on once gathered (sample.cu's candidate path).
inline constexpr int64_t kSampleCandidates = 4096;

struct SampleArgs {
  float* logits = nullptr;  // [num_seqs, vocab], modified in place
  int64_t logits_stride = 0;
  // With out_logprobs: [num_seqs, vocab] scratch, where the rows the call modifies are copied first.
  float* raw_scratch = nullptr;
  float* candidate_logits = nullptr;      // [num_seqs, kSampleCandidates] scratch
  int32_t* candidate_tokens = nullptr;    // [num_seqs, kSampleCandidates] scratch
  const SamplingRow* rows = nullptr;
  const int32_t* prompt_start = nullptr;  // optional ragged lists
  const int32_t* prompt_tokens = nullptr;
  const int32_t* output_start = nullptr;
  const int32_t* output_tokens = nullptr;
  uint32_t* counts = nullptr;  // [num_seqs, vocab] zeroed scratch when a list is given
  int32_t* out_tokens = nullptr;
  float* out_logprobs = nullptr;  // optional
  int64_t num_seqs = 0;
  int64_t vocab = 0;
};
void launch_sample(const SampleArgs& a, cudaStream_t stream);

struct TopLogprobsArgs {
  const float* logits = nullptr;  // [num_seqs, vocab]
  int64_t logits_stride = 0;
  int32_t* out_tokens = nullptr;   // [num_seqs, k]
  float* out_logprobs = nullptr;   // [num_seqs, k]
  int64_t num_seqs = 0;
  int64_t vocab = 0;
  int k = 0;
};
void launch_top_logprobs(const TopLogprobsArgs& a, cudaStream_t stream);

struct TokenLogprobsArgs {
  const float* logits = nullptr;  // [num_seqs, vocab]
  int64_t logits_stride = 0;
  const int32_t* tokens = nullptr;  // [num_seqs]
  float* out_logprobs = nullptr;    // [num_seqs]
  int32_t* out_ranks = nullptr;     // [num_seqs]
  int64_t num_seqs = 0;
  int64_t vocab = 0;
};
void launch_token_logprobs(const TokenLogprobsArgs& a, cudaStream_t stream);

}  // namespace brisk::cuda
