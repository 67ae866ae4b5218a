// The one op interface every backend implements. Each op family takes a Params struct of
// tensor views (no long positional argument lists). The CPU backend is the reference; the CUDA
// backend must match it within the tolerances its parity tests state.
//
// Conventions: all views given to a backend live in that backend's memory (device()); optional
// inputs are empty views; linear-layer weights use Hugging Face's [out_features, in_features]
// layout; the paged KV cache of one layer is [num_blocks, num_kv_heads, block_size, head_dim].
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace brisk {

struct EmbeddingParams {
  TensorView table{};  // [num_rows, dim]: embedding table (or any row-major matrix to gather from)
  TensorView ids{};    // [num_tokens] i32
  TensorView out{};    // [num_tokens, dim]
  // >= 0: a vocabulary-parallel shard (tensor parallelism). table holds the rows of ids
  // [shard_first_id, shard_first_id + num_rows) and every other id gives a zero row. < 0: the
  // whole table, where an id outside it is an error.
  int64_t shard_first_id = -1;
};

// out = rms_norm(x) * weight. With a residual: residual += x first, then out = rms_norm(residual)
// * weight (the pre-norm transformer's "add & norm").
struct RmsNormParams {
  TensorView x{};         // [num_rows, dim]
  TensorView residual{};  // optional [num_rows, dim], updated in place
  TensorView weight{};    // [dim]
  TensorView out{};       // [num_rows, dim]; may alias x
  float eps = 1e-6f;
};

// How a paged KV cache holds its values (--kv-cache-dtype; model/kv_cache.h makes the tensors).
//   kNone: k_cache / v_cache in their own float dtype.
//   kInt8 / kInt4: asymmetric codes per (token, kv head), from its head_dim values x in fp32
//     (after RoPE): lo = min(0, min x), hi = max(0, max x); scale = (hi - lo) / qmax rounded up
//     to f16 (at most 65504), 1 when that is 0; zero = rint(-lo / scale) clamped to [0, qmax]; q = clamp(rint(x / scale) + zero,
//     0, qmax), with qmax 255 / 15 and rint rounding half to even; x' = (q - zero) * scale. The
//     caches are u8 [num_blocks, num_kv_heads, block_size, head_dim] (int4: head_dim / 2 bytes,
//     two codes per byte, low nibble first); scales and zero points sit beside them.
//   kFp8: f8e4m3 caches of e4m3(x / scale) (core/dtype.h's saturating round), one scale per layer
//     for K and one for V; x' = e4m3 * scale.
enum class KvQuant : int32_t { kNone = 0, kInt8 = 1, kInt4 = 2, kFp8 = 3 };

struct KvQuantParams {
  KvQuant kind = KvQuant::kNone;
  TensorView k_scale{};  // int8 / int4: f16 [num_blocks, num_kv_heads, block_size]
  TensorView v_scale{};
  TensorView k_zero{};   // int8 / int4: u8 [num_blocks, num_kv_heads, block_size]
  TensorView v_zero{};
  float k_fp8_scale = 1.0f;  // fp8
  float v_fp8_scale = 1.0f;
};

// Rotates the query and key heads of a fused qkv activation in place (Hugging Face's
// rotate-half convention), after an optional per-head RMSNorm of q and k (Qwen3), and writes
// each token's key and value heads into the paged cache at its slot.
struct RopeKvAppendParams {
  TensorView qkv{};           // [num_tokens, (num_heads + 2 * num_kv_heads) * head_dim]: q | k | v
  TensorView positions{};     // [num_tokens] i32
  TensorView cos_sin{};       // [max_positions, head_dim] f32: cos in [:head_dim/2], sin after
  TensorView q_norm{};        // optional [head_dim]
  TensorView k_norm{};        // optional [head_dim]
  float norm_eps = 1e-6f;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  TensorView slot_mapping{};  // [num_tokens] i32: block * block_size + offset; < 0 skips the write
  TensorView k_cache{};       // [num_blocks, num_kv_heads, block_size, head_dim] (quantized: see KvQuant)
  TensorView v_cache{};       // [num_blocks, num_kv_heads, block_size, head_dim]
  KvQuantParams kv_quant{};   // how the caches hold their values, quantized as they are written
};

// y = x * w^T (+ bias). Accumulates in fp32 at least.
struct GemmParams {
  TensorView x{};     // [M, K]
  TensorView w{};     // [N, K]
  TensorView bias{};  // optional [N]
  TensorView y{};     // [M, N]
};

// How the int4 values of a GemmW4A16Params qweight are ordered in memory. kRows is brisk's layout
// (below; model/int4_weight.h); a backend may prefer another, produced once at load time by
// Backend::repack_int4 (see there). The shape [N, K], the byte count and the meaning of scales
// and zeros stay the same in every layout.
//   kTiles16 (CUDA): rows in tiles of 16 (N % 16 == 0, K % 128 == 0), each tile's 128-K chunks
//   as 1 KiB in the order one warp streams them, chunk-major: 16-byte unit
//   ((c * N / 16 + T) * 2 + h) * 32 + 4 g + t holds row 16 T + 8 h + g, K values
//   [128 c + 32 t, 128 c + 32 t + 32). (Chunk-major: the warps streaming the tiles side by side
//   read one contiguous run of memory at a time.)
enum class Int4Layout : int32_t { kRows = 0, kTiles16 = 1 };

// Tests and tuning benchmarks only: choices of the CUDA backend's W4A16 plan
// (backend/cuda/kernels/w4a16/w4a16_plan.h) pinned instead of made; other backends ignore it.
struct GemmW4A16Forced {
  int mma_config = -1;      // >= 0: the mma.sync kernel's configuration, wherever it holds M
  int wgmma_config = -1;    // >= 0: the wgmma kernel's configuration, for every M from its first
  bool no_wgmma = false;    // the mma.sync kernel or the dequantizing path at every M
  int split_last_wave = 0;  // the wgmma kernel's last partial wave over K: 1 always, -1 never, 0 planned
};

// y = x * dequant(w)^T (+ bias) for group-quantized int4 weights (W4A16), in brisk's layout
// (model/int4_weight.h converts AutoAWQ and GPTQ checkpoints into it):
//   dequant(w)[n, k] = (q[n, k] - zero[n, k / group_size]) * scale[n, k / group_size]
// with q in [0, 15] and the zero point 8 when zeros is empty (symmetric, GPTQ style). Rows of
// qweight are output features like the dense gemm's w, so fused projections concatenate rows.
// Accumulates in fp32. silu_gate fuses a SwiGLU MLP's activation: the product's N = 2 I columns
// are [gate | up] (gate_up's rows) and y [M, I] = silu(gate) * up, computed from the fp32 sums
// (+ bias) without rounding them to y's dtype first.
struct GemmW4A16Params {
  TensorView x{};        // [M, K] f32, f16 or bf16
  TensorView qweight{};  // i4 [N, K]: two values per byte along K, low nibble first
  TensorView scales{};   // [N, K / group_size] f32, f16 or bf16
  TensorView zeros{};    // optional u8 [N, K / group_size]: 0..15 (16 from GPTQ v1's wrap-around)
  int group_size = 0;    // divides K
  TensorView bias{};     // optional [N]
  TensorView y{};        // [M, N]
  Int4Layout layout = Int4Layout::kRows;  // qweight's: what repack_int4 returned for it
  bool silu_gate = false;                 // y [M, N / 2] = silu(gate) * up (above)
  GemmW4A16Forced forced{};              // tests and tuning only (above)
};

// y = x * dequant(w)^T (+ bias) for FP8 (e4m3) weights with x quantized to e4m3 on the fly (W8A8,
// as FP8 checkpoints are served):
//   dequant(w)[n, k] = w[n, k] * weight_scale[n, k / block_size]  (block_size 0: weight_scale[n, 0])
//   x's scale s(m, k): input_scale[0] when given (static); else max |x[m, j]| / 448 over the row
//     (block_size 0) or over k's group of block_size columns, and 1 where that maximum is 0
//   q(m, k) = float_to_e4m3(x[m, k] / s(m, k))  (x in fp32, the division correctly rounded;
//     core/dtype.h's saturating round to nearest even)
//   y[m, n] = sum over k of q(m, k) s(m, k) dequant(w)[n, k]
// The products q * w are exact in fp32; each block of block_size (or all K) is summed in fp32,
// then scaled. Per-tensor checkpoint scales are expanded per row at load time (model/fp8_weight.h).
struct GemmFp8Params {
  TensorView x{};             // [M, K] f32, f16 or bf16
  TensorView weight{};        // f8e4m3 [N, K]
  TensorView weight_scale{};  // f32 [N, 1], or [N, ceil(K / block_size)] when block_size > 0
  TensorView input_scale{};   // optional f32 [1]: the static activation scale (block_size 0 only)
  int block_size = 0;         // 0, or 128: weight and activation scales per 128 K values
  TensorView bias{};          // optional [N]
  // [M, N], or more rows, up to Backend::gemm_fp8_rows(M): the rows past M may be overwritten
  // with anything (room for whole tiles).
  TensorView y{};
  // block_size 128 only: weight_scale's rows repeat per 128-row block (row n holds block n / 128's
  // scales), as 128 x 128 checkpoints give; a backend may then run a block-scaled GEMM.
  bool row_blocks = false;
};

// Causal attention of each sequence's new tokens over its paged KV (earlier context plus the
// new tokens, already appended). Sequence s owns query rows [query_start[s], query_start[s+1]);
// its new tokens are the last (query_start[s+1] - query_start[s]) of its context_lens[s] tokens.
struct AttentionParams {
  TensorView q{};             // [num_tokens, num_heads * head_dim] (rows may be strided)
  TensorView k_cache{};       // [num_blocks, num_kv_heads, block_size, head_dim] (quantized: see KvQuant)
  TensorView v_cache{};       // [num_blocks, num_kv_heads, block_size, head_dim]
  KvQuantParams kv_quant{};   // how the caches hold their values: read dequantized
  TensorView block_tables{};  // [num_seqs, max_blocks_per_seq] i32
  TensorView query_start{};   // [num_seqs + 1] i32
  TensorView context_lens{};  // [num_seqs] i32
  TensorView out{};           // [num_tokens, num_heads * head_dim]
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  float scale = 1.0f;
  int sliding_window = 0;   // > 0: a query at position p sees keys in (p - sliding_window, p]
  int max_query_len = 0;    // host-side hints for kernel selection
  int max_context_len = 0;
};

// out = silu(gate) * up, where x = [gate | up] along the last dimension.
struct SiluMulParams {
  TensorView x{};    // [num_tokens, 2 * dim]
  TensorView out{};  // [num_tokens, dim]
};

// Per-sequence sampling settings, laid out for one host-to-device copy per step.
struct SamplingRow {
  float temperature = 0.0f;         // 0: greedy
  int32_t top_k = 0;                // 0 or < 0: disabled
  float top_p = 1.0f;               // (0, 1]
  float min_p = 0.0f;               // [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 disables (applies to prompt and output tokens)
  float frequency_penalty = 0.0f;   // applies to output tokens, scaled by count
  float presence_penalty = 0.0f;    // applies to output tokens, once
  uint64_t seed = 0;                // with step, determines the random draw
  uint64_t step = 0;                // index of the token being sampled within the request

  // Whether the row reads the prompt and output tokens (SampleParams' token lists). constexpr:
  // the CUDA sampler calls it on the device too.
  constexpr bool has_penalties() const {
    return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f;
  }
};

struct SampleParams {
  TensorView logits{};          // [num_seqs, vocab] f32, modified in place
  const SamplingRow* rows = nullptr;  // [num_seqs], in the backend's memory
  TensorView prompt_start{};    // optional [num_seqs + 1] i32: ragged prompt tokens
  TensorView prompt_tokens{};   // optional [total] i32
  TensorView output_start{};    // optional [num_seqs + 1] i32: ragged generated tokens so far
  TensorView output_tokens{};   // optional [total] i32
  TensorView out_tokens{};      // [num_seqs] i32
  TensorView out_logprobs{};    // optional [num_seqs] f32: log-softmax of the raw logits at the token
};

// The k most likely tokens of each row under log_softmax(logits), most likely first (lowest
// index first among equal logits), with their log-probabilities.
struct TopLogprobsParams {
  TensorView logits{};      // [num_seqs, vocab] f32 (rows may be strided); read only
  TensorView out_tokens{};  // [num_seqs, k] i32
  TensorView out_logprobs{};  // [num_seqs, k] f32
};

// The log-probability of a given token in each row, log_softmax(logits)[s, tokens[s]], and its
// rank: 1 + the number of tokens with a strictly larger logit (vLLM's rank: equal logits share
// one). Scores prompt tokens (prompt logprobs).
struct TokenLogprobsParams {
  TensorView logits{};        // [num_seqs, vocab] f32 (rows may be strided); read only
  TensorView tokens{};        // [num_seqs] i32, each in [0, vocab)
  TensorView out_logprobs{};  // [num_seqs] f32
  TensorView out_ranks{};     // [num_seqs] i32
};

// Feeds tokens sampled by one step into the inputs of the next without a trip through the host:
// ids[dst[j]] = sampled[src[j]] for every pair j with dst[j] >= 0.
struct FeedTokensParams {
  TensorView ids{};      // [num_tokens] i32, updated in place
  TensorView dst{};      // [num_pairs] i32: index into ids; < 0 skips the pair
  TensorView src{};      // [num_pairs] i32: index into sampled
  TensorView sampled{};  // [num_sampled] i32
};

// Structured output: logits[rows[j], v] = -inf for every token v that row j of the bitmask does
// not allow (bit v % 32 of word v / 32; tokens past the mask's words are not allowed).
struct TokenBitmaskParams {
  TensorView logits{};      // [num_seqs, vocab] f32 (rows may be strided), modified in place
  TensorView bitmask{};     // [num_masks, num_words] u32
  TensorView rows{};        // [num_masked] i32: the logits rows masked
  TensorView mask_index{};  // optional [num_masked] i32: the bitmask row of each (default: row j
                            // for rows[j], num_masks == num_masked), so that equal masks are sent once
};

// OpenAI's logit_bias: logits[rows[j], tokens[j]] += values[j], no (row, token) pair twice.
struct LogitBiasParams {
  TensorView logits{};  // [num_seqs, vocab] f32 (rows may be strided), modified in place
  TensorView rows{};    // [num_biases] i32, each in [0, num_seqs)
  TensorView tokens{};  // [num_biases] i32, each in [0, vocab)
  TensorView values{};  // [num_biases] f32
};

// A point in a backend's queue of work, for waiting on it and timing it.
class Fence {
 public:
  virtual ~Fence() = default;
  // Blocks until everything queued before the fence has run.
  virtual void wait() = 0;
  // Seconds of device time from `earlier` to this fence; both must have been waited for.
  virtual double seconds_since(const Fence& earlier) const = 0;
};

// A recorded sequence of ops that replays as one launch (a CUDA graph). A replay repeats the
// recorded ops on the same memory: inputs must be refilled in place before each replay, and the
// recorded ops' temporaries stay reserved for the graph.
class RecordedGraph {
 public:
  virtual ~RecordedGraph() = default;
  virtual void replay() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  virtual Allocator& allocator() = 0;
  // True when host memory views can be used by ops directly (weights need no upload).
  virtual bool shares_host_memory() const = 0;
  // The dtype activations and the KV cache use for a model stored in weight_dtype.
  virtual DType activation_dtype(DType weight_dtype) const = 0;

  // Copies between views of equal dtype and shape (contiguous), across host and device.
  virtual void copy(TensorView dst, TensorView src) = 0;
  // Host memory that device work can copy into without the host waiting (pinned on a GPU).
  virtual Allocator& host_allocator() { return cpu_allocator(); }
  // As copy(), but a device-to-host copy into host_allocator() memory returns at once: dst holds
  // the data once a fence recorded after this call has been waited for. Host-to-device copies
  // return once src may be reused, as with copy().
  virtual void copy_async(TensorView dst, TensorView src) { copy(dst, src); }
  // Marks the work queued so far. Where ops run synchronously (the CPU) it is done at once and
  // times the host clock.
  virtual std::unique_ptr<Fence> record_fence();
  // Converts src into dst's dtype (same shape, contiguous, both in this backend's memory).
  virtual void convert(TensorView dst, TensorView src) = 0;
  virtual void synchronize() = 0;
  // Memory free for the KV cache now: device memory, or available host memory on the CPU.
  virtual uint64_t free_memory_bytes() const;

  virtual void embedding(const EmbeddingParams& p) = 0;
  virtual void rms_norm(const RmsNormParams& p) = 0;
  virtual void rope_kv_append(const RopeKvAppendParams& p) = 0;
  virtual void gemm(const GemmParams& p) = 0;
  virtual void gemm_w4a16(const GemmW4A16Params& p) = 0;
  virtual void gemm_fp8(const GemmFp8Params& p) = 0;
  // The rows of y a gemm_fp8 over m rows of x may use: given that many (GemmFp8Params::y), the
  // backend may compute whole tiles and leave anything in the rows past m.
  virtual int64_t gemm_fp8_rows(int64_t m) const { return m; }
  // Rearranges an int4 weight qweight (i4 [N, K] in brisk's row layout, on this backend) in place
  // into the layout this backend's gemm_w4a16 reads fastest, and returns that layout: pass it as
  // GemmW4A16Params::layout with this qweight from then on. Once per weight, at load time. The
  // CPU keeps rows (no-op); CUDA tiles weights with N % 16 == 0 and K % 128 == 0 (kTiles16).
  virtual Int4Layout repack_int4(TensorView qweight);
  virtual void attention(const AttentionParams& p) = 0;
  // rope_kv_append(append), then attention(attn) on the rotated q: attn.q must be the q columns
  // of append.qkv and attn's caches append's. A backend may fuse the two (the CUDA backend does for
  // batches of its decode kernel without q / k norms, where that pays), in which case append.qkv
  // keeps its q and k unrotated: read neither afterwards. The default runs the two ops.
  virtual void rope_append_attention(const RopeKvAppendParams& append, const AttentionParams& attn);
  virtual void silu_mul(const SiluMulParams& p) = 0;
  virtual void sample(const SampleParams& p) = 0;
  virtual void top_logprobs(const TopLogprobsParams& p) = 0;
  virtual void token_logprobs(const TokenLogprobsParams& p) = 0;
  virtual void feed_tokens(const FeedTokensParams& p) = 0;
  virtual void apply_token_bitmask(const TokenBitmaskParams& p) = 0;
  virtual void logit_bias(const LogitBiasParams& p) = 0;

  // Runs `ops` once (which also warms up their plans and temporaries), then records them into a
  // graph. Null where graphs are not supported (the CPU); ops must then run eagerly.
  virtual std::unique_ptr<RecordedGraph> record_graph(const std::function<void()>& ops);
};

// A view of host data usable by the backend's ops: the host view itself when the backend shares
// host memory, else a device copy appended to `keep` (which must outlive the view's use).
TensorView to_backend(Backend& backend, TensorView host, std::vector<Tensor>& keep);

}  // namespace brisk
