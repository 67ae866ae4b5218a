#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::make_i32;
using testing::to_doubles;

struct SampleResult {
  std::vector<int32_t> tokens;
  std::vector<double> logprobs;
  std::vector<double> logits;  // after the call (modified in place)
};

// Ragged token lists for the penalties; empty lists mean "not given".
struct History {
  std::vector<std::vector<int32_t>> prompt{}, output{};
};

std::pair<Tensor, Tensor> ragged(const std::vector<std::vector<int32_t>>& lists) {
  std::vector<int32_t> starts = {0}, tokens;
  for (const auto& list : lists) {
    tokens.insert(tokens.end(), list.begin(), list.end());
    starts.push_back(static_cast<int32_t>(tokens.size()));
  }
  if (tokens.empty()) tokens.push_back(0);  // a Tensor of zero elements would read as absent
  return {make_i32({static_cast<int64_t>(starts.size())}, starts),
          make_i32({static_cast<int64_t>(tokens.size())}, tokens)};
}

SampleResult run_sample(const std::vector<std::vector<double>>& logits,
                        const std::vector<SamplingRow>& rows, const History& history = {}) {
  auto backend = make_cpu_backend();
  const int64_t num_seqs = logits.size(), vocab = logits[0].size();
  std::vector<double> flat;
  for (const auto& row : logits) flat.insert(flat.end(), row.begin(), row.end());
  Tensor logits_t = testing::make_tensor(DType::kF32, {num_seqs, vocab}, flat);
  Tensor tokens(cpu_allocator(), DType::kI32, {num_seqs});
  Tensor logprobs(cpu_allocator(), DType::kF32, {num_seqs});
  SampleParams p{.logits = logits_t, .rows = rows.data(), .out_tokens = tokens,
                 .out_logprobs = logprobs};
  std::pair<Tensor, Tensor> prompt, output;
  if (!history.prompt.empty()) {
    prompt = ragged(history.prompt);
    p.prompt_start = prompt.first;
    p.prompt_tokens = prompt.second;
  }
  if (!history.output.empty()) {
    output = ragged(history.output);
    p.output_start = output.first;
    p.output_tokens = output.second;
  }
  backend->sample(p);
  SampleResult result;
  for (double t : to_doubles(tokens)) result.tokens.push_back(static_cast<int32_t>(t));
  result.logprobs = to_doubles(logprobs);
  result.logits = to_doubles(logits_t);
  return result;
}

int32_t sample_one(const std::vector<double>& logits, const SamplingRow& row,
                   const History& history = {}) {
  return run_sample({logits}, {row}, history).tokens[0];
}

SamplingRow sampled(uint64_t seed, uint64_t step, float temperature = 1.0f) {
  return {.temperature = temperature, .seed = seed, .step = step};
}

std::vector<double> random_logits(int64_t vocab, std::mt19937& rng) {
  return testing::random_values(vocab, rng, -3.0, 3.0);
}

TEST(CpuSample, GreedyIsArgmaxWithLowestIndexOnTies) {
  EXPECT_EQ(sample_one({0.1, 2.0, -1.0, 2.0}, {}), 1);
  EXPECT_EQ(sample_one({5.0, 5.0}, {}), 0);
  EXPECT_EQ(sample_one({-INFINITY, -3.0, -2.5}, {}), 2);
}

TEST(CpuSample, SameSeedAndStepGiveTheSameTokenInAnyBatch) {
  std::mt19937 rng(51);
  std::vector<double> logits = random_logits(1000, rng);
  const int32_t alone = sample_one(logits, sampled(77, 5));
  EXPECT_EQ(sample_one(logits, sampled(77, 5)), alone);
  SampleResult batch = run_sample({random_logits(1000, rng), logits, logits},
                                  {sampled(1, 1), sampled(77, 5), sampled(77, 6)});
  EXPECT_EQ(batch.tokens[1], alone);
}

TEST(CpuSample, DrawsDifferAcrossStepsAndSeeds) {
  std::vector<double> flat(100, 0.0);  // uniform over 100 tokens
  std::set<int32_t> by_step, by_seed;
  for (uint64_t i = 0; i < 50; ++i) {
    by_step.insert(sample_one(flat, sampled(9, i)));
    by_seed.insert(sample_one(flat, sampled(i, 9)));
  }
  // 50 uniform draws from 100 tokens give ~40 distinct values; 15 is far below any fluke.
  EXPECT_GT(by_step.size(), 15u);
  EXPECT_GT(by_seed.size(), 15u);
}

TEST(CpuSample, TopKOneAndTinyTopPEqualGreedy) {
  std::mt19937 rng(52);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> logits = random_logits(500, rng);
    const int32_t greedy = sample_one(logits, {});
    SamplingRow top_k = sampled(trial, trial, 1.5f);
    top_k.top_k = 1;
    SamplingRow top_p = sampled(trial, trial, 1.5f);
    top_p.top_p = 1e-6f;
    EXPECT_EQ(sample_one(logits, top_k), greedy);
    EXPECT_EQ(sample_one(logits, top_p), greedy);
  }
}

TEST(CpuSample, FiltersMaskTheExpectedTokens) {
  // Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1.
  const std::vector<double> logits = {std::log(0.3), std::log(0.5), std::log(0.05), std::log(0.15)};
  auto kept = [&](SamplingRow row) {
    std::vector<bool> out;
    for (double l : run_sample({logits}, {row}).logits) out.push_back(l > -INFINITY);
    return out;
  };
  SamplingRow row = sampled(1, 1);
  row.top_k = 2;
  EXPECT_EQ(kept(row), (std::vector<bool>{true, true, false, false}));
  row = sampled(1, 1);
  row.top_p = 0.75f;  // 0.5 + 0.3 reaches it
  EXPECT_EQ(kept(row), (std::vector<bool>{true, true, false, false}));
  row.top_p = 0.85f;  // needs 0.15 too
  EXPECT_EQ(kept(row), (std::vector<bool>{true, true, false, true}));
  row = sampled(1, 1);
  row.min_p = 0.5f;  // keeps p >= 0.25
  EXPECT_EQ(kept(row), (std::vector<bool>{true, true, false, false}));
  row.min_p = 0.25f;  // keeps p >= 0.125
  EXPECT_EQ(kept(row), (std::vector<bool>{true, true, false, true}));
  row = sampled(1, 1);
  row.top_k = 1;  // ties with the k-th largest survive, as in vLLM
  EXPECT_EQ(run_sample({{1.0, 3.0, 3.0, 0.0}}, {row}).logits,
            (std::vector<double>{-INFINITY, 3.0, 3.0, -INFINITY}));
  // Surviving logits are divided by the temperature.
  row = sampled(1, 1, 2.0f);
  EXPECT_EQ(run_sample({{1.0, 3.0}}, {row}).logits, (std::vector<double>{0.5, 1.5}));
}

TEST(CpuSample, MinPNeverDrawsDroppedTokens) {
  const std::vector<double> logits = {std::log(0.3), std::log(0.5), std::log(0.05), std::log(0.15)};
  for (uint64_t step = 0; step < 300; ++step) {
    SamplingRow row = sampled(3, step);
    row.min_p = 0.5f;
    int32_t token = sample_one(logits, row);
    EXPECT_TRUE(token == 0 || token == 1) << "step " << step << " drew " << token;
  }
}

TEST(CpuSample, RepetitionPenaltyScalesEachSeenTokenOnce) {
  SamplingRow row;  // greedy, so the logits are only penalised
  row.repetition_penalty = 2.0f;
  History history{.prompt = {{0, 0}}, .output = {{1, 1, 4}}};
  SampleResult r = run_sample({{2.0, -1.0, 0.5, 3.0, 8.0}}, {row}, history);
  EXPECT_EQ(r.logits, (std::vector<double>{1.0, -2.0, 0.5, 3.0, 4.0}));
  EXPECT_EQ(r.tokens[0], 4);
  // A prompt token loses the argmax to the next best.
  row.repetition_penalty = 1.5f;
  EXPECT_EQ(sample_one({1.0, 0.9}, row, {.prompt = {{0}}}), 1);
  EXPECT_EQ(sample_one({1.0, 0.9}, {}, {.prompt = {{0}}}), 0);
}

TEST(CpuSample, FrequencyAndPresencePenalisesOutputTokensOnly) {
  SamplingRow row;
  row.frequency_penalty = 0.5f;
  row.presence_penalty = 0.25f;
  History history{.prompt = {{1}}, .output = {{0, 2, 0}}};
  SampleResult r = run_sample({{3.0, 3.0, 3.0, 1.0}}, {row}, history);
  EXPECT_EQ(r.logits, (std::vector<double>{3.0 - 1.0 - 0.25, 3.0, 3.0 - 0.5 - 0.25, 1.0}));
  EXPECT_EQ(r.tokens[0], 1);
  // Repetition first, then frequency: 2 / 2 - 1 = 0 (the other order would give 0.5).
  SamplingRow both;
  both.repetition_penalty = 2.0f;
  both.frequency_penalty = 1.0f;
  EXPECT_EQ(run_sample({{2.0, 0.25}}, {both}, {.output = {{0}}}).logits,
            (std::vector<double>{0.0, 0.25}));
  EXPECT_EQ(run_sample({{2.0, 0.25}}, {both}, {.output = {{0}}}).tokens[0], 1);
}

TEST(CpuSample, PenaltiesUseEachSequencesOwnHistory) {
  SamplingRow row;
  row.presence_penalty = 10.0f;
  History history{.prompt = {{}, {}}, .output = {{0}, {1}}};
  SampleResult r = run_sample({{1.0, 0.0}, {1.0, 0.0}}, {row, row}, history);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1, 0}));
}

// Binomial counts of token 0 over 4000 draws (one per step) stay within 5 sigma.
void expect_frequency(const std::vector<double>& logits, float temperature, double p0) {
  const int num_draws = 4000;
  int count = 0;
  for (int step = 0; step < num_draws; ++step) {
    count += sample_one(logits, sampled(2024, step, temperature)) == 0;
  }
  const double mean = num_draws * p0;
  const double sigma = std::sqrt(num_draws * p0 * (1 - p0));
  EXPECT_NEAR(count, mean, 5 * sigma) << "temperature " << temperature;
}

TEST(CpuSample, FrequenciesMatchTheDistribution) {
  const std::vector<double> logits = {std::log(0.3), std::log(0.7)};
  expect_frequency(logits, 1.0f, 0.3);
  // Temperature 0.5 squares the odds: 0.09 / (0.09 + 0.49).
  expect_frequency(logits, 0.5f, 0.09 / 0.58);
}

TEST(CpuSample, LogprobsAreOfTheRawLogits) {
  std::mt19937 rng(53);
  std::vector<double> logits = random_logits(300, rng);
  double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
  std::vector<double> stored = to_doubles(testing::make_tensor(DType::kF32, {300}, logits));
  for (double l : stored) sum += std::exp(l - max);
  const double lse = max + std::log(sum);
  SamplingRow row = sampled(5, 5, 0.7f);
  row.repetition_penalty = 1.3f;
  row.top_k = 50;
  SampleResult r = run_sample({logits, logits}, {row, SamplingRow{}}, {.prompt = {{1, 2}, {3}}});
  EXPECT_NEAR(r.logprobs[0], stored[r.tokens[0]] - lse, 1e-5);
  EXPECT_NEAR(r.logprobs[1], stored[r.tokens[1]] - lse, 1e-5);
}

TEST(CpuSample, UniformFollowsTheDocumentedRecipe) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto splitmix64 = [&](uint64_t x) { return mix(x + 0x9E3779B97F4A7C15ull); };
  for (uint64_t seed : {0ull, 1ull, 42ull, ~0ull}) {
    for (uint64_t step : {0ull, 1ull, 1000ull}) {
      double expected = static_cast<double>(splitmix64(splitmix64(seed) ^ step) >> 11) / 9007199254740992.0;
      double u = cpu::sampling_uniform(seed, step);
      EXPECT_EQ(u, expected);
      EXPECT_GE(u, 0.0);
      EXPECT_LT(u, 1.0);
    }
  }
}

TEST(CpuSample, RejectsBadParams) {
  const std::vector<double> logits = {0.0, 1.0, 2.0};
  auto with = [](auto edit) {
    SamplingRow row = sampled(1, 1);
    edit(row);
    return row;
  };
  EXPECT_ERROR_CONTAINS(sample_one(logits, with([](SamplingRow& r) { r.temperature = -1; })),
                        "rows[0].temperature is -1");
  EXPECT_ERROR_CONTAINS(sample_one(logits, with([](SamplingRow& r) { r.top_p = 0; })),
                        "rows[0].top_p is 0 but must be in (0, 1]");
  EXPECT_ERROR_CONTAINS(sample_one(logits, with([](SamplingRow& r) { r.min_p = 1.5; })),
                        "rows[0].min_p is 1.5");
  EXPECT_ERROR_CONTAINS(sample_one(logits, with([](SamplingRow& r) { r.repetition_penalty = 0; })),
                        "rows[0].repetition_penalty is 0");
  EXPECT_ERROR_CONTAINS(sample_one(logits, sampled(1, 1), {.output = {{0, 3}}}),
                        "output_tokens of sequence 0 holds token 3 outside the vocabulary of 3");
  EXPECT_ERROR_CONTAINS(sample_one(logits, sampled(1, 1), {.prompt = {{-2}}}),
                        "prompt_tokens of sequence 0 holds token -2");

  auto backend = make_cpu_backend();
  Tensor bf16_logits(cpu_allocator(), DType::kBF16, {1, 3});
  Tensor tokens(cpu_allocator(), DType::kI32, {1});
  SamplingRow row;
  EXPECT_ERROR_CONTAINS(backend->sample({.logits = bf16_logits, .rows = &row, .out_tokens = tokens}),
                        "sample: logits is bf16[1, 3] (cpu) but must be f32");
  Tensor f32_logits(cpu_allocator(), DType::kF32, {1, 3});
  EXPECT_ERROR_CONTAINS(backend->sample({.logits = f32_logits, .out_tokens = tokens}),
                        "rows is null");
  Tensor starts = make_i32({2}, {0, 1});
  EXPECT_ERROR_CONTAINS(backend->sample({.logits = f32_logits, .rows = &row, .prompt_start = starts,
                                         .out_tokens = tokens}),
                        "prompt_start and prompt_tokens must be given together");
}

TEST(CpuTopLogprobs, SortedByLogitThenIdWithLogSoftmaxValues) {
  // Row 0: distinct values; row 1: ties (lower id first) and -inf entries needed to fill k.
  const std::vector<double> values = {0.5, 3.0, -1.0, 2.0, 3.5, 0.0,  //
                                      1.0, -INFINITY, 1.0, 2.0, -INFINITY, 1.0};
  Tensor logits = testing::make_tensor(DType::kF32, {2, 6}, values);
  Tensor tokens(cpu_allocator(), DType::kI32, {2, 6});
  Tensor logprobs(cpu_allocator(), DType::kF32, {2, 6});
  make_cpu_backend()->top_logprobs({.logits = logits, .out_tokens = tokens, .out_logprobs = logprobs});
  const std::vector<double> got_tokens = to_doubles(tokens);
  EXPECT_EQ(got_tokens, (std::vector<double>{4, 1, 3, 0, 5, 2, 3, 0, 2, 5, 1, 4}));
  const std::vector<double> got = to_doubles(logprobs);
  for (int s = 0; s < 2; ++s) {
    double sum = 0.0;
    for (int i = 0; i < 6; ++i) sum += std::exp(values[s * 6 + i]);
    for (int j = 0; j < 6; ++j) {
      const double expected = values[s * 6 + static_cast<int>(got_tokens[s * 6 + j])] - std::log(sum);
      if (std::isinf(expected)) {
        EXPECT_TRUE(std::isinf(got[s * 6 + j]) && got[s * 6 + j] < 0);
      } else {
        EXPECT_NEAR(got[s * 6 + j], expected, 1e-6) << "row " << s << " rank " << j;
      }
    }
  }
}

TEST(CpuTopLogprobs, RejectsKBeyondVocabulary) {
  Tensor logits(cpu_allocator(), DType::kF32, {1, 3});
  Tensor tokens(cpu_allocator(), DType::kI32, {1, 4});
  Tensor logprobs(cpu_allocator(), DType::kF32, {1, 4});
  EXPECT_ERROR_CONTAINS(make_cpu_backend()->top_logprobs({.logits = logits, .out_tokens = tokens,
                                                          .out_logprobs = logprobs}),
                        "k exceeds the vocabulary");
}

TEST(CpuTokenLogprobs, LogSoftmaxAtTheTokenAndItsRank) {
  // Row 0: token 3 (2.0) is third after 3.5 and 3.0; row 1: token 0 ties two others for first.
  const std::vector<double> values = {0.5, 3.0, -1.0, 2.0, 3.5, 0.0,  //
                                      1.0, -INFINITY, 1.0, 0.5, -INFINITY, 1.0};
  Tensor logits = testing::make_tensor(DType::kF32, {2, 6}, values);
  Tensor tokens = make_i32({2}, {3, 0});
  Tensor logprobs(cpu_allocator(), DType::kF32, {2});
  Tensor ranks(cpu_allocator(), DType::kI32, {2});
  make_cpu_backend()->token_logprobs(
      {.logits = logits, .tokens = tokens, .out_logprobs = logprobs, .out_ranks = ranks});
  EXPECT_EQ(to_doubles(ranks), (std::vector<double>{3, 1}));
  const std::vector<double> got = to_doubles(logprobs);
  for (int s = 0; s < 2; ++s) {
    double sum = 0.0;
    for (int i = 0; i < 6; ++i) sum += std::exp(values[s * 6 + i]);
    EXPECT_NEAR(got[s], values[s * 6 + (s == 0 ? 3 : 0)] - std::log(sum), 1e-6) << "row " << s;
  }
}

TEST(CpuTokenLogprobs, RejectsTokenOutsideVocabulary) {
  Tensor logits(cpu_allocator(), DType::kF32, {1, 3});
  Tensor tokens = make_i32({1}, {3});
  Tensor logprobs(cpu_allocator(), DType::kF32, {1});
  Tensor ranks(cpu_allocator(), DType::kI32, {1});
  EXPECT_ERROR_CONTAINS(make_cpu_backend()->token_logprobs({.logits = logits, .tokens = tokens,
                                                            .out_logprobs = logprobs, .out_ranks = ranks}),
                        "tokens[0] = 3 is outside the vocabulary");
}

}  // namespace
}  // namespace brisk
