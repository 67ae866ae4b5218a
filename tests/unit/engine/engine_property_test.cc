// Randomized engine runs (rapidcheck): random prompts sharing prefixes, random lengths, token
// budgets, cache sizes, cancellations and arrival order. Invariants: every request ends with
// exactly one terminal event, greedy tokens equal those of the same request run alone, and
// nothing stays in use afterwards.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <thread>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace brisk {
namespace {

const char* kModel = "llama-gqa2-hd32-bf16";

EngineOptions options(int64_t num_blocks, int64_t budget, bool prefix_caching) {
  EngineOptions o;
  o.model_dir = (testing::test_data_dir() / "models" / kModel).string();
  o.num_kv_blocks = num_blocks;
  o.max_num_batched_tokens = budget;
  o.enable_prefix_caching = prefix_caching;
  o.block_size = 4;
  o.max_num_seqs = 4;
  return o;
}

GenerationRequest greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
  GenerationRequest r{std::move(prompt), {}};
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

// Reference outputs: each request alone on a roomy engine (memoised across cases).
std::vector<int32_t> alone(const GenerationRequest& r) {
  static auto engine = Engine::create(options(256, 4096, false));
  static std::map<std::pair<std::vector<int32_t>, int64_t>, std::vector<int32_t>> memo;
  auto key = std::make_pair(r.prompt_ids, r.sampling.max_tokens);
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  return memo[key] = testing::run_request(*engine, r).tokens;
}

RC_GTEST_PROP(EngineProperty, OutputsAndInvariantsHoldUnderRandomLoad, ()) {
  const auto num_blocks = *rc::gen::inRange<int64_t>(12, 40);
  const auto budget = *rc::gen::inRange<int64_t>(1, 40);
  const bool prefix_caching = *rc::gen::arbitrary<bool>();
  auto engine = Engine::create(options(num_blocks, budget, prefix_caching));
  const auto base = *rc::gen::container<std::vector<int32_t>>(12, rc::gen::inRange<int32_t>(3, 512));
  const auto num_requests = *rc::gen::inRange(1, 7);
  std::vector<GenerationRequest> requests;
  std::vector<bool> cancel;
  for (int i = 0; i < num_requests; ++i) {
    // Prompts share a prefix of the base of random length, then diverge.
    auto shared = *rc::gen::inRange<size_t>(1, base.size() + 1);
    std::vector<int32_t> prompt(base.begin(), base.begin() + shared);
    auto tail = *rc::gen::container<std::vector<int32_t>>(*rc::gen::inRange<size_t>(0, 8), rc::gen::inRange<int32_t>(3, 512));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    requests.push_back(greedy(prompt, *rc::gen::inRange<int64_t>(1, 12)));
    cancel.push_back(*rc::gen::weightedElement<bool>({{1, true}, {4, false}}));
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < num_requests; ++i) {
    streams.push_back(engine->submit(requests[i]));
    if (cancel[i]) engine->cancel(streams.back()->id());
  }
  for (int i = 0; i < num_requests; ++i) {
    auto result = testing::collect(*streams[i]);
    RC_ASSERT(!streams[i]->next(std::chrono::milliseconds(0)).has_value());  // nothing after the end
    if (result.finish_reason == FinishReason::kCancelled) {
      RC_ASSERT(cancel[i]);
      continue;
    }
    RC_ASSERT(result.finish_reason == FinishReason::kLength);
    RC_ASSERT(result.tokens == alone(requests[i]));
  }
  auto stats = engine->stats();
  RC_ASSERT(stats.num_blocks_in_use == 0);
  RC_ASSERT(stats.num_running + stats.num_waiting == 0);
  RC_ASSERT(stats.num_blocks_free + stats.num_blocks_cached == num_blocks);
}

}  // namespace
}  // namespace brisk
