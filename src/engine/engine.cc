// The engine: a request queue fed by any thread, and one engine thread that owns the model, the
// KV cache and every request's state. The thread keeps one step ahead of the device: it schedules
// and queues step N+1 (whose decodes take step N's sampled tokens on the device), then waits for
// step N's tokens and runs the stop checks and streams while the device computes step N+1. A
// sequence that stops at step N has therefore computed one token more; that token is dropped.
#include "brisk/engine.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/parallel.h"
#include "engine/model_group.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/request_checks.h"
#include "engine/scheduler.h"
#include "engine/step_profiler.h"
#include "tokenizer/tokenizer.h"

namespace brisk {

namespace {

RequestEvent finished_event(FinishReason reason, std::string error, int64_t num_prompt_tokens = 0,
                            int64_t num_cached_prompt_tokens = 0, int32_t index = 0) {
  RequestEvent e;
  e.kind = RequestEvent::Kind::kFinished;
  e.index = index;
  e.finish_reason = reason;
  e.error = std::move(error);
  e.num_prompt_tokens = num_prompt_tokens;
  e.num_cached_prompt_tokens = num_cached_prompt_tokens;
  return e;
}

class EngineImpl final : public Engine {
 public:
  explicit EngineImpl(const EngineOptions& options);
  ~EngineImpl() override { shutdown(); }

  std::shared_ptr<RequestStream> submit(GenerationRequest request) override;
  void cancel(uint64_t request_id) override;
  EngineStats stats() const override;
  StepProfile step_profile() const override;
  std::vector<OpProfileEntry> op_profile() const override;
  int64_t vocab_size() const override { return model_->config().vocab_size; }
  bool has_tokenizer() const override { return tokenizer_ != nullptr; }
  int64_t max_model_len() const override { return model_->max_model_len(); }
  std::vector<int32_t> eos_token_ids() const override { return eos_ids_; }
  uint64_t weight_bytes_per_step() const override { return model_->weight_bytes_per_step(); }
  uint64_t kv_bytes_per_token() const override {
    return KvCache::bytes_per_block(model_->shard_config(), model_->activation_dtype(), 1, kv_quant_);
  }
  void shutdown() override;

 private:
  // A launched step and what the profiler knows of it.
  struct InFlightStep {
    LaunchedStep step;
    StepShape shape;
    // Some row samples under a grammar: the step is sampled once the step before it has been
    // collected (the masks need its tokens), while the device runs its forward.
    bool needs_masks = false;
  };

  void loop();
  // Schedules and queues the next step; nullopt when nothing can run (or it failed to queue).
  std::optional<InFlightStep> launch_step(bool overlapped);
  // Queues a launched step's sampling, with the token masks of its grammar rows.
  void sample_step(InFlightStep& step);
  // Waits for a step's tokens and hands them to their requests.
  void collect_step(InFlightStep& step);
  void refresh_stats();
  // Takes the submitted requests (and the cancels, see there) and admits them.
  void admit_new_requests();
  void apply_cancellations();
  // forced: appended by jump-forward rather than sampled.
  void append_token(Request& r, SampledToken sampled, bool forced = false);
  // With options.enable_jump_forward: appends the tokens of the text r's grammar forces next and
  // discards r's samples in flight (drawn before them).
  void jump_forward(Request& r);
  // Moves r's scored prompt onto `event` once it is complete (sample 0's first event).
  void take_prompt_logprobs(Request& r, RequestEvent& event);
  // Samples 1..n-1 of r's request start once r (sample 0) has computed the prompt.
  void start_waiting_samples(Request& r);
  void finish(Request& r, FinishReason reason, std::string error = {});

  EngineOptions options_;
  ModelGroup group_;
  LlamaModel* model_ = nullptr;  // rank 0's
  std::vector<int32_t> eos_ids_;
  std::unique_ptr<Tokenizer> tokenizer_;  // null when the folder has none
  int64_t num_blocks_ = 0;
  RequestLimits limits_;  // what admission checks requests against
  KvQuant kv_quant_ = KvQuant::kNone;
  std::unique_ptr<PrefixCache> prefix_cache_;
  std::unique_ptr<BlockPool> pool_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ModelRunner> runner_;

  // Shared with client threads.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Request>> incoming_;
  std::vector<uint64_t> cancels_;
  bool stop_ = false;
  EngineStats stats_;
  std::atomic<uint64_t> next_id_{1};
  // EngineStats' token counts, kept apart from stats_ so that appending a token takes no lock.
  std::atomic<int64_t> num_generated_tokens_{0}, num_forced_tokens_{0};

  // Engine thread only. Keyed by request id; the n samples of a request share it.
  std::unordered_multimap<uint64_t, std::unique_ptr<Request>> requests_;
  std::vector<uint64_t> pending_cancels_;  // taken from cancels_ together with incoming_
  std::optional<InFlightStep> in_flight_;
  // Finished requests stay alive while a launched step may still name them: those finished since
  // the latest launch, and those finished before it (named at most by the step before it).
  std::vector<std::unique_ptr<Request>> retired_, retired_before_launch_;
  int64_t num_penalized_ = 0;  // live requests with penalties (their steps cannot overlap)
  std::unique_ptr<StepProfiler> profiler_;  // null unless options.profile_steps (or profile_ops)
  OpTimingBackend* op_timer_ = nullptr;     // rank 0's backend itself with options.profile_ops
  std::mt19937_64 seed_rng_{std::random_device{}()};
  std::thread thread_;
};

EngineImpl::EngineImpl(const EngineOptions& options) : options_(options) {
  BRISK_CHECK(options.block_size > 0, "block_size must be positive, got {}", options.block_size);
  group_ = ModelGroup::load(options);
  model_ = &group_.model();
  op_timer_ = group_.op_timer;
  const auto& gen_eos = model_->generation_config().eos_token_ids;
  const auto& eos = gen_eos.empty() ? model_->config().eos_token_ids : gen_eos;
  eos_ids_.assign(eos.begin(), eos.end());
  try {
    tokenizer_ = Tokenizer::from_folder(options.model_dir);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
  }

  kv_quant_ = parse_kv_cache_dtype(options.kv_cache_dtype);
  num_blocks_ = group_.kv_blocks(options, kv_quant_);
  stats_.num_blocks = num_blocks_;
  stats_.kv_capacity_tokens = num_blocks_ * options.block_size;
  stats_.block_size = options.block_size;
  limits_ = {model_->config().vocab_size, options.max_num_seqs, model_->max_model_len(), options.block_size,
             num_blocks_, tokenizer_ != nullptr};
  prefix_cache_ = std::make_unique<PrefixCache>(options.block_size, options.enable_prefix_caching);
  pool_ = std::make_unique<BlockPool>(num_blocks_, options.block_size, *prefix_cache_);
  scheduler_ = std::make_unique<Scheduler>(*pool_, options.max_num_seqs, options.max_num_batched_tokens);
  runner_ = std::make_unique<ModelRunner>(group_.ranks(), num_blocks_, options.block_size, !options.enforce_eager,
                                          options.max_num_seqs, kv_quant_);
  if (options.profile_steps || options.profile_ops) profiler_ = std::make_unique<StepProfiler>(model_->config());
  thread_ = std::thread([this] { loop(); });
}

std::shared_ptr<RequestStream> EngineImpl::submit(GenerationRequest request) {
  const uint64_t id = next_id_++;
  auto stream = std::make_shared<EventQueue>(id);
  auto r = std::make_unique<Request>(id, std::move(request), *pool_, stream);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) {
      stream->push(finished_event(FinishReason::kCancelled, "the engine is shut down"));
      return stream;
    }
    incoming_.push_back(std::move(r));
  }
  wake_.notify_all();
  return stream;
}

void EngineImpl::cancel(uint64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancels_.push_back(request_id);
  }
  wake_.notify_all();
}

EngineStats EngineImpl::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineStats stats = stats_;
  stats.num_generated_tokens = num_generated_tokens_.load(std::memory_order_relaxed);
  stats.num_forced_tokens = num_forced_tokens_.load(std::memory_order_relaxed);
  return stats;
}

StepProfile EngineImpl::step_profile() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return profiler_ ? profiler_->profile() : StepProfile{};
}

std::vector<OpProfileEntry> EngineImpl::op_profile() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OpProfileEntry> out;
  if (op_timer_ != nullptr)
    for (const OpTime& t : op_timer_->totals()) out.push_back({t.label, t.op, t.num_calls, t.device_s});
  return out;
}

void EngineImpl::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineImpl::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto ready = [&] { return stop_ || !incoming_.empty() || !cancels_.empty() || scheduler_->has_work(); };
      if (!in_flight_ && !ready()) {
        if (profiler_) profiler_->went_idle();
        wake_.wait(lock, ready);
      }
      if (stop_) break;
    }
    admit_new_requests();
    apply_cancellations();
    if (in_flight_ && num_penalized_ > 0) {  // penalties read every output token on the host
      collect_step(*in_flight_);
      in_flight_.reset();
      if (profiler_) profiler_->synchronized();
    }
    std::optional<InFlightStep> next;
    if (scheduler_->has_work()) next = launch_step(in_flight_.has_value());
    if (in_flight_) collect_step(*in_flight_);  // while the device runs `next`
    if (next && next->needs_masks) sample_step(*next);
    in_flight_ = std::move(next);
    retired_before_launch_.clear();
    if (!in_flight_) retired_.clear();
    refresh_stats();
  }
  // Shutdown: the step in flight is collected (its memory must not be reused under it), then
  // everything still running ends cancelled.
  if (in_flight_) collect_step(*in_flight_);
  in_flight_.reset();
  admit_new_requests();
  while (!requests_.empty()) finish(*requests_.begin()->second, FinishReason::kCancelled, "the engine shut down");
}

void EngineImpl::admit_new_requests() {
  std::vector<std::unique_ptr<Request>> incoming;
  {
    // Cancels are taken in the same critical section: a cancel that follows its submit is then
    // never applied before the request is admitted (it would find nothing and be lost).
    std::lock_guard<std::mutex> lock(mutex_);
    incoming.swap(incoming_);
    pending_cancels_.insert(pending_cancels_.end(), cancels_.begin(), cancels_.end());
    cancels_.clear();
  }
  for (auto& r : incoming) {
    if (std::string error = check_request(*r, limits_); !error.empty()) {
      RequestEvent event = finished_event(FinishReason::kError, error, static_cast<int64_t>(r->prompt.size()));
      event.rejected = true;
      r->stream->push(std::move(event));
      continue;
    }
    const SamplingParams& s = r->params;
    SamplingRow row;
    row.temperature = s.temperature;
    row.top_k = s.top_k;
    row.top_p = s.top_p;
    row.min_p = s.min_p;
    row.repetition_penalty = s.repetition_penalty;
    row.frequency_penalty = s.frequency_penalty;
    row.presence_penalty = s.presence_penalty;
    row.seed = s.seed ? *s.seed : seed_rng_();
    r->stream->expect_samples(s.n);
    auto prepare = [&](Request& q, int32_t index) {
      q.index = index;
      q.row = row;
      q.row.seed = row.seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;  // distinct draws
      q.tokens = q.prompt;
      q.token_limit = std::min<int64_t>(static_cast<int64_t>(q.prompt.size()) + s.max_tokens, model_->max_model_len());
      if (tokenizer_)
        q.text = std::make_unique<StopStringMatcher>(*tokenizer_, s.skip_special_tokens, s.stop, s.include_stop_str_in_output);
      if (s.grammar) q.matcher = std::make_unique<grammar::GrammarMatcher>(s.grammar);
    };
    prepare(*r, 0);
    if (s.prompt_logprobs) {  // entry 0 has nothing before it; collect_step appends the others
      r->prompt_logprobs.reserve(r->prompt.size());
      r->prompt_logprobs.push_back({r->prompt[0], 0.0f, 0, {}});
    }
    for (int32_t i = 1; i < s.n; ++i) {
      auto sample = std::make_unique<Request>(r->id, GenerationRequest{r->prompt, s}, *pool_, r->stream);
      prepare(*sample, i);
      r->waiting_samples.push_back(std::move(sample));
    }
    if (row.has_penalties()) num_penalized_ += s.n;
    scheduler_->add(r.get());
    Request& admitted = *r;
    const uint64_t id = r->id;
    requests_.emplace(id, std::move(r));
    // Forced text at the start is computed with the prompt. Samples 1..n-1 start once sample 0
    // has a token, so with n > 1 sample 0 waits for its first draw (the others then share the
    // computed prompt through the prefix cache).
    if (s.n == 1) jump_forward(admitted);
  }
}

void EngineImpl::apply_cancellations() {
  std::vector<uint64_t> cancels;
  cancels.swap(pending_cancels_);
  for (uint64_t id : cancels) {
    for (auto it = requests_.find(id); it != requests_.end(); it = requests_.find(id))
      finish(*it->second, FinishReason::kCancelled);
  }
}

std::optional<EngineImpl::InFlightStep> EngineImpl::launch_step(bool overlapped) {
  const auto begin = std::chrono::steady_clock::now();
  BatchPlan plan = scheduler_->schedule();
  if (plan.empty()) return std::nullopt;
  InFlightStep f;
  if (profiler_) f.shape = profiler_->shape(plan);
  if (op_timer_ != nullptr) op_timer_->set_label(f.shape.kind_name);
  try {
    f.step = runner_->launch(plan, profiler_ != nullptr);
  } catch (const std::exception& e) {
    // A failed step cannot be attributed to one request: end the batch's requests with the error.
    spdlog::error("step failed: {}", e.what());
    for (const auto& c : plan.chunks) finish(*c.request, FinishReason::kError, fmt::format("step failed: {}", e.what()));
    return std::nullopt;
  }
  for (const Request* r : f.step.sampling) f.needs_masks = f.needs_masks || r->matcher != nullptr;
  if (!f.needs_masks) sample_step(f);
  int64_t prompt_tokens = 0;
  for (const auto& c : plan.chunks) {
    Request& r = *c.request;
    // A decode computes the one token its previous step sampled; the rest is prompt (or the
    // recomputation of a preempted sequence, or forced tokens).
    const bool decode = c.num_new_tokens == 1 && r.blocks.num_computed() >= static_cast<int64_t>(r.prompt.size());
    if (!decode) prompt_tokens += c.num_new_tokens;
    r.blocks.commit_computed(r.tokens, c.num_new_tokens);  // the device computes in queue order
  }
  for (size_t row = 0; row < f.step.sampling.size(); ++row) {
    Request& r = *f.step.sampling[row];
    r.num_pending++;
    r.pending_row = static_cast<int32_t>(row);
  }
  retired_before_launch_ = std::move(retired_);  // named at most by the step in flight before this one
  retired_.clear();
  if (profiler_) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    std::lock_guard<std::mutex> lock(mutex_);
    profiler_->launched(f.shape, seconds, overlapped);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.num_steps++;
  stats_.num_graph_steps += f.step.replayed ? 1 : 0;
  stats_.num_prompt_tokens_computed += prompt_tokens;
  return f;
}

void EngineImpl::sample_step(InFlightStep& f) {
  TokenMasks masks;
  try {
    if (f.needs_masks) {
      const std::vector<Request*>& sampling = f.step.sampling;
      for (size_t row = 0; row < sampling.size(); ++row)
        if (sampling[row]->matcher && !sampling[row]->finished && sampling[row]->num_discarded == 0)
          masks.rows.push_back(static_cast<int32_t>(row));  // a discarded row's draw is dropped
      const int64_t num_words = runner_->mask_words();
      masks.words.assign(masks.rows.size() * num_words, 0u);
      std::vector<uint64_t> hashes(masks.rows.size());
      // Matchers are per sample; the compiled grammars they share are thread-safe.
      parallel_for(static_cast<int64_t>(masks.rows.size()), 4, [&](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) {
          grammar::GrammarMatcher& m = *sampling[masks.rows[j]]->matcher;
          const std::span<uint32_t> row(masks.words.data() + j * num_words, static_cast<size_t>(num_words));
          m.fill_next_token_bitmask(row.first(static_cast<size_t>(m.bitmask_words())));
          hashes[j] = TokenMasks::hash(row);
        }
      });
      masks.share_equal(num_words, hashes);
    }
    runner_->sample(f.step, masks);
  } catch (const std::exception& e) {
    // The step's forward is queued: it stays in flight (collect drops its rows' tokens).
    spdlog::error("step failed: {}", e.what());
    for (Request* r : f.step.sampling)
      if (!r->finished) finish(*r, FinishReason::kError, fmt::format("step failed: {}", e.what()));
  }
}

void EngineImpl::collect_step(InFlightStep& f) {
  const auto begin = std::chrono::steady_clock::now();
  std::vector<SampledToken> sampled;
  try {
    sampled = runner_->collect(f.step);
  } catch (const std::exception& e) {
    spdlog::error("step failed: {}", e.what());
    for (Request* r : f.step.sampling) {
      r->arrived();
      if (!r->finished) finish(*r, FinishReason::kError, fmt::format("step failed: {}", e.what()));
    }
    return;
  }
  const auto collected = std::chrono::steady_clock::now();
  if (op_timer_ != nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    op_timer_->flush();  // waits for the next step's ops too: op timing runs without overlap
  }
  for (SampledToken& s : sampled) {
    Request& r = *s.request;
    if (!r.arrived()) continue;  // drawn before forced tokens were appended: dropped
    if (r.finished) continue;  // it stopped at an earlier token, or was cancelled: the token is dropped
    if (r.params.max_tokens == 0) {  // it only scored its prompt: the token is dropped
      finish(r, FinishReason::kLength);
      continue;
    }
    append_token(r, std::move(s));
    if (!r.finished) jump_forward(r);
    if (!r.finished) r.blocks.commit_computed(r.tokens, 0);  // a block whose last token just arrived
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (profiler_) {
    auto seconds = [](auto from, auto to) { return std::chrono::duration<double>(to - from).count(); };
    profiler_->collected(f.shape, f.step.start.get(), std::move(f.step.done), seconds(begin, collected));
    profiler_->processed(seconds(collected, std::chrono::steady_clock::now()));
  }
}

void EngineImpl::refresh_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.num_running = scheduler_->num_running();
  stats_.num_waiting = scheduler_->num_waiting();
  stats_.num_blocks_in_use = pool_->num_in_use();
  stats_.num_blocks_cached = pool_->num_cached();
  stats_.num_blocks_free = pool_->num_free();
  stats_.num_prefix_hit_tokens = prefix_cache_->stats().num_hit_tokens;
  stats_.num_prefix_queried_tokens = prefix_cache_->stats().num_queried_tokens;
  stats_.num_preemptions = scheduler_->num_preemptions();
}

void EngineImpl::append_token(Request& r, SampledToken sampled, bool forced) {
  const int32_t token = sampled.token;
  if (r.matcher && !r.matcher->accept_token(token))  // the grammar allowed no token at all
    return finish(r, FinishReason::kError, fmt::format("structured output: the grammar allows no token after {} "
                                                       "generated tokens", r.num_generated));
  r.tokens.push_back(token);
  r.num_generated++;
  r.num_forced += forced ? 1 : 0;
  num_generated_tokens_.fetch_add(1, std::memory_order_relaxed);  // counted before a client sees the token
  if (forced) num_forced_tokens_.fetch_add(1, std::memory_order_relaxed);
  const SamplingParams& s = r.params;
  // An eos or stop token ends the request; its text is not part of the output (as in vLLM),
  // which matters when special tokens are kept. A grammar ends at the stop token it accepts.
  const bool stop_token =
      (r.matcher && r.matcher->is_terminated()) ||
      (r.num_generated >= s.min_tokens &&
       ((!s.ignore_eos && std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end()) ||
        std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(), token) != s.stop_token_ids.end()));
  StopStringMatcher::Step text;
  if (r.text && !stop_token) text = r.text->add(token);
  RequestEvent event;
  event.index = r.index;
  event.token = token;
  event.logprob = sampled.logprob;
  event.top_logprobs = std::move(sampled.top_logprobs);
  event.text = std::move(text.text);
  take_prompt_logprobs(r, event);
  r.stream->push(std::move(event));
  if (r.num_generated == 1) start_waiting_samples(r);
  if (text.stopped || stop_token) return finish(r, FinishReason::kStop);
  if (static_cast<int64_t>(r.tokens.size()) >= r.token_limit) finish(r, FinishReason::kLength);
}

void EngineImpl::jump_forward(Request& r) {
  const SamplingParams& s = r.params;
  // Forced tokens are not scored, and a scored prompt is delivered on the first token's event.
  if (!options_.enable_jump_forward || !r.matcher || !tokenizer_ || s.logprobs || s.top_logprobs > 0 ||
      s.prompt_logprobs)
    return;
  const std::string forced = r.matcher->find_jump_forward_string();
  if (forced.size() < 3) return;  // fewer than three tokens: nothing to gain (see below)
  std::vector<int32_t> ids = tokenizer_->encode(forced, false);
  ids.pop_back();  // left to the model, which may join the forced text's end to what follows
  // Tokens whose bytes continue the forced text: a tokenizer may add a prefix space or find a
  // special token in it, and the rest is then left to sampling.
  const grammar::TokenVocab& vocab = s.grammar->vocab();
  const auto room = static_cast<size_t>(r.token_limit - static_cast<int64_t>(r.tokens.size()));
  size_t n = 0;
  for (size_t num_bytes = 0; n < ids.size() && n < room; ++n) {
    const int32_t id = ids[n];
    if (id < 0 || id >= vocab.vocab_size() || vocab.is_special(id) || vocab.is_stop(id)) break;
    const std::string& bytes = vocab.token_bytes(id);
    if (bytes.empty() || forced.compare(num_bytes, bytes.size(), bytes) != 0) break;
    num_bytes += bytes.size();
  }
  // The sample in flight is discarded and the request skips a step: one forced token gains nothing.
  if (n < 2) return;
  r.num_discarded += r.num_pending;
  r.num_pending = 0;
  for (size_t i = 0; i < n && !r.finished; ++i) append_token(r, SampledToken{&r, ids[i], 0.0f, {}}, true);
}

void EngineImpl::take_prompt_logprobs(Request& r, RequestEvent& event) {
  if (r.prompt_logprobs.size() != r.prompt.size()) return;  // not asked for, not complete, or delivered
  event.prompt_logprobs = std::move(r.prompt_logprobs);
  r.prompt_logprobs.clear();
}

void EngineImpl::start_waiting_samples(Request& r) {
  // The prompt's full blocks are committed to the prefix cache by now (step() commits before
  // appending), so each sample computes at most the prompt's last partial block.
  std::vector<Request*> started;
  for (auto& sample : r.waiting_samples) {
    scheduler_->add(sample.get());
    started.push_back(sample.get());
    const uint64_t id = sample->id;
    requests_.emplace(id, std::move(sample));
  }
  r.waiting_samples.clear();
  for (Request* sample : started) jump_forward(*sample);
}

void EngineImpl::finish(Request& r, FinishReason reason, std::string error) {
  scheduler_->remove(&r);
  r.finished = true;
  if (r.row.has_penalties()) num_penalized_ -= 1 + static_cast<int64_t>(r.waiting_samples.size());
  refresh_stats();  // a client that saw the terminal event sees the blocks freed
  const auto num_prompt_tokens = static_cast<int64_t>(r.prompt.size());
  RequestEvent event = finished_event(reason, error, num_prompt_tokens, r.num_cached_prompt_tokens, r.index);
  if (r.text) {
    event.text = r.text->finish();
    event.stop_string = r.text->matched();
  }
  take_prompt_logprobs(r, event);
  r.stream->push(std::move(event));
  // Samples that never started end the way their request did before any token (after sample 0,
  // whose event may carry the scored prompt they share).
  for (auto& sample : r.waiting_samples)
    r.stream->push(finished_event(reason, error, num_prompt_tokens, 0, sample->index));
  auto [begin, end] = requests_.equal_range(r.id);
  for (auto it = begin; it != end; ++it) {
    if (it->second.get() == &r) {
      retired_.push_back(std::move(it->second));  // a launched step may still name it
      requests_.erase(it);
      return;
    }
  }
}

}  // namespace

std::unique_ptr<Engine> Engine::create(const EngineOptions& options) { return std::make_unique<EngineImpl>(options); }

}  // namespace brisk
