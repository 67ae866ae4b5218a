#include "server/generation.h"

#include <algorithm>

namespace brisk::server {
namespace {

double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// One delta per engine event: streaming clients (and benchmarks that time chunks) see a chunk
// per token, as vLLM sends them.
ChoiceDelta& new_delta(std::vector<ChoiceDelta>& deltas, int64_t index, const ChoiceOutput& choice) {
  deltas.push_back({index, {}, static_cast<int64_t>(choice.text.size())});
  return deltas.back();
}

}  // namespace

Generation::Generation(ServerState& state, std::vector<std::vector<int32_t>> prompts, SamplingParams sampling,
                       boost::asio::any_io_executor executor)
    : state_(state), num_samples_(sampling.n), inbox_(std::make_shared<EventInbox>(executor)),
      arrival_(std::chrono::steady_clock::now()) {
  const size_t num_choices = prompts.size() * static_cast<size_t>(num_samples_);
  choices_.resize(num_choices);
  prompt_logprobs_.resize(prompts.size());
  last_token_time_.resize(num_choices);
  num_unfinished_ = static_cast<int64_t>(num_choices);
  for (size_t i = 0; i < prompts.size(); ++i) {
    usage_.prompt_tokens += static_cast<int64_t>(prompts[i].size());
    std::shared_ptr<RequestStream> stream = state_.engine().submit({std::move(prompts[i]), sampling});
    request_ids_.push_back(stream->id());
    num_unfinished_per_prompt_.push_back(num_samples_);
    state_.add_active(stream->id());
    state_.pump().watch(std::move(stream), num_samples_, static_cast<int32_t>(i), inbox_);
  }
  state_.metrics().prompt_tokens().inc(static_cast<double>(usage_.prompt_tokens));
}

Generation::~Generation() {
  if (!done()) cancel();
  for (uint64_t id : request_ids_) state_.remove_active(id);
}

void Generation::cancel() {
  for (size_t i = 0; i < request_ids_.size(); ++i)
    if (num_unfinished_per_prompt_[i] > 0) state_.engine().cancel(request_ids_[i]);
  for (size_t c = 0; c < choices_.size(); ++c)
    if (!choices_[c].finish_reason) finish_choice(static_cast<int64_t>(c), FinishReason::kCancelled, {});
}

void Generation::finish_choice(int64_t choice, FinishReason reason, std::chrono::steady_clock::time_point time) {
  ChoiceOutput& c = choices_[choice];
  if (c.finish_reason) return;  // already ended (a cancel raced with its last event)
  c.finish_reason = reason;
  num_unfinished_--;
  num_unfinished_per_prompt_[choice / num_samples_]--;
  state_.metrics().record_finish(reason);
  if (reason == FinishReason::kStop || reason == FinishReason::kLength)
    state_.metrics().e2e_latency().observe(seconds_between(arrival_, time));
}

void Generation::apply(const InboxEvent& inbox_event, std::vector<ChoiceDelta>& deltas) {
  const RequestEvent& e = inbox_event.event;
  const int64_t first_choice = static_cast<int64_t>(inbox_event.prompt_index) * num_samples_;
  const int64_t index = first_choice + e.index;
  if (e.index < 0 || e.index >= num_samples_ || choices_[index].finish_reason) return;  // late, after a cancel
  ChoiceOutput& choice = choices_[index];
  if (!e.prompt_logprobs.empty()) prompt_logprobs_[inbox_event.prompt_index] = e.prompt_logprobs;
  if (e.kind == RequestEvent::Kind::kToken) {
    ChoiceDelta& d = new_delta(deltas, index, choice);
    choice.text += e.text;
    d.delta.text += e.text;
    TokenOutput token{e.token, e.logprob, e.top_logprobs};
    choice.tokens.push_back(token);
    d.delta.tokens.push_back(std::move(token));
    usage_.completion_tokens++;
    state_.metrics().generation_tokens().inc();
    auto& last = last_token_time_[index];
    if (!produced_output_) state_.metrics().time_to_first_token().observe(seconds_between(arrival_, e.time));
    if (last) state_.metrics().inter_token_latency().observe(seconds_between(*last, e.time));
    last = e.time;
    produced_output_ = true;
    return;
  }
  if (e.finish_reason == FinishReason::kError && !error_) {
    error_ = e.error;
    error_rejected_ = e.rejected;
  }
  if (e.index == 0) usage_.cached_prompt_tokens += e.num_cached_prompt_tokens;
  // A request rejected at admission ends all of its samples with one event.
  const bool rejected = e.finish_reason == FinishReason::kError && e.rejected;
  const int64_t end = rejected ? first_choice + num_samples_ : index + 1;
  for (int64_t i = rejected ? first_choice : index; i < end; ++i) {
    ChoiceDelta& d = new_delta(deltas, i, choices_[i]);
    choices_[i].text += e.text;
    d.delta.text += e.text;
    finish_choice(i, e.finish_reason, e.time);
    d.delta.finish_reason = e.finish_reason;
    choices_[i].stop_string = d.delta.stop_string = e.stop_string;
  }
}

boost::asio::awaitable<std::optional<std::vector<ChoiceDelta>>> Generation::next(HttpExchange& exchange) {
  std::vector<InboxEvent> events = inbox_->take();
  while (events.empty()) {
    if (!co_await exchange.wait(*inbox_)) {
      cancel();
      co_return std::nullopt;
    }
    events = inbox_->take();
  }
  std::vector<ChoiceDelta> deltas;
  for (const InboxEvent& e : events) apply(e, deltas);
  co_return deltas;
}

}  // namespace brisk::server
