#include "engine/step_profiler.h"

#include <algorithm>

namespace brisk {

StepShape StepProfiler::shape(const BatchPlan& plan) {
  const ModelConfig& c = config_;
  const double hidden = static_cast<double>(c.hidden_size), head_dim = static_cast<double>(c.head_dim);
  const double heads = static_cast<double>(c.num_heads), kv_heads = static_cast<double>(c.num_kv_heads);
  const double layers = static_cast<double>(c.num_layers);
  // Multiply-adds per token of every layer's q/k/v, o, gate/up and down projections.
  const double linear_macs =
      hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden + 3 * hidden * c.intermediate_size;
  StepShape s;
  bool any_prompt = false, any_decode = false;
  for (const ScheduledChunk& chunk : plan.chunks) {
    const Request& r = *chunk.request;
    const double cached = static_cast<double>(r.blocks.num_computed());
    const double n = static_cast<double>(chunk.num_new_tokens);
    // A decode computes the one token its previous step sampled; anything else is a prompt chunk
    // (or the recomputation of a preempted sequence).
    const bool decode = chunk.num_new_tokens == 1 && r.blocks.num_computed() >= static_cast<int64_t>(r.prompt.size());
    (decode ? any_decode : any_prompt) = true;
    s.num_tokens += chunk.num_new_tokens;
    // Causal attention: each new token's scores and weighted sum over its context, in every head.
    s.flops += 2 * n * linear_macs * layers + 4 * layers * heads * head_dim * n * (cached + (n + 1) / 2);
    if (chunk.samples) s.flops += 2 * hidden * static_cast<double>(c.vocab_size);
  }
  s.kind = any_prompt ? (any_decode ? &profile_.mixed : &profile_.prefill) : &profile_.decode;
  s.kind_name = any_prompt ? (any_decode ? "mixed" : "prefill") : "decode";
  return s;
}

void StepProfiler::launched(const StepShape& shape, double host_prepare_s, bool overlapped) {
  StepKindProfile& k = *shape.kind;
  k.num_steps++;
  k.num_tokens += shape.num_tokens;
  k.flops += shape.flops;
  k.host_prepare_s += host_prepare_s;
  if (overlapped) profile_.num_overlapped_steps++;
}

void StepProfiler::collected(const StepShape& shape, const Fence* start, std::unique_ptr<Fence> done,
                             double host_wait_s) {
  shape.kind->host_wait_s += host_wait_s;
  if (start == nullptr) return;
  shape.kind->device_s += done->seconds_since(*start);
  if (last_done_) profile_.device_idle_s += std::max(0.0, start->seconds_since(*last_done_));
  last_done_ = std::move(done);
}

}  // namespace brisk
