// Turns a BatchPlan into one forward step and one sampling call queued on the backend, and owns
// the device KV cache. Launching and collecting are separate so that the host prepares the next
// step while the device runs this one: a launched step's sampled ids stay on the device (the next
// step's inputs take its pending tokens from there) and reach pinned host memory by an
// asynchronous copy that collect() waits for. The forward and the sampling are queued by separate
// calls, so that token masks (structured output) can be computed while the forward runs.
// With tensor parallelism the runner drives every rank of the group in lockstep, each on its own
// thread (rank_threads.h) with its own KV cache and graphs: every rank runs the same forward on its
// shard and samples the same tokens from the same gathered logits (so its next inputs are fed on
// its own device); rank 0's results reach the host.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "engine/decode_graphs.h"
#include "engine/rank_threads.h"
#include "engine/scheduler.h"
#include "engine/token_masks.h"
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
  bool replayed = false;           // its forward replayed a recorded graph
  // Prompt scoring, in the order of its rows (results in the slot's host buffers).
  std::vector<PromptRows> prompt_rows;
  int64_t prompt_top_k = 0;        // alternatives per scored row (the most any request asked for)
  std::unique_ptr<Fence> start;    // before its first op (rank 0's); null unless timed
  std::unique_ptr<Fence> done;     // after its last copy (rank 0's); set by sample()
  // The sampler's rows (draw index fixed at launch) and the ragged prompt / output token lists
  // penalties read (only when some row has a penalty: they can be as long as every context).
  std::vector<SamplingRow> rows;
  // Rows' logit biases (SamplingParams::logit_bias): logits[bias_rows[j], bias_tokens[j]] += bias_values[j].
  std::vector<int32_t> bias_rows, bias_tokens;
  std::vector<float> bias_values;
  bool penalties = false;
  std::vector<int32_t> prompt_start, prompt_tokens, output_start, output_tokens;
};

class ModelRunner {
 public:
  // models: one per rank of a tensor-parallel group (rank r's at index r), or the one model.
  // use_graphs: replay pure decode steps of up to max_num_seqs sequences from recorded graphs
  // where the backend supports them. kv_quant: how the KV cache holds its values.
  ModelRunner(std::vector<LlamaModel*> models, int64_t num_blocks, int block_size, bool use_graphs,
              int64_t max_num_seqs, KvQuant kv_quant = KvQuant::kNone);
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
  int64_t mask_words() const { return (config().vocab_size + 31) / 32; }
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
  // One rank's model, cache, graphs and device buffers.
  struct Rank {
    explicit Rank(LlamaModel* m) : model(m) {}
    LlamaModel* model;
    std::unique_ptr<KvCache> cache;  // made on the rank's thread
    std::unique_ptr<DecodeGraphs> graphs;  // null: every step runs eagerly
    Tensor sampled_ids;                    // [max_num_seqs] i32 on the device: the latest step's tokens
    // Per host slot: the launched step's logits ([num_sampling, vocab] f32) until sampled, and
    // their memory when the forward ran eagerly.
    TensorView logits[2];
    Tensor eager_logits[2];
  };
  const ModelConfig& config() const { return ranks_.front()->model->config(); }
  // Rank r's share of launch() and sample().
  void launch_rank(int r, const StepInputs& in, LaunchedStep& step, bool timed);
  void sample_rank(int r, LaunchedStep& step, const TokenMasks& masks);
  // Runs fn on every rank; a rank that fails aborts the group's collectives so the others fail too.
  void on_ranks(const std::function<void(int rank)>& fn);
  // Fills step's sampler rows and penalty token lists from its sampling requests.
  static void prepare_sampling(LaunchedStep& step);
  void upload_masks(Backend& backend, TensorView logits, const TokenMasks& masks);
  // Scores prompt rows from their final hidden states ([num_rows, hidden_size]): lm_head, log-softmax
  // at the target, rank and top alternatives, in slices of bounded rows, copied to the slot's host
  // buffers (rank 0; the other ranks take part in the lm_head only).
  void score_prompt(int r, TensorView hidden, const std::vector<int32_t>& targets, const LaunchedStep& step);

  std::vector<std::unique_ptr<Rank>> ranks_;
  RankThreads threads_;
  int64_t max_num_seqs_;
  HostSlot slots_[2];
  int64_t num_launched_ = 0;
  int64_t num_collected_ = 0;
};

}  // namespace brisk
