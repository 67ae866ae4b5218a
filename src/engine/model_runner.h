// Turns a BatchPlan into one forward step and one sampling call on the backend, and owns the
// device KV cache.
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

class ModelRunner {
 public:
  // use_graphs: replay pure decode steps of up to max_num_seqs sequences from recorded graphs
  // where the backend supports them.
  ModelRunner(LlamaModel& model, int64_t num_blocks, int block_size, bool use_graphs, int64_t max_num_seqs);
  ~ModelRunner();
  // Runs the plan; returns one token for each chunk that samples, in plan order.
  std::vector<SampledToken> step(const BatchPlan& plan);

 private:
  std::vector<SampledToken> sample(TensorView logits, const std::vector<Request*>& sampling);

  LlamaModel& model_;
  KvCache cache_;
  std::unique_ptr<DecodeGraphs> graphs_;  // null: every step runs eagerly
};

}  // namespace brisk
