#include "engine/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace brisk {

Scheduler::Scheduler(BlockPool& pool, int64_t max_num_seqs, int64_t max_num_batched_tokens)
    : pool_(pool), max_num_seqs_(max_num_seqs), max_num_batched_tokens_(max_num_batched_tokens) {
  BRISK_CHECK(max_num_seqs > 0, "max_num_seqs must be positive, got {}", max_num_seqs);
  BRISK_CHECK(max_num_batched_tokens > 0, "max_num_batched_tokens must be positive, got {}",
              max_num_batched_tokens);
}

void Scheduler::add(Request* request) { waiting_.push_back(request); }

void Scheduler::remove(Request* request) {
  request->blocks.free_all();
  running_.erase(std::remove(running_.begin(), running_.end(), request), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), request), waiting_.end());
}

void Scheduler::preempt_last() {
  Request* victim = running_.back();
  running_.pop_back();
  victim->blocks.free_all();  // recompute later: prompt + generated tokens become its prefill
  victim->prefix_matched = false;
  waiting_.push_front(victim);
  ++num_preemptions_;
}

BatchPlan Scheduler::schedule() {
  BatchPlan plan;
  int64_t budget = max_num_batched_tokens_;
  bool preempted = false;
  // Running requests first, oldest first: decodes (1 token) and continuing prefill chunks.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request* r = running_[i];
    if (r->awaits_last_token()) {
      ++i;
      continue;
    }
    const int64_t n = std::min(r->num_uncomputed(), budget);
    bool scheduled = true;
    while (!r->blocks.allocate_for(n)) {
      const bool self = running_.back() == r;
      preempt_last();
      preempted = true;
      if (self) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    plan.chunks.push_back({r, n, n == r->num_uncomputed()});
    budget -= n;
    ++i;
  }
  // Then waiting requests in arrival order, unless memory was just short.
  while (!preempted && !waiting_.empty() && budget > 0 &&
         static_cast<int64_t>(running_.size()) < max_num_seqs_) {
    Request* r = waiting_.front();
    // A sequence preempted while a token of it was in flight is recomputed once that token is known.
    if (r->num_pending > 0 || !admit(r, budget, plan)) break;
    waiting_.pop_front();
    running_.push_back(r);
    budget -= plan.chunks.back().num_new_tokens;
  }
  for (const auto& c : plan.chunks) plan.num_tokens += c.num_new_tokens;
  return plan;
}

bool Scheduler::admit(Request* r, int64_t budget, BatchPlan& plan) {
  // A request scoring its prompt computes all of it: cached positions would have no logits.
  if (!r->prefix_matched && !r->scores_prompt()) {
    int64_t cached = r->blocks.match_prefix(r->tokens);
    // Forced tokens (jump-forward) may follow the prompt before anything was sampled.
    if (r->num_generated == r->num_forced)
      r->num_cached_prompt_tokens = std::min<int64_t>(cached, static_cast<int64_t>(r->prompt.size()));
    r->prefix_matched = true;
  }
  const int64_t n = std::min(r->num_uncomputed(), budget);
  if (!r->blocks.allocate_for(n)) {
    r->blocks.free_all();  // give the matched blocks back; match again next time
    r->prefix_matched = false;
    return false;
  }
  plan.chunks.push_back({r, n, n == r->num_uncomputed()});
  return true;
}

}  // namespace brisk
