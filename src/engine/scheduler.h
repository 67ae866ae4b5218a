// Which requests run in the next step and how many tokens each computes: FCFS continuous
// batching under max_num_seqs and a per-step token budget, chunked prefill mixed with decodes,
// prefix-cache reuse at admission, and preemption by recompute when KV blocks run out.
// Policy only: no device code.
#pragma once

#include <deque>
#include <vector>

#include "engine/request.h"
#include "kv/block_pool.h"

namespace brisk {

struct ScheduledChunk {
  Request* request;
  int64_t num_new_tokens;  // tokens computed this step, starting at request->blocks.num_computed()
  bool samples;            // the chunk reaches the end of the known tokens: sample the next one
};

struct BatchPlan {
  std::vector<ScheduledChunk> chunks;
  int64_t num_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(BlockPool& pool, int64_t max_num_seqs, int64_t max_num_batched_tokens);

  void add(Request* request);  // appends to the waiting queue
  BatchPlan schedule();
  // Removes a running or waiting request and frees its blocks.
  void remove(Request* request);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_preemptions() const { return num_preemptions_; }

 private:
  // Frees the last running request's blocks and puts it back at the head of the queue.
  void preempt_last();
  bool admit(Request* request, int64_t budget, BatchPlan& plan);

  BlockPool& pool_;
  int64_t max_num_seqs_;
  int64_t max_num_batched_tokens_;
  std::vector<Request*> running_;   // admission order: the last one is preempted first
  std::deque<Request*> waiting_;
  int64_t num_preemptions_ = 0;
};

}  // namespace brisk
