// The engine on the CPU backend: batching, chunked prefill, prefix caching, preemption,
// cancellation and errors never change a greedy output, and every request ends exactly once.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace brisk {
namespace {

const char* kModel = "llama-gqa4-hd64-tied-llama3rope-bf16";

struct Case {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;  // HF goldens
};

std::vector<Case> golden_cases() {
  auto json = nlohmann::json::parse(testing::read_file(testing::test_data_dir() / "models" / kModel / "goldens.json"));
  std::vector<Case> cases;
  for (size_t i = 0; i < json["prompts"].size(); ++i)
    cases.push_back({json["prompts"][i].get<std::vector<int32_t>>(), json["greedy"][i].get<std::vector<int32_t>>()});
  return cases;
}

EngineOptions options_with(int64_t num_blocks, int64_t token_budget, bool prefix_caching, int block_size = 4) {
  EngineOptions o;
  o.profile_steps = true;
  o.model_dir = (testing::test_data_dir() / "models" / kModel).string();
  o.num_kv_blocks = num_blocks;
  o.max_num_batched_tokens = token_budget;
  o.enable_prefix_caching = prefix_caching;
  o.block_size = block_size;
  return o;
}

GenerationRequest greedy(const std::vector<int32_t>& prompt, int64_t max_tokens) {
  GenerationRequest r{prompt, {}};
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

// Many requests (each golden prompt several times, with shared prefixes) submitted from several
// threads at random moments must all produce the golden tokens. Returns the engine's stats.
EngineStats expect_goldens_under_load(const EngineOptions& options, uint32_t seed) {
  auto engine = Engine::create(options);
  auto cases = golden_cases();
  std::vector<std::pair<size_t, std::shared_ptr<RequestStream>>> streams;
  std::mutex mutex;
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(seed + c);
      for (int i = 0; i < 4; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
        size_t which = rng() % cases.size();
        auto stream = engine->submit(greedy(cases[which].prompt, static_cast<int64_t>(cases[which].greedy.size())));
        std::lock_guard<std::mutex> lock(mutex);
        streams.emplace_back(which, stream);
      }
    });
  }
  for (auto& t : clients) t.join();
  for (auto& [which, stream] : streams) {
    auto result = testing::collect(*stream);
    EXPECT_EQ(result.finish_reason, FinishReason::kLength) << result.error;
    EXPECT_EQ(result.tokens, cases[which].greedy) << "case " << which;
  }
  auto stats = engine->stats();
  EXPECT_EQ(stats.num_blocks_in_use, 0);
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0);
  return stats;
}

TEST(Engine, GoldensWithBatchingAndPrefixCache) { expect_goldens_under_load(options_with(256, 2048, true), 1); }
TEST(Engine, GoldensWithoutPrefixCache) { expect_goldens_under_load(options_with(256, 2048, false), 2); }
TEST(Engine, GoldensWithChunkedPrefill) {
  for (int64_t budget : {3, 7, 16}) expect_goldens_under_load(options_with(256, budget, true), 3 + budget);
}
TEST(Engine, GoldensWithPreemptionInATinyCache) {
  // 16 blocks of 4 tokens: one 29+32 token request needs all of them, so requests preempt
  // each other constantly.
  auto options = options_with(16, 64, true);
  expect_goldens_under_load(options, 4);
  auto engine = Engine::create(options);
  auto cases = golden_cases();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 6; ++i) streams.push_back(engine->submit(greedy(cases[i % 3].prompt, 32)));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(testing::collect(*streams[i]).tokens, cases[i % 3].greedy);
  EXPECT_GT(engine->stats().num_preemptions, 0);
  // Sequences were preempted while a token of theirs was in flight: the loop ran ahead.
  EXPECT_GT(engine->step_profile().num_overlapped_steps, 0);
}

// The CPU reference with recorded graphs (backend "cpu-graphs"): pure decode steps replay the
// decode graphs of their batch bucket (1, 2, 4, 8, 16; padding rows), with the sampled tokens fed
// into the graphs' inputs, and give the goldens too, also when sequences are preempted.
TEST(Engine, GoldensThroughRecordedDecodeGraphs) {
  for (int64_t num_blocks : {256, 16}) {
    EngineOptions options = options_with(num_blocks, 64, true);
    options.backend = "cpu-graphs";
    options.max_num_seqs = 16;
    const EngineStats stats = expect_goldens_under_load(options, 11);
    EXPECT_GT(stats.num_graph_steps, 0);
    EXPECT_LT(stats.num_graph_steps, stats.num_steps);  // prompt chunks run op by op
  }
  EXPECT_EQ(expect_goldens_under_load(options_with(256, 64, true), 11).num_graph_steps, 0);
}

TEST(Engine, PrefixCacheSkipsWorkAndChangesNothing) {
  auto engine = Engine::create(options_with(256, 2048, true));
  auto c = golden_cases()[2];  // 29 tokens: 7 full blocks of 4
  auto first = testing::run_request(*engine, greedy(c.prompt, 32));
  int64_t computed_after_first = engine->stats().num_prompt_tokens_computed;
  auto second = testing::run_request(*engine, greedy(c.prompt, 32));
  EXPECT_EQ(first.tokens, c.greedy);
  EXPECT_EQ(second.tokens, c.greedy);
  EXPECT_EQ(first.num_cached_prompt_tokens, 0);
  EXPECT_EQ(second.num_cached_prompt_tokens, 28);
  EXPECT_EQ(engine->stats().num_prompt_tokens_computed - computed_after_first, 1);
  EXPECT_EQ(engine->stats().num_prefix_hit_tokens, 28);
}

TEST(Engine, SeededSamplingIsReproducibleAloneOrBatched) {
  auto engine = Engine::create(options_with(256, 2048, true));
  auto sampled = [](std::vector<int32_t> prompt, uint64_t seed) {
    GenerationRequest r{std::move(prompt), {}};
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.9f;
    r.sampling.seed = seed;
    r.sampling.max_tokens = 20;
    r.sampling.ignore_eos = true;
    return r;
  };
  auto cases = golden_cases();
  auto alone = testing::run_request(*engine, sampled(cases[0].prompt, 42));
  std::vector<std::shared_ptr<RequestStream>> batch;
  // Request 3 repeats the lone request (prompt 0, seed 42) inside a batch of others.
  for (int i = 0; i < 5; ++i) batch.push_back(engine->submit(sampled(cases[i % 3].prompt, i == 3 ? 42 : 7 + i)));
  std::vector<testing::RequestResult> results;
  for (auto& s : batch) results.push_back(testing::collect(*s));
  EXPECT_EQ(results[3].tokens, alone.tokens);
  EXPECT_EQ(results[3].logprobs, alone.logprobs);
  EXPECT_NE(results[0].tokens, alone.tokens);  // another seed, same prompt: another draw
  auto again = testing::run_request(*engine, sampled(cases[0].prompt, 42));
  EXPECT_EQ(again.tokens, alone.tokens);
  EXPECT_EQ(again.logprobs, alone.logprobs);
}

TEST(Engine, BadRequestsFailAloneWithClearErrors) {
  auto engine = Engine::create(options_with(16, 2048, true));
  auto good = engine->submit(greedy(golden_cases()[0].prompt, 32));
  auto too_long = testing::run_request(*engine, greedy(std::vector<int32_t>(250, 5), 10));
  EXPECT_EQ(too_long.finish_reason, FinishReason::kError);
  EXPECT_NE(too_long.error.find("exceeds the model's context length of 256"), std::string::npos) << too_long.error;
  auto too_big = testing::run_request(*engine, greedy(std::vector<int32_t>(60, 5), 10));
  EXPECT_NE(too_big.error.find("the whole cache has 16"), std::string::npos) << too_big.error;
  auto empty = testing::run_request(*engine, greedy({}, 10));
  EXPECT_NE(empty.error.find("prompt is empty"), std::string::npos);
  auto bad_id = testing::run_request(*engine, greedy({1, 100000}, 10));
  EXPECT_NE(bad_id.error.find("outside the vocabulary"), std::string::npos);
  GenerationRequest bad_p = greedy({1, 2}, 4);
  bad_p.sampling.top_p = 1.5f;
  EXPECT_NE(testing::run_request(*engine, bad_p).error.find("top_p must be in (0, 1]"), std::string::npos);
  EXPECT_EQ(testing::collect(*good).tokens, golden_cases()[0].greedy);
}

// logit_bias: +100 on one token makes greedy decoding pick it every step, with a logprob near 0
// (reported of the biased distribution); -100 on the golden first token makes it pick another;
// a request biasing another token at the same time keeps its own output (biases are per row).
TEST(Engine, LogitBiasSteersOnlyItsRequest) {
  auto engine = Engine::create(options_with(256, 2048, true));
  auto c = golden_cases()[0];
  const int32_t favoured = c.greedy[0] == 7 ? 8 : 7;
  GenerationRequest pushed = greedy(c.prompt, 6);
  pushed.sampling.logit_bias = {{favoured, 100.0f}};
  pushed.sampling.logprobs = true;
  GenerationRequest banned = greedy(c.prompt, 6);
  banned.sampling.logit_bias = {{c.greedy[0], -100.0f}};
  auto pushed_stream = engine->submit(pushed);
  auto banned_stream = engine->submit(banned);
  auto plain_stream = engine->submit(greedy(c.prompt, 6));
  const auto pushed_out = testing::collect(*pushed_stream), banned_out = testing::collect(*banned_stream);
  EXPECT_EQ(pushed_out.tokens, std::vector<int32_t>(6, favoured));
  ASSERT_EQ(pushed_out.logprobs.size(), 6u);
  for (float lp : pushed_out.logprobs) EXPECT_GT(lp, -1e-3f);
  ASSERT_FALSE(banned_out.tokens.empty());
  EXPECT_NE(banned_out.tokens[0], c.greedy[0]);
  EXPECT_EQ(testing::collect(*plain_stream).tokens, std::vector<int32_t>(c.greedy.begin(), c.greedy.begin() + 6));

  GenerationRequest bad = greedy(c.prompt, 4);
  bad.sampling.logit_bias = {{100000, 1.0f}};
  EXPECT_NE(testing::run_request(*engine, bad).error.find("logit_bias token 100000 is outside the vocabulary"),
            std::string::npos);
  bad.sampling.logit_bias = {{3, 1.0f}, {3, 2.0f}};
  EXPECT_NE(testing::run_request(*engine, bad).error.find("logit_bias names token 3 twice"), std::string::npos);
}

TEST(Engine, StopTokensMinTokensAndEos) {
  auto engine = Engine::create(options_with(256, 2048, true));
  auto c = golden_cases()[0];
  GenerationRequest r = greedy(c.prompt, 32);
  r.sampling.stop_token_ids = {c.greedy[5]};
  auto stopped = testing::run_request(*engine, r);
  size_t first = std::find(c.greedy.begin(), c.greedy.end(), c.greedy[5]) - c.greedy.begin();
  EXPECT_EQ(stopped.finish_reason, FinishReason::kStop);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(c.greedy.begin(), c.greedy.begin() + first + 1));
  r.sampling.min_tokens = static_cast<int64_t>(first) + 2;
  auto later = testing::run_request(*engine, r);
  EXPECT_GE(later.tokens.size(), first + 2);
  EXPECT_EQ(engine->eos_token_ids(), std::vector<int32_t>{2});
}

TEST(Engine, CancellationAtAnyPointFreesEverything) {
  auto engine = Engine::create(options_with(64, 8, true));
  auto cases = golden_cases();
  std::mt19937 rng(5);
  for (int round = 0; round < 10; ++round) {
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i = 0; i < 4; ++i) streams.push_back(engine->submit(greedy(cases[i % 3].prompt, 32)));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 5000));
    engine->cancel(streams[round % 4]->id());
    for (size_t i = 0; i < streams.size(); ++i) {
      auto result = testing::collect(*streams[i]);
      if (static_cast<int>(i) == round % 4) {
        EXPECT_TRUE(result.finish_reason == FinishReason::kCancelled || result.finish_reason == FinishReason::kLength);
      } else {
        EXPECT_EQ(result.tokens, cases[i % 3].greedy);
      }
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
  // The cancels landed while steps ran ahead of their collection (tokens of cancelled requests in
  // flight are dropped, their blocks freed before the step that wrote them was collected).
  EXPECT_GT(engine->step_profile().num_overlapped_steps, 0);
}

TEST(Engine, ShutdownCancelsInFlightRequests) {
  auto engine = Engine::create(options_with(256, 4, true));
  auto stream = engine->submit(greedy(golden_cases()[2].prompt, 32));
  engine->shutdown();
  auto result = testing::collect(*stream);
  EXPECT_TRUE(result.finish_reason == FinishReason::kCancelled || result.finish_reason == FinishReason::kLength);
  EXPECT_EQ(testing::run_request(*engine, greedy({1, 2}, 2)).finish_reason, FinishReason::kCancelled);
}

TEST(Engine, ParallelSamplesShareThePromptBlocks) {
  auto engine = Engine::create(options_with(256, 2048, true));
  auto c = golden_cases()[2];  // 29 tokens: 7 full blocks of 4
  GenerationRequest r = greedy(c.prompt, 32);
  r.sampling.n = 4;
  auto stream = engine->submit(r);
  auto results = testing::collect_samples(*stream, 4);
  EXPECT_FALSE(stream->next(std::chrono::milliseconds(50)).has_value());  // nothing after the last end
  for (const auto& result : results) {
    EXPECT_EQ(result.tokens, c.greedy);
    EXPECT_EQ(result.finish_reason, FinishReason::kLength);
  }
  // Sample 0 computes the prompt; the others reuse its 7 full blocks and compute 1 token each.
  EXPECT_EQ(results[0].num_cached_prompt_tokens, 0);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(results[i].num_cached_prompt_tokens, 28);
  EXPECT_EQ(engine->stats().num_prompt_tokens_computed, 29 + 3);
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
}

TEST(Engine, SeededParallelSamplesDifferAndRepeat) {
  auto engine = Engine::create(options_with(256, 2048, true));
  GenerationRequest r = greedy(golden_cases()[0].prompt, 16);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 11;
  r.sampling.n = 3;
  auto first = testing::collect_samples(*engine->submit(r), 3);
  auto again = testing::collect_samples(*engine->submit(r), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first[i].tokens, again[i].tokens) << "sample " << i;
  EXPECT_NE(first[0].tokens, first[1].tokens);
  EXPECT_NE(first[1].tokens, first[2].tokens);
  // Sample 0 of n is the request with n = 1.
  r.sampling.n = 1;
  EXPECT_EQ(testing::run_request(*engine, r).tokens, first[0].tokens);
}

TEST(Engine, CancelEndsEverySampleIncludingWaitingOnes) {
  auto engine = Engine::create(options_with(256, 4, true));  // 4-token steps: the prompt takes 8
  GenerationRequest r = greedy(golden_cases()[2].prompt, 32);
  r.sampling.n = 3;
  auto stream = engine->submit(r);
  engine->cancel(stream->id());
  auto results = testing::collect_samples(*stream, 3);
  for (const auto& result : results)
    EXPECT_TRUE(result.finish_reason == FinishReason::kCancelled || result.finish_reason == FinishReason::kLength);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
  EXPECT_EQ(engine->stats().num_running, 0);
}

TEST(Engine, TopLogprobsRankTheRawDistribution) {
  auto engine = Engine::create(options_with(256, 2048, true));
  auto c = golden_cases()[0];
  GenerationRequest r = greedy(c.prompt, 8);
  r.sampling.top_logprobs = 5;
  auto result = testing::run_request(*engine, r);
  ASSERT_EQ(result.top_logprobs.size(), 8u);
  for (size_t t = 0; t < 8; ++t) {
    const auto& top = result.top_logprobs[t];
    ASSERT_EQ(top.size(), 5u);
    EXPECT_EQ(top[0].token, result.tokens[t]);  // greedy: the chosen token ranks first
    EXPECT_FLOAT_EQ(top[0].logprob, result.logprobs[t]);
    double mass = 0.0;
    for (size_t j = 0; j < top.size(); ++j) {
      if (j > 0) {
        EXPECT_LE(top[j].logprob, top[j - 1].logprob);
      }
      mass += std::exp(top[j].logprob);
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
  }
  r.sampling.top_logprobs = 0;
  EXPECT_TRUE(testing::run_request(*engine, r).top_logprobs[0].empty());
}

TEST(Engine, RejectsBadSampleCountsAndTopLogprobs) {
  auto engine = Engine::create(options_with(64, 2048, true));
  GenerationRequest r = greedy({1, 2, 3}, 4);
  r.sampling.n = 0;
  EXPECT_NE(testing::run_request(*engine, r).error.find("n must be in [1, max_num_seqs = 512], got 0"), std::string::npos);
  r.sampling.n = 1;
  r.sampling.top_logprobs = 21;
  EXPECT_NE(testing::run_request(*engine, r).error.find("top_logprobs must be in [0, 20], got 21"), std::string::npos);
}

TEST(Engine, RepetitionPenaltyReachesTheSampler) {
  // Penalty lists are only uploaded when a row has a penalty; a huge one must then keep greedy
  // decoding off every prompt and earlier output token.
  auto engine = Engine::create(options_with(256, 2048, true));
  auto c = golden_cases()[0];
  GenerationRequest r = greedy(c.prompt, 150);
  r.sampling.repetition_penalty = 1000.0f;
  auto result = testing::run_request(*engine, r);
  auto num_repeats = [&](const std::vector<int32_t>& tokens) {
    std::set<int32_t> seen(c.prompt.begin(), c.prompt.end());
    int repeats = 0;
    for (int32_t token : tokens) repeats += seen.insert(token).second ? 0 : 1;
    return repeats;
  };
  EXPECT_EQ(num_repeats(result.tokens), 0);
  EXPECT_GT(num_repeats(testing::run_request(*engine, greedy(c.prompt, 150)).tokens), 0);  // unpenalised
}

TEST(Engine, CancelRightAfterSubmitIsNeverLost) {
  // Submit and cancel back to back, many times: each request must end cancelled (or finish) at
  // once, never run to its 200-token length after the cancel.
  auto engine = Engine::create(options_with(256, 2048, true));
  for (int i = 0; i < 200; ++i) {
    auto stream = engine->submit(greedy({1, 2, 3}, 200));
    engine->cancel(stream->id());
    auto result = testing::collect(*stream);
    ASSERT_EQ(result.finish_reason, FinishReason::kCancelled) << "round " << i;
    EXPECT_LT(result.tokens.size(), 200u);
  }
}

TEST(Engine, AdmissionErrorsAreMarkedRejected) {
  auto engine = Engine::create(options_with(64, 2048, true));
  GenerationRequest r = greedy({1, 2, 3}, 4);
  r.sampling.n = 3;
  r.sampling.top_p = 0.0f;
  auto stream = engine->submit(r);
  auto event = stream->next(std::chrono::seconds(10));
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->kind, RequestEvent::Kind::kFinished);
  EXPECT_EQ(event->finish_reason, FinishReason::kError);
  EXPECT_TRUE(event->rejected);
  EXPECT_FALSE(stream->next(std::chrono::milliseconds(20)).has_value());  // one event ends all samples
}

TEST(Engine, StepsOverlapAndAStopDropsTheTokenComputedPastIt) {
  // Each step is queued before the previous one's token is known, so the request computes one
  // token past its stop token; that token is never emitted, counted or kept.
  auto engine = Engine::create(options_with(256, 2048, true));
  auto c = golden_cases()[0];
  GenerationRequest r = greedy(c.prompt, 32);
  const size_t stop_at = std::find(c.greedy.begin(), c.greedy.end(), c.greedy[5]) - c.greedy.begin();
  r.sampling.stop_token_ids = {c.greedy[5]};
  auto result = testing::run_request(*engine, r);
  EXPECT_EQ(result.finish_reason, FinishReason::kStop);
  EXPECT_EQ(result.tokens, std::vector<int32_t>(c.greedy.begin(), c.greedy.begin() + stop_at + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the dropped step's collection
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.num_generated_tokens, static_cast<int64_t>(stop_at + 1));
  EXPECT_EQ(stats.num_blocks_in_use, 0);
  const StepProfile profile = engine->step_profile();
  // The prefill and every decode but the first (which waits for the prefill's token) overlap.
  EXPECT_GE(profile.num_overlapped_steps, static_cast<int64_t>(stop_at));
  EXPECT_EQ(profile.num_synchronous_steps, 0);
  EXPECT_EQ(profile.prefill.num_steps, 1);
  EXPECT_EQ(profile.prefill.num_tokens, static_cast<int64_t>(c.prompt.size()));
  EXPECT_GE(profile.decode.num_steps, static_cast<int64_t>(stop_at));
  EXPECT_GT(profile.decode.flops, 0);
}

TEST(Engine, OpProfileTimesEveryOpByStepKindAndChangesNothing) {
  EngineOptions o = options_with(256, 2048, true);
  o.profile_ops = true;
  auto engine = Engine::create(o);
  auto c = golden_cases()[0];
  EXPECT_EQ(testing::run_request(*engine, greedy(c.prompt, static_cast<int64_t>(c.greedy.size()))).tokens, c.greedy);
  std::map<std::string, int64_t> calls;  // "kind/op"
  for (const OpProfileEntry& e : engine->op_profile()) {
    calls[e.step_kind + "/" + e.op] += e.num_calls;
    EXPECT_GE(e.device_s, 0.0);
  }
  // The test model: 2 layers of hidden 64, 4 heads and 1 KV head of 64, tied embeddings (lm_head
  // is the 512 x 64 embedding table); one prefill step, then a decode step per later token.
  const int64_t num_decodes = static_cast<int64_t>(c.greedy.size()) - 1;
  EXPECT_EQ(calls["prefill/gemm 384x64"], 2);
  EXPECT_EQ(calls["prefill/rope_kv_append + attention (prompt chunks)"], 2);
  EXPECT_EQ(calls["decode/gemm 384x64"], 2 * num_decodes);
  EXPECT_EQ(calls["decode/rope_kv_append + attention (one token a sequence)"], 2 * num_decodes);
  EXPECT_EQ(calls["decode/sample"], num_decodes);
  EXPECT_EQ(calls["decode/feed_tokens"], num_decodes);  // each takes its token from the step before, on the device
}

TEST(Engine, PenaltiesWaitForTheStepInFlight) {
  // The penalty's token lists need every output token on the host, so a penalized request's
  // steps wait for the previous one; an unpenalized one beside it must still get its goldens.
  auto engine = Engine::create(options_with(256, 2048, true));
  auto cases = golden_cases();
  GenerationRequest penalized = greedy(cases[0].prompt, 20);
  penalized.sampling.repetition_penalty = 1.3f;
  auto first = engine->submit(penalized);
  auto plain = engine->submit(greedy(cases[1].prompt, static_cast<int64_t>(cases[1].greedy.size())));
  auto a = testing::collect(*first);
  EXPECT_EQ(a.tokens.size(), 20u);
  EXPECT_EQ(testing::collect(*plain).tokens, cases[1].greedy);
  EXPECT_GT(engine->step_profile().num_synchronous_steps, 0);
  // The same penalized request alone gives the same tokens (nothing depends on the overlap).
  EXPECT_EQ(testing::run_request(*engine, penalized).tokens, a.tokens);
}

TEST(Engine, StopStringsAcrossTheOneStepLag) {
  // The bundled model has a tokenizer: its greedy text holds a stop string found one step
  // before the next token is known; the text ends right before it and nothing follows.
  EngineOptions o;
  o.model_dir = (testing::test_data_dir().parent_path().parent_path() / "models" / "tiny-austen").string();
  o.num_kv_blocks = 64;
  auto engine = Engine::create(o);
  GenerationRequest r{{1, 2, 3}, {}};
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = 40;
  r.sampling.ignore_eos = true;
  auto full = testing::run_request(*engine, r);
  ASSERT_GT(full.text.size(), 30u);
  const std::string stop = full.text.substr(20, 4);
  const size_t at = full.text.find(stop);
  r.sampling.stop = {stop};
  auto stopped = testing::run_request(*engine, r);
  EXPECT_EQ(stopped.finish_reason, FinishReason::kStop);
  EXPECT_EQ(stopped.text, full.text.substr(0, at));
  EXPECT_LT(stopped.tokens.size(), full.tokens.size());
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(full.tokens.begin(), full.tokens.begin() + stopped.tokens.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
}

}  // namespace
}  // namespace brisk
