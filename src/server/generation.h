// The engine side of one completions or chat request: its prompts submitted (n samples each),
// the events gathered into choices (choice index = prompt index * n + sample index), usage and
// latency metrics recorded. Destroying a Generation with samples still running cancels them, so
// a handler that returns early (the client left, a write failed) frees their KV blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "server/http_exchange.h"
#include "server/openai_response.h"
#include "server/server_state.h"

namespace brisk::server {

struct ChoiceDelta {
  int64_t index = 0;
  ChoiceOutput delta;       // what is new: text, tokens, and the finish reason once ended
  int64_t text_offset = 0;  // length of the choice's text before this delta
};

class Generation {
 public:
  Generation(ServerState& state, std::vector<std::vector<int32_t>> prompts, SamplingParams sampling,
             boost::asio::any_io_executor executor);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Waits for events and returns what they add, one delta per event in arrival order.
  // nullopt when the client went away (every sample is then cancelled).
  boost::asio::awaitable<std::optional<std::vector<ChoiceDelta>>> next(HttpExchange& exchange);
  bool done() const { return num_unfinished_ == 0; }

  const std::vector<ChoiceOutput>& choices() const { return choices_; }
  // The scored prompt (SamplingParams::prompt_logprobs) of one prompt, once its sample 0's first
  // event has arrived; empty before, or when not asked for.
  const std::vector<PromptLogprob>& prompt_logprobs(size_t prompt_index) const {
    return prompt_logprobs_[prompt_index];
  }
  Usage usage() const { return usage_; }
  // The first engine error, if any; `rejected`: the engine refused the request at admission
  // (a client error) rather than failing while running it.
  const std::optional<std::string>& error() const { return error_; }
  bool error_rejected() const { return error_rejected_; }

  // Ends every sample still running (kCancelled arrives later and is ignored).
  void cancel();

 private:
  void apply(const InboxEvent& event, std::vector<ChoiceDelta>& deltas);
  void finish_choice(int64_t choice, FinishReason reason, std::chrono::steady_clock::time_point time);

  ServerState& state_;
  int32_t num_samples_;
  std::vector<uint64_t> request_ids_;  // per prompt
  std::vector<int32_t> num_unfinished_per_prompt_;
  std::shared_ptr<EventInbox> inbox_;
  std::vector<ChoiceOutput> choices_;
  std::vector<std::vector<PromptLogprob>> prompt_logprobs_;  // per prompt
  std::vector<std::optional<std::chrono::steady_clock::time_point>> last_token_time_;  // per choice
  std::chrono::steady_clock::time_point arrival_;
  Usage usage_;
  int64_t num_unfinished_ = 0;
  bool produced_output_ = false;
  std::optional<std::string> error_;
  bool error_rejected_ = false;
};

}  // namespace brisk::server
