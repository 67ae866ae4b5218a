// brisk's public C++ API: an engine that serves one model to many concurrent requests with
// continuous batching, a paged KV cache and prefix caching. Thread-safe: submit, cancel and
// stats may be called from any thread; one engine thread owns all model and cache state.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "brisk/status.h"

namespace brisk {

namespace grammar {
class CompiledGrammar;
}

struct EngineOptions {
  std::string model_dir;
  std::string backend = "cpu";          // "cpu" or "cuda"
  // Ranks of a tensor-parallel group (Megatron sharding, model/tensor_parallel.h): threads of this
  // process, one backend each (one GPU each on CUDA), driven in lockstep.
  int tensor_parallel_size = 1;
  bool dummy_weights = false;           // random weights from config.json alone
  int64_t max_model_len = 0;            // 0: the model's max_position_embeddings
  // Sequences running at once and the token budget of one step (prefill chunks + decodes): the
  // best of a measured sweep (docs/perf/serving.md).
  int64_t max_num_seqs = 512;
  int64_t max_num_batched_tokens = 8192;
  // Tokens per KV block. 64: the attention kernels then copy whole 64-key blocks, faster than 16
  // (docs/perf/serving.md); prefix caching reuses whole blocks.
  int block_size = 64;
  // Fraction of free memory ("0.9") or a size ("4GiB"); empty: 0.9 on a GPU, 0.2 of available
  // host memory on the CPU (pages are only touched as the cache fills).
  std::string kv_cache_memory;
  int64_t num_kv_blocks = 0;            // > 0 overrides kv_cache_memory (tests)
  // How the KV cache holds keys and values: "auto" (the activation dtype), "int8" or "int4"
  // (asymmetric, a scale and zero point per token and KV head), "fp8" (e4m3, per-layer scales).
  std::string kv_cache_dtype = "auto";
  bool enable_prefix_caching = true;
  // Run every step op by op; otherwise pure decode steps replay CUDA graphs (on the GPU).
  bool enforce_eager = false;
  // Time every step (device time by fences, host time by the clock): Engine::step_profile().
  bool profile_steps = false;
  // Also time every op on the device, by step kind: Engine::op_profile(). Diagnostic: steps then
  // run op by op (no graphs) and the loop waits for each step's ops before the next.
  bool profile_ops = false;
  // Structured output: where the grammar forces the text that follows a sampled token, append
  // that text's tokens (the tokenizer's encoding less its last token, which is left to the model
  // to join to what follows) instead of sampling them one step each. Off: every token is the
  // model's choice under the mask. Not for requests that report logprobs (forced tokens have none).
  bool enable_jump_forward = false;
  // Called while weights load, after each layer (a progress bar); may be empty.
  std::function<void(int64_t num_layers_done, int64_t num_layers)> on_load_progress;
};

struct SamplingParams {
  // Independent samples of one prompt; they share the prompt's KV blocks. Each sample's seed is
  // derived from `seed` and its index, so a seeded request is reproducible and its samples differ.
  int32_t n = 1;
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;
  int32_t top_k = 0;         // 0 or -1: disabled
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  std::optional<uint64_t> seed;  // none: a random seed
  int64_t max_tokens = 16;       // 0 only with prompt_logprobs: score the prompt, generate nothing
  int64_t min_tokens = 0;        // eos and stop tokens are ignored before this many tokens
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  // Text that ends generation (needs a tokenizer in the model folder). The stop string itself
  // is not part of the text unless include_stop_str_in_output; text that might start a stop
  // string is held back until it is known not to.
  std::vector<std::string> stop;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;  // for the text of events
  // Most likely alternatives reported with each token (0 to kMaxTopLogprobs).
  int32_t top_logprobs = 0;
  // The client reads each token's logprob (EngineOptions::enable_jump_forward skips the request).
  bool logprobs = false;
  // Set: score the prompt (RequestEvent::prompt_logprobs) with this many most likely alternatives
  // per position (0 to kMaxTopLogprobs). The whole prompt is then computed: positions served by
  // the prefix cache would have no logits.
  std::optional<int32_t> prompt_logprobs;
  // Added to these tokens' logits before every draw, as OpenAI's logit_bias (and, as a grammar's
  // mask, before the logprobs and alternatives reported): (token, bias) with each token once.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Set: structured output. Every sample's tokens follow this grammar (its vocabulary must be
  // the model's tokenizer, with the engine's eos_token_ids as stop tokens): the sampler only sees
  // the tokens it allows, and the sample ends ("stop") once the grammar has accepted a stop token.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
};

inline constexpr int32_t kMaxTopLogprobs = 20;

struct GenerationRequest {
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
std::string_view finish_reason_name(FinishReason reason);

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

// One prompt token under the raw logits of the tokens before it (SamplingParams::prompt_logprobs).
struct PromptLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
  int32_t rank = 0;  // 1 + the number of tokens with a larger logit; 0: no logprob (the first token)
  std::vector<TokenLogprob> top_logprobs;  // sampling.prompt_logprobs best, most likely first
};

// One event of a request's stream: a generated token, or the terminal event of one sample.
struct RequestEvent {
  enum class Kind { kToken, kFinished };
  Kind kind = Kind::kToken;
  int32_t index = 0;                    // which of the request's n samples
  int32_t token = -1;
  float logprob = 0.0f;                 // log-probability of the token under the raw logits
  std::vector<TokenLogprob> top_logprobs;  // sampling.top_logprobs best, most likely first
  std::string text;                     // newly final text (when the model folder has a tokenizer);
                                        // on kFinished: text held back until the end
  // With sampling.prompt_logprobs, on sample 0's first event (its first token, or its kFinished
  // when it ends without one, as with max_tokens 0; not when it fails or is cancelled before the
  // prompt is scored): one entry per prompt token, entry 0 with rank 0 (nothing precedes it).
  std::vector<PromptLogprob> prompt_logprobs;
  FinishReason finish_reason = FinishReason::kStop;
  std::string stop_string;              // on kFinished(kStop): the stop string that ended it, if one did
  std::string error;                    // for kError: what is wrong
  // For kError: the request was refused at admission (its parameters or length are at fault);
  // this single event ends all of its samples. Otherwise the engine failed while running it.
  bool rejected = false;
  int64_t num_prompt_tokens = 0;        // on kFinished
  int64_t num_cached_prompt_tokens = 0; // on kFinished: prompt tokens served by the prefix cache
  std::chrono::steady_clock::time_point time;  // when the engine produced the event
};

// The events of one request, in order per sample. Each of the n samples ends with exactly one
// kFinished event (with its index); a request rejected at admission gets one kFinished(kError)
// with index 0 and nothing else. next() returns nullopt after the last terminal event.
class RequestStream {
 public:
  virtual ~RequestStream() = default;
  virtual uint64_t id() const = 0;
  // Blocks until an event is available or the timeout passes (nullopt).
  virtual std::optional<RequestEvent> next(std::chrono::milliseconds timeout = std::chrono::hours(24)) = 0;
  // Calls `notify` after each event is queued (on the engine's thread, outside the stream's
  // lock; it must not block), and once now if events are already waiting, so one thread can wait
  // for many streams without polling them. Replaces an earlier notify; empty: none.
  virtual void set_notify(std::function<void()> notify) = 0;
};

struct EngineStats {
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  int64_t num_blocks = 0;
  int64_t num_blocks_in_use = 0;
  int64_t num_blocks_cached = 0;
  int64_t num_blocks_free = 0;
  int64_t num_prompt_tokens_computed = 0;  // prefill tokens run through the model
  int64_t num_generated_tokens = 0;
  int64_t num_forced_tokens = 0;  // of them, appended by jump-forward (EngineOptions::enable_jump_forward)
  int64_t num_prefix_hit_tokens = 0;
  int64_t num_prefix_queried_tokens = 0;
  int64_t num_preemptions = 0;
  int64_t num_steps = 0;
  int64_t num_graph_steps = 0;  // of them, forwards replayed from recorded graphs (pure decode steps)
  int64_t kv_capacity_tokens = 0;
  int64_t block_size = 0;  // tokens per KV block (EngineOptions::block_size)
};

// Where one kind of step spends its time (EngineOptions::profile_steps).
struct StepKindProfile {
  int64_t num_steps = 0;
  int64_t num_tokens = 0;       // tokens computed: prompt chunks and decodes
  double device_s = 0;          // device time from the step's first queued op to its last
  double host_prepare_s = 0;    // scheduling the step and queuing its work
  double host_wait_s = 0;       // the engine thread blocked on the step's results
  double flops = 0;             // model FLOPs: linear layers, attention, the sampled rows' lm_head
};

struct StepProfile {
  StepKindProfile decode;       // every sequence computes one token it sampled
  StepKindProfile mixed;        // prompt chunks and decodes
  StepKindProfile prefill;      // prompt chunks only
  double device_idle_s = 0;     // device time between consecutive steps while the engine had work
  double host_process_s = 0;    // sampled tokens to events: stop checks, detokenizing, streams
  // Steps queued while the previous one was still running (the loop's overlap), and steps that
  // waited for the previous one first (penalties need every output token on the host).
  int64_t num_overlapped_steps = 0;
  int64_t num_synchronous_steps = 0;
};

// One op's device time within one kind of step (EngineOptions::profile_ops).
struct OpProfileEntry {
  std::string step_kind;  // "decode", "mixed", "prefill" (as in StepProfile), or "start-up"
  std::string op;         // e.g. "gemm 28672x4096" (a GEMM by its weight's shape)
  int64_t num_calls = 0;
  double device_s = 0;
};

class Engine {
 public:
  // Loads the model and sizes the KV cache; throws Error naming what is wrong.
  static std::unique_ptr<Engine> create(const EngineOptions& options);
  virtual ~Engine() = default;

  // Never throws for bad requests: their stream ends with a kError event naming the problem.
  virtual std::shared_ptr<RequestStream> submit(GenerationRequest request) = 0;
  // Ends the request with kCancelled (if it has not finished) and frees its KV blocks.
  virtual void cancel(uint64_t request_id) = 0;
  virtual EngineStats stats() const = 0;
  // Totals since start-up; all zero unless EngineOptions::profile_steps.
  virtual StepProfile step_profile() const = 0;
  // Most device time first; empty unless EngineOptions::profile_ops.
  virtual std::vector<OpProfileEntry> op_profile() const = 0;
  virtual int64_t vocab_size() const = 0;
  // True when the model folder has a tokenizer: events then carry text and `stop` works.
  virtual bool has_tokenizer() const = 0;
  virtual int64_t max_model_len() const = 0;
  // Bytes of weights one decode step reads, and KV bytes per cached token (roofline figures), on
  // each rank of a tensor-parallel group (its shard).
  virtual uint64_t weight_bytes_per_step() const = 0;
  virtual uint64_t kv_bytes_per_token() const = 0;
  // eos ids (generation_config.json's, else config.json's).
  virtual std::vector<int32_t> eos_token_ids() const = 0;
  // Stops the engine thread; requests still in flight end with kCancelled.
  virtual void shutdown() = 0;
};

}  // namespace brisk
