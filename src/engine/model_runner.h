// Turns a BatchPlan into one forward step and one sampling call on the backend, and owns the
// device KV cache.
#pragma once

#include <memory>
#include <vector>

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
  ModelRunner(LlamaModel& model, int64_t num_blocks, int block_size);
  // Runs the plan; returns one token for each chunk that samples, in plan order.
  std::vector<SampledToken> step(const BatchPlan& plan);

 private:
  LlamaModel& model_;
  KvCache cache_;
};

}  // namespace brisk
