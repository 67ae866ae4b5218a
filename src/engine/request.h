// The engine thread's state of one request: its tokens, sampling settings, KV blocks and stream.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "brisk/engine.h"
#include "engine/stop_strings.h"
#include "grammar/grammar_matcher.h"
#include "kv/sequence_blocks.h"

namespace brisk {

// Thread-safe event queue behind a RequestStream.
class EventQueue final : public RequestStream {
 public:
  explicit EventQueue(uint64_t id) : id_(id) {}
  uint64_t id() const override { return id_; }
  std::optional<RequestEvent> next(std::chrono::milliseconds timeout) override;
  void set_notify(std::function<void()> notify) override;
  void push(RequestEvent event);
  // Before any event: the stream ends after this many kFinished events (one per sample).
  void expect_samples(int32_t num_samples) { num_unfinished_ = num_samples; }

 private:
  uint64_t id_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestEvent> events_;
  std::function<void()> notify_;
  int32_t num_unfinished_ = 1;
};

struct Request {
  Request(uint64_t id, GenerationRequest request, BlockPool& pool, std::shared_ptr<EventQueue> stream)
      : id(id), prompt(std::move(request.prompt_ids)), params(std::move(request.sampling)),
        blocks(pool), stream(std::move(stream)) {}

  uint64_t id;
  int32_t index = 0;               // which of the request's n samples
  std::vector<int32_t> prompt;
  SamplingParams params;
  SamplingRow row;                 // what the sampling op gets (seed fixed at admission)
  std::vector<int32_t> tokens;     // prompt + generated tokens the host has received
  int64_t num_generated = 0;       // generated tokens in `tokens`
  int64_t num_forced = 0;          // of them, appended by jump-forward rather than sampled
  // Tokens sampled by launched steps that the host has not received yet (0..2). The latest of
  // them is row pending_row of the latest launched step's sampled ids, on the device.
  int32_t num_pending = 0;
  int32_t pending_row = -1;
  // Samples in flight that the host drops when they arrive, older than the pending ones: drawn
  // after a token whose forced text was then appended (jump-forward), so at the wrong place.
  int32_t num_discarded = 0;
  int64_t token_limit = 0;         // the request ends at this many tokens (max_tokens or the context)
  bool finished = false;           // ended; a step still in flight may hold a token for it
  int64_t num_cached_prompt_tokens = 0;
  bool prefix_matched = false;     // the prefix cache was consulted since (re)admission
  // Prompt scoring (sample 0 with params.prompt_logprobs): row j of the prompt scores token j + 1.
  // Rows [0, num_prompt_rows_launched) are in launched steps; their results are appended to
  // prompt_logprobs (entry 0 made at admission) as the steps are collected.
  int64_t num_prompt_rows_launched = 0;
  std::vector<PromptLogprob> prompt_logprobs;
  SequenceBlocks blocks;
  std::unique_ptr<StopStringMatcher> text;  // when the model has a tokenizer
  // Structured output (params.grammar): the grammar's state after the tokens the host has; the
  // mask of a sampling row is computed from it once the sample's previous token has arrived.
  std::unique_ptr<grammar::GrammarMatcher> matcher;
  std::shared_ptr<EventQueue> stream;
  // Samples 1..n-1 of a request wait here until sample 0 has computed the prompt, then reuse its
  // KV blocks through the prefix cache instead of computing the prompt n times.
  std::vector<std::unique_ptr<Request>> waiting_samples;

  // Rows of the prompt still to score (see num_prompt_rows_launched).
  bool scores_prompt() const {
    return index == 0 && params.prompt_logprobs && num_prompt_rows_launched < static_cast<int64_t>(prompt.size()) - 1;
  }
  // One of its samples in flight arrived (or its step failed): false when it was discarded.
  bool arrived() {
    if (num_discarded > 0) {
      --num_discarded;
      return false;
    }
    --num_pending;
    return true;
  }
  // Known and pending tokens: what the next steps compute on.
  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()) + num_pending; }
  int64_t num_uncomputed() const { return num_tokens() - blocks.num_computed(); }
  // Its pending tokens reach token_limit: nothing more to compute, it ends when they arrive.
  bool awaits_last_token() const { return num_pending > 0 && num_tokens() >= token_limit; }
};

}  // namespace brisk
