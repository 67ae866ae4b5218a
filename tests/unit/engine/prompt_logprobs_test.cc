// Prompt logprobs on the CPU backend: each prompt token's log-probability, rank and top
// alternatives under the logits of the tokens before it, against the Hugging Face goldens' logits;
// the same numbers whatever the chunking, slicing, batching or prefix cache; max_tokens 0.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace brisk {
namespace {

const char* kModel = "llama-gqa4-hd64-tied-llama3rope-bf16";

std::filesystem::path model_dir() { return testing::test_data_dir() / "models" / kModel; }

EngineOptions options_with(int64_t token_budget, bool prefix_caching) {
  EngineOptions o;
  o.model_dir = model_dir().string();
  o.num_kv_blocks = 512;
  o.block_size = 4;
  o.max_num_batched_tokens = token_budget;
  o.enable_prefix_caching = prefix_caching;
  o.max_model_len = 1024;  // past the config's 256: long prompts cross the runner's 256-row slices
  return o;
}

GenerationRequest scoring(const std::vector<int32_t>& prompt, int64_t max_tokens, int32_t num_top) {
  GenerationRequest r{prompt, {}};
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.sampling.prompt_logprobs = num_top;
  return r;
}

// The goldens' logits of every prompt position as log-softmax rows.
std::vector<std::vector<double>> golden_log_softmax(const SafetensorsFile& file, size_t prompt_index) {
  TensorView logits = file.tensor("logits." + std::to_string(prompt_index));
  std::vector<std::vector<double>> rows;
  for (int64_t r = 0; r < logits.size(0); ++r) {
    const float* row = logits.data_as<float>() + r * logits.size(1);
    std::vector<double> out(row, row + logits.size(1));
    const double max = *std::max_element(out.begin(), out.end());
    double sum = 0;
    for (double x : out) sum += std::exp(x - max);
    for (double& x : out) x -= max + std::log(sum);
    rows.push_back(std::move(out));
  }
  return rows;
}

void expect_same_scores(const std::vector<PromptLogprob>& a, const std::vector<PromptLogprob>& b,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].token, b[i].token) << what << " position " << i;
    EXPECT_NEAR(a[i].logprob, b[i].logprob, 1e-4) << what << " position " << i;
    EXPECT_EQ(a[i].rank, b[i].rank) << what << " position " << i;
    ASSERT_EQ(a[i].top_logprobs.size(), b[i].top_logprobs.size()) << what << " position " << i;
    for (size_t j = 0; j < a[i].top_logprobs.size(); ++j) {
      EXPECT_EQ(a[i].top_logprobs[j].token, b[i].top_logprobs[j].token) << what << " position " << i;
      EXPECT_NEAR(a[i].top_logprobs[j].logprob, b[i].top_logprobs[j].logprob, 1e-4) << what << " position " << i;
    }
  }
}

TEST(PromptLogprobs, MatchTheModelsLogitsOnTheFirstEvent) {
  auto json = nlohmann::json::parse(testing::read_file(model_dir() / "goldens.json"));
  auto goldens = SafetensorsFile::open(model_dir() / "goldens.safetensors");
  auto engine = Engine::create(options_with(2048, true));
  for (size_t c = 0; c < json["prompts"].size(); ++c) {
    const auto prompt = json["prompts"][c].get<std::vector<int32_t>>();
    const auto greedy = json["greedy"][c].get<std::vector<int32_t>>();
    const auto expected = golden_log_softmax(*goldens, c);
    auto result = testing::run_request(*engine, scoring(prompt, 2, 3));
    ASSERT_EQ(result.finish_reason, FinishReason::kLength) << result.error;
    EXPECT_EQ(result.tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + 2));  // generation unchanged
    EXPECT_EQ(result.prompt_logprobs_event, 0);
    ASSERT_EQ(result.prompt_logprobs.size(), prompt.size());
    EXPECT_EQ(result.prompt_logprobs[0].token, prompt[0]);
    EXPECT_EQ(result.prompt_logprobs[0].rank, 0);
    EXPECT_TRUE(result.prompt_logprobs[0].top_logprobs.empty());
    for (size_t i = 1; i < prompt.size(); ++i) {
      const PromptLogprob& p = result.prompt_logprobs[i];
      const std::vector<double>& row = expected[i - 1];  // the logits before token i
      const std::string where = "prompt " + std::to_string(c) + " position " + std::to_string(i);
      EXPECT_EQ(p.token, prompt[i]) << where;
      EXPECT_NEAR(p.logprob, row[prompt[i]], 2e-3) << where;
      bool near_tie = false;
      int32_t rank = 1;
      for (size_t v = 0; v < row.size(); ++v) {
        if (static_cast<int32_t>(v) == prompt[i]) continue;
        near_tie = near_tie || std::fabs(row[v] - row[prompt[i]]) < 2e-3;
        rank += row[v] > row[prompt[i]] ? 1 : 0;
      }
      if (!near_tie) {
        EXPECT_EQ(p.rank, rank) << where;
      }
      ASSERT_EQ(p.top_logprobs.size(), 3u) << where;
      const double best = *std::max_element(row.begin(), row.end());
      EXPECT_NEAR(p.top_logprobs[0].logprob, best, 2e-3) << where;
      for (size_t j = 0; j < 3; ++j) {
        EXPECT_NEAR(p.top_logprobs[j].logprob, row[p.top_logprobs[j].token], 2e-3) << where;
        if (j > 0) {
          EXPECT_LE(p.top_logprobs[j].logprob, p.top_logprobs[j - 1].logprob) << where;
        }
      }
      if (p.rank == 1) {
        EXPECT_FLOAT_EQ(p.top_logprobs[0].logprob, p.logprob) << where;
      }
    }
  }
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
}

// 600 prompt tokens in one step (three lm_head slices: 256, 256, 87 rows) or in chunks of 37
// tokens, alone or batched with another request, give the same numbers.
TEST(PromptLogprobs, SameWithChunkedPrefillSlicesAndBatching) {
  std::mt19937 rng(7);
  std::vector<int32_t> prompt(600);
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % 512);
  auto whole = Engine::create(options_with(2048, false));
  auto one = testing::run_request(*whole, scoring(prompt, 3, 2));
  ASSERT_EQ(one.finish_reason, FinishReason::kLength) << one.error;
  ASSERT_EQ(one.prompt_logprobs.size(), prompt.size());

  auto chunked = Engine::create(options_with(37, false));
  auto other = chunked->submit(scoring(std::vector<int32_t>(prompt.begin(), prompt.begin() + 90), 4, 5));
  auto many = testing::run_request(*chunked, scoring(prompt, 3, 2));
  auto other_result = testing::collect(*other);
  EXPECT_EQ(many.tokens, one.tokens);
  expect_same_scores(many.prompt_logprobs, one.prompt_logprobs, "chunks of 37");
  ASSERT_EQ(other_result.prompt_logprobs.size(), 90u);
  EXPECT_EQ(other_result.prompt_logprobs[89].top_logprobs.size(), 5u);
  EXPECT_EQ(other_result.prompt_logprobs[89].token, prompt[89]);
  EXPECT_NEAR(other_result.prompt_logprobs[89].logprob, one.prompt_logprobs[89].logprob, 1e-4);
}

// A request that scores its prompt computes all of it (cached positions would have no logits)
// and still leaves its blocks in the cache for the next request.
TEST(PromptLogprobs, PrefixCacheIsBypassedForScoringAndStillFilled) {
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 40; ++i) prompt.push_back((i * 37 + 11) % 512);
  auto reference = testing::run_request(*Engine::create(options_with(2048, false)), scoring(prompt, 2, 4));

  auto engine = Engine::create(options_with(2048, true));
  GenerationRequest plain = scoring(prompt, 2, 0);
  plain.sampling.prompt_logprobs.reset();
  EXPECT_TRUE(testing::run_request(*engine, plain).prompt_logprobs.empty());
  auto scored = testing::run_request(*engine, scoring(prompt, 2, 4));
  EXPECT_EQ(scored.num_cached_prompt_tokens, 0);
  EXPECT_EQ(scored.tokens, reference.tokens);
  expect_same_scores(scored.prompt_logprobs, reference.prompt_logprobs, "after a cached run");
  EXPECT_GT(testing::run_request(*engine, plain).num_cached_prompt_tokens, 0);
}

// Two scoring requests that cannot both fit in the cache: one is preempted (by recompute) while
// scoring or generating, and each still gets every position scored once, as when run alone.
TEST(PromptLogprobs, PreemptionScoresEveryPositionOnce) {
  std::mt19937 rng(9);
  std::vector<std::vector<int32_t>> prompts(2, std::vector<int32_t>(100));
  for (auto& prompt : prompts)
    for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % 512);
  auto alone = Engine::create(options_with(2048, true));
  std::vector<testing::RequestResult> expected;
  for (const auto& prompt : prompts) expected.push_back(testing::run_request(*alone, scoring(prompt, 20, 1)));

  EngineOptions tight = options_with(37, true);
  tight.num_kv_blocks = 40;  // 160 tokens; each request needs 120
  auto engine = Engine::create(tight);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& prompt : prompts) streams.push_back(engine->submit(scoring(prompt, 20, 1)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto result = testing::collect(*streams[i]);
    ASSERT_EQ(result.finish_reason, FinishReason::kLength) << result.error;
    EXPECT_EQ(result.tokens, expected[i].tokens) << i;
    EXPECT_EQ(result.prompt_logprobs_event, 0) << i;
    expect_same_scores(result.prompt_logprobs, expected[i].prompt_logprobs, "preempted " + std::to_string(i));
  }
  EXPECT_GT(engine->stats().num_preemptions, 0);
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
}

TEST(PromptLogprobs, OnlySampleZeroCarriesThem) {
  const std::vector<int32_t> prompt = {5, 9, 200, 31, 7, 7, 450};
  auto engine = Engine::create(options_with(2048, true));
  GenerationRequest r = scoring(prompt, 3, 1);
  r.sampling.n = 3;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 4;
  auto results = testing::collect_samples(*engine->submit(r), 3);
  EXPECT_EQ(results[0].prompt_logprobs.size(), prompt.size());
  EXPECT_EQ(results[0].prompt_logprobs_event, 0);
  for (int s = 1; s < 3; ++s) {
    EXPECT_EQ(results[s].prompt_logprobs_event, -1) << s;
    EXPECT_EQ(results[s].tokens.size(), 3u) << s;
  }
}

TEST(PromptLogprobs, MaxTokensZeroScoresThePromptAndGeneratesNothing) {
  const std::vector<int32_t> prompt = {5, 9, 200, 31, 7, 7, 450, 3, 3};
  auto reference = testing::run_request(*Engine::create(options_with(2048, true)), scoring(prompt, 1, 2));
  auto engine = Engine::create(options_with(2048, true));
  GenerationRequest r = scoring(prompt, 0, 2);
  r.sampling.n = 2;
  auto results = testing::collect_samples(*engine->submit(r), 2);
  for (const auto& result : results) {
    EXPECT_EQ(result.finish_reason, FinishReason::kLength) << result.error;
    EXPECT_TRUE(result.tokens.empty());
  }
  EXPECT_EQ(results[0].prompt_logprobs_event, 0);  // on its kFinished event
  expect_same_scores(results[0].prompt_logprobs, reference.prompt_logprobs, "max_tokens 0");
  EXPECT_EQ(engine->stats().num_generated_tokens, 0);
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);

  GenerationRequest nothing = scoring(prompt, 0, 2);
  nothing.sampling.prompt_logprobs.reset();
  EXPECT_NE(testing::run_request(*engine, nothing).error.find("max_tokens must be at least 1 (0 only with "
                                                              "prompt_logprobs), got 0"), std::string::npos);
  EXPECT_NE(testing::run_request(*engine, scoring(prompt, 1, 21)).error.find("prompt_logprobs must be in [0, 20], "
                                                                            "got 21"), std::string::npos);
}

}  // namespace
}  // namespace brisk
