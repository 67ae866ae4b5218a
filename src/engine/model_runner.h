// Turns a BatchPlan into one forward step and one sampling call queued on the backend, and owns
// the device KV cache. Launching and collecting are separate so that the host prepares the next
// step while the device runs this one: a launched step's sampled ids stay on the device (the next
// step's inputs take its pending tokens from there) and reach pinned host memory by an
// asynchronous copy that collect() waits for. The forward and the sampling are queued by separate
// calls, so that token masks (structured output) can be computed while the forward runs.
#pragma once

#include <memory>
#include <vector>

#include "engine/decode_graphs.h"
#include "engine/scheduler.h"
#include "model/kv_cache.h"
#include "model/llama_model.h"

namespace brisk {

struct SampledToken {
  Request* request;
  int32_t token;
  float logprob;
  std::vector<TokenLogprob> top_logprobs;  // request->params.top_logprobs of them
};

// Prompt rows [first_row, first_row + num_rows) of one request that a step scores: row j's
// logits give the log-probability of prompt token j + 1 (Request::num_prompt_rows_launched).
struct PromptRows {
  Request* request;
  int64_t first_row;
  int64_t num_rows;
};

// A step queued on the backend whose sampled tokens have not been collected.
struct LaunchedStep {
  std::vector<Request*> sampling;  // the requests that sample, in the order of their rows
  int slot = 0;                    // host buffers its results are copied into
  int64_t top_k = 0;               // top logprobs per row (the most any row asked for)
  // Prompt scoring, in the order of its rows (results in the slot's host buffers).
  std::vector<PromptRows> prompt_rows;
  int64_t prompt_top_k = 0;        // alternatives per scored row (the most any request asked for)
  std::unique_ptr<Fence> start;    // before its first op; null unless timed
  std::unique_ptr<Fence> done;     // after its last copy; set by sample()
  TensorView logits;               // [sampling.size(), vocab] f32 until sample() has queued
  Tensor eager_logits;             // owns logits when the forward ran eagerly
  // The sampler's rows (draw index fixed at launch) and the ragged prompt / output token lists
  // penalties read (only when some row has a penalty: they can be as long as every context).
  std::vector<SamplingRow> rows;
  bool penalties = false;
  std::vector<int32_t> prompt_start, prompt_tokens, output_start, output_tokens;
};

// Token masks of some of a step's sampling rows (structured output): row j of `words`
// ([rows.size(), ModelRunner::mask_words()]) applies to sampling row rows[j].
struct TokenMasks {
  std::vector<int32_t> rows;
  std::vector<uint32_t> words;
};

class ModelRunner {
 public:
  // use_graphs: replay pure decode steps of up to max_num_seqs sequences from recorded graphs
  // where the backend supports them. kv_quant: how the KV cache holds its values.
  ModelRunner(LlamaModel& model, int64_t num_blocks, int block_size, bool use_graphs, int64_t max_num_seqs,
              KvQuant kv_quant = KvQuant::kNone);
  ~ModelRunner();

  // Queues the plan. A request with a pending token (num_pending > 0) must have it as the last
  // token of its chunk, sampled by the previous launch at row pending_row: it is fed from there
  // on the device. Penalties need every output token on the host: a sampling request with a
  // penalty must have none pending. At most two launched steps may be uncollected; `timed` adds
  // a start fence.
  LaunchedStep launch(const BatchPlan& plan, bool timed);
  // Queues the sampling of a launched step (each launch once, before the next launch): the
  // masked rows only sample tokens their masks allow.
  void sample(LaunchedStep& step, const TokenMasks& masks = {});
  // uint32 words of one token mask: one bit per token of the model's vocabulary.
  int64_t mask_words() const { return (model_.config().vocab_size + 31) / 32; }
  // Waits for the oldest uncollected step; one token per sampling request, in row order. Prompt
  // rows the step scored are appended to their requests' prompt_logprobs first.
  std::vector<SampledToken> collect(const LaunchedStep& step);

 private:
  // A plan's chunks in the order the step runs them, and its pending tokens' places.
  struct StepInputs {
    std::vector<SequenceChunk> chunks;
    std::vector<Request*> sampling;  // the chunks' requests that sample, in row order
    std::vector<int32_t> feed_dst;   // index of a pending token among the step's tokens
    std::vector<int32_t> feed_src;   // its row in the previous step's sampled ids
    std::vector<PromptRows> prompt_rows;  // requests scoring their prompt, in hidden-row order
    std::vector<int32_t> prompt_targets;  // the token each scored row predicts
  };
  StepInputs gather(const BatchPlan& plan) const;
  // Host memory one step's sampled ids, logprobs and top logprobs are copied into, and its scored
  // prompt rows' logprobs, ranks and top alternatives (grown on demand: pinned allocations are
  // slow, and freeing one waits for the device).
  struct HostSlot {
    Tensor tokens, logprobs, top_tokens, top_logprobs;
    Tensor scored_logprobs, scored_ranks, scored_top_tokens, scored_top_logprobs;
  };
  TensorView forward(const std::vector<SequenceChunk>& chunks, const std::vector<int32_t>& feed_dst,
                     const std::vector<int32_t>& feed_src, int64_t num_sampling);
  // Fills step's sampler rows and penalty token lists from its sampling requests.
  static void prepare_sampling(LaunchedStep& step);
  void upload_masks(TensorView logits, const TokenMasks& masks);
  // Scores prompt rows from their final hidden states ([num_rows, hidden_size]): lm_head, log-softmax
  // at the target, rank and top alternatives, in slices of bounded rows, copied to the slot's host buffers.
  void score_prompt(TensorView hidden, std::vector<int32_t>& targets, LaunchedStep& step);

  LlamaModel& model_;
  KvCache cache_;
  std::unique_ptr<DecodeGraphs> graphs_;  // null: every step runs eagerly
  int64_t max_num_seqs_;
  Tensor sampled_ids_;  // [max_num_seqs] i32 on the device: the latest step's tokens
  HostSlot slots_[2];
  int64_t num_launched_ = 0;
  int64_t num_collected_ = 0;
};

}  // namespace brisk
