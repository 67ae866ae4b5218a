// sample: CUDA against the CPU reference. Greedy rows must pick exactly the CPU's token
// (including ties: lowest index). Seeded rows use random logits whose probabilities are far
// apart compared with float rounding, so the same uniform(seed, step) must pick the same token.
// Logprobs: |cuda - cpu| <= 1e-4 (fp32 exp vs the CPU's double exp, summed in double).
// Penalised logits must match the CPU's bit for bit (same separately rounded operations).
#include <gtest/gtest.h>

#include <cmath>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

struct SampleRun {
  std::vector<double> tokens, logprobs, logits;
};

struct Lists {
  std::vector<std::vector<int32_t>> prompt, output;
};

std::pair<Tensor, Tensor> ragged(const std::vector<std::vector<int32_t>>& lists) {
  std::vector<int32_t> starts{0}, tokens;
  for (const auto& list : lists) {
    tokens.insert(tokens.end(), list.begin(), list.end());
    starts.push_back(static_cast<int32_t>(tokens.size()));
  }
  if (tokens.empty()) tokens.push_back(0);
  return {make_i32({static_cast<int64_t>(starts.size())}, starts),
          make_i32({static_cast<int64_t>(tokens.size())}, tokens)};
}

// Runs the op on one backend; host inputs are uploaded when the backend is the CUDA one.
SampleRun run(Backend& backend, const Tensor& logits, const std::vector<SamplingRow>& rows,
              const Lists& lists) {
  const bool gpu = !backend.shares_host_memory();
  std::vector<Tensor> keep;
  auto put = [&](const TensorView& host) { return to_backend(backend, host, keep); };
  const int64_t num_seqs = logits.shape()[0];
  Tensor logits_copy = clone(logits);
  SampleParams p;
  p.logits = put(logits_copy);
  p.rows = put(TensorView(const_cast<SamplingRow*>(rows.data()), DType::kU8,
                          {static_cast<int64_t>(rows.size() * sizeof(SamplingRow))}))
               .data_as<const SamplingRow>();
  std::pair<Tensor, Tensor> prompt, output;
  if (!lists.prompt.empty()) {
    prompt = ragged(lists.prompt);
    p.prompt_start = put(prompt.first);
    p.prompt_tokens = put(prompt.second);
  }
  if (!lists.output.empty()) {
    output = ragged(lists.output);
    p.output_start = put(output.first);
    p.output_tokens = put(output.second);
  }
  Tensor tokens(backend.allocator(), DType::kI32, {num_seqs});
  Tensor logprobs(backend.allocator(), DType::kF32, {num_seqs});
  p.out_tokens = tokens;
  p.out_logprobs = logprobs;
  backend.sample(p);
  SampleRun result;
  result.tokens = gpu ? host_doubles(tokens) : to_doubles(tokens);
  result.logprobs = gpu ? host_doubles(logprobs) : to_doubles(logprobs);
  result.logits = gpu ? host_doubles(p.logits) : to_doubles(p.logits);
  return result;
}

void expect_same(const Tensor& logits, const std::vector<SamplingRow>& rows, const Lists& lists,
                 const std::string& what, bool compare_logits) {
  SampleRun expected = run(cpu_backend(), logits, rows, lists);
  SampleRun actual = run(cuda_backend(), logits, rows, lists);
  expect_close(actual.tokens, expected.tokens, 0, 0, what + " tokens");
  expect_close(actual.logprobs, expected.logprobs, 1e-4, 0, what + " logprobs");
  if (compare_logits) {
    // Bit-exact, -inf included (expect_close cannot compare infinities).
    int64_t misses = 0;
    for (size_t i = 0; i < expected.logits.size(); ++i) {
      if (actual.logits[i] != expected.logits[i] && ++misses <= 5)
        ADD_FAILURE() << what << " logits: element " << i << " is " << actual.logits[i]
                      << ", expected " << expected.logits[i];
    }
    EXPECT_EQ(misses, 0) << what << " logits";
  }
}

SamplingRow greedy() { return SamplingRow{}; }

SamplingRow seeded(uint64_t seed, uint64_t step, float temperature, int top_k = 0, float top_p = 1.0f,
                   float min_p = 0.0f) {
  SamplingRow row;
  row.temperature = temperature;
  row.top_k = top_k;
  row.top_p = top_p;
  row.min_p = min_p;
  row.seed = seed;
  row.step = step;
  return row;
}

TEST(Sample, GreedyMatchesCpuIncludingTies) {
  std::mt19937 rng(21);
  for (int64_t vocab : {int64_t{7}, int64_t{1000}, int64_t{32000}, int64_t{128256}}) {
    const int64_t num_seqs = 5;
    std::vector<double> values = random_values(num_seqs * vocab, rng, -8, 8);
    // Row 1: two equal maxima (the lower index must win); row 2: all equal.
    values[vocab + vocab / 3] = 20;
    values[vocab + vocab - 1] = 20;
    for (int64_t v = 0; v < vocab; ++v) values[2 * vocab + v] = 1.5;
    Tensor logits = make_tensor(DType::kF32, {num_seqs, vocab}, values);
    expect_same(logits, std::vector<SamplingRow>(num_seqs, greedy()), {},
                "greedy vocab " + std::to_string(vocab), true);
  }
}

TEST(Sample, PenaltiesMatchCpu) {
  std::mt19937 rng(22);
  const int64_t vocab = 5000, num_seqs = 3;
  Tensor logits = random_tensor(DType::kF32, {num_seqs, vocab}, rng, -4, 4);
  std::vector<SamplingRow> rows(num_seqs, greedy());
  rows[0].repetition_penalty = 1.3f;
  rows[1].frequency_penalty = 0.7f;
  rows[1].presence_penalty = 0.4f;
  rows[2].repetition_penalty = 0.8f;
  rows[2].frequency_penalty = -0.3f;
  Lists lists;
  lists.prompt = {{1, 2, 3, 2, 4999}, {}, {10, 11}};
  lists.output = {{7, 7, 7, 1}, {100, 200, 100, 3000}, {}};
  expect_same(logits, rows, lists, "penalties", true);
  // Only one list given.
  expect_same(logits, rows, Lists{lists.prompt, {}}, "penalties prompt only", true);
}

TEST(Sample, SeededSamplingMatchesCpu) {
  std::mt19937 rng(23);
  for (int64_t vocab : {int64_t{50}, int64_t{1000}, int64_t{128256}}) {
    const int64_t num_seqs = 64;
    Tensor logits = random_tensor(DType::kF32, {num_seqs, vocab}, rng, -3, 3);
    std::vector<SamplingRow> rows;
    for (int64_t s = 0; s < num_seqs; ++s) {
      const uint64_t seed = 1000 + s;
      switch (s % 6) {
        case 0: rows.push_back(seeded(seed, s, 1.0f)); break;
        case 1: rows.push_back(seeded(seed, s, 0.7f, 40)); break;
        case 2: rows.push_back(seeded(seed, s, 1.0f, 0, 0.9f)); break;
        case 3: rows.push_back(seeded(seed, s, 1.3f, 0, 1.0f, 0.2f)); break;
        case 4: rows.push_back(seeded(seed, s, 0.8f, 100, 0.8f, 0.05f)); break;
        default: rows.push_back(seeded(seed, s, 0.0f)); break;  // greedy among sampled rows
      }
    }
    expect_same(logits, rows, {}, "seeded vocab " + std::to_string(vocab), false);
  }
}

TEST(Sample, TopPBreaksTiesByTokenId) {
  // Logits 2, 1, 0 repeating: the top_p cut falls inside the 33 tokens of logit 2, so which of
  // them survive depends on the lower-id-first rule.
  const int64_t vocab = 100, num_seqs = 16;
  std::vector<double> values;
  for (int64_t s = 0; s < num_seqs; ++s)
    for (int64_t v = 0; v < vocab; ++v) values.push_back(static_cast<double>(2 - v % 3));
  Tensor logits = make_tensor(DType::kF32, {num_seqs, vocab}, values);
  std::vector<SamplingRow> rows;
  for (int64_t s = 0; s < num_seqs; ++s) rows.push_back(seeded(77 + s, 3, 1.0f, 0, 0.5f));
  expect_same(logits, rows, {}, "top_p ties", true);
  // top_k with ties at the threshold keeps all of them.
  rows.clear();
  for (int64_t s = 0; s < num_seqs; ++s) rows.push_back(seeded(91 + s, 0, 1.0f, 40));
  expect_same(logits, rows, {}, "top_k ties", true);
}

// Rows shaped like a language model's: a flat background and 60 likely tokens. top_k and top_p run
// on the gathered candidates (sample.cu's candidate path) and must leave the CPU's tokens,
// logprobs and filtered logits; the last rows' filters reach past the candidates (whole-row path).
std::vector<double> peaky_values(int64_t num_seqs, int64_t vocab, std::mt19937& rng) {
  std::vector<double> values = random_values(num_seqs * vocab, rng, -4, 4);
  for (int64_t s = 0; s < num_seqs; ++s)
    for (int i = 0; i < 60; ++i) values[s * vocab + (rng() % vocab)] = 14.0 + (rng() % 4000) / 1000.0;
  return values;
}

TEST(Sample, CandidatesMatchCpu) {
  std::mt19937 rng(27);
  const int64_t vocab = 128256, num_seqs = 24;
  Tensor logits = make_tensor(DType::kF32, {num_seqs, vocab}, peaky_values(num_seqs, vocab, rng));
  std::vector<SamplingRow> rows;
  for (int64_t s = 0; s < num_seqs; ++s) {
    const uint64_t seed = 500 + s;
    switch (s % 8) {
      case 0: rows.push_back(seeded(seed, s, 1.0f, 50)); break;
      case 1: rows.push_back(seeded(seed, s, 0.7f, 0, 0.9f)); break;
      case 2: rows.push_back(seeded(seed, s, 1.0f, 20, 0.8f, 0.05f)); break;
      case 3: rows.push_back(seeded(seed, s, 1.5f, 0, 0.95f, 0.01f)); break;
      case 4: rows.push_back(seeded(seed, s, 0.9f, 1)); break;
      case 5: rows.push_back(seeded(seed, s, 1.0f, 5000)); break;          // top_k past the candidates
      case 6: rows.push_back(seeded(seed, s, 3.0f, 0, 0.9999f)); break;   // top_p's mass past them
      default: rows.push_back(seeded(seed, s, 1.0f, 0, 1.0f, 0.1f)); break;  // neither filter
    }
  }
  expect_same(logits, rows, {}, "candidates", true);
}

TEST(Sample, RejectsHostRows) {
  Tensor logits_d = to_device(zeros(DType::kF32, {1, 10}));
  Tensor tokens_d(cuda_backend().allocator(), DType::kI32, {1});
  SamplingRow row;
  SampleParams p;
  p.logits = logits_d;
  p.rows = &row;
  p.out_tokens = tokens_d;
  EXPECT_ERROR_CONTAINS(cuda_backend().sample(p), "host memory");
}

std::pair<std::vector<double>, std::vector<double>> run_top_logprobs(Backend& backend, const Tensor& logits,
                                                                     int64_t k) {
  const bool gpu = !backend.shares_host_memory();
  std::vector<Tensor> keep;
  const int64_t num_seqs = logits.shape()[0];
  Tensor tokens(backend.allocator(), DType::kI32, {num_seqs, k});
  Tensor logprobs(backend.allocator(), DType::kF32, {num_seqs, k});
  backend.top_logprobs({.logits = to_backend(backend, logits, keep), .out_tokens = tokens,
                        .out_logprobs = logprobs});
  if (!gpu) return {to_doubles(tokens), to_doubles(logprobs)};
  return {host_doubles(tokens), host_doubles(logprobs)};
}

// Tokens exactly (ties included: lower id first), log-probabilities within 1e-4 (fp32 exp).
TEST(TopLogprobs, MatchesCpu) {
  std::mt19937 rng(25);
  for (auto [vocab, k] : {std::pair<int64_t, int64_t>{7, 7}, {1000, 5}, {128256, 20}}) {
    const int64_t num_seqs = 6;
    std::vector<double> values = random_values(num_seqs * vocab, rng, -8, 8);
    for (int64_t v = 0; v < vocab; v += 3) values[vocab + v] = 2.5;  // row 1: many ties
    values[2 * vocab + vocab - 1] = 30;                              // row 2: one dominant token
    Tensor logits = make_tensor(DType::kF32, {num_seqs, vocab}, values);
    auto [cpu_tokens, cpu_logprobs] = run_top_logprobs(cpu_backend(), logits, k);
    auto [gpu_tokens, gpu_logprobs] = run_top_logprobs(cuda_backend(), logits, k);
    const std::string what = "top_logprobs vocab " + std::to_string(vocab);
    expect_close(gpu_tokens, cpu_tokens, 0, 0, what + " tokens");
    expect_close(gpu_logprobs, cpu_logprobs, 1e-4, 0, what + " logprobs");
  }
}

std::pair<std::vector<double>, std::vector<double>> run_token_logprobs(Backend& backend, const Tensor& logits,
                                                                       const Tensor& tokens) {
  const bool gpu = !backend.shares_host_memory();
  std::vector<Tensor> keep;
  const int64_t num_seqs = logits.shape()[0];
  Tensor logprobs(backend.allocator(), DType::kF32, {num_seqs});
  Tensor ranks(backend.allocator(), DType::kI32, {num_seqs});
  backend.token_logprobs({.logits = to_backend(backend, logits, keep), .tokens = to_backend(backend, tokens, keep),
                          .out_logprobs = logprobs, .out_ranks = ranks});
  if (!gpu) return {to_doubles(logprobs), to_doubles(ranks)};
  return {host_doubles(logprobs), host_doubles(ranks)};
}

// Ranks exactly (ties share a rank), log-probabilities within 1e-4 (fp32 exp).
TEST(TokenLogprobs, MatchesCpu) {
  std::mt19937 rng(26);
  for (int64_t vocab : {int64_t{7}, int64_t{1001}, int64_t{128256}}) {
    const int64_t num_seqs = 5;
    std::vector<double> values = random_values(num_seqs * vocab, rng, -8, 8);
    for (int64_t v = 0; v < vocab; v += 3) values[vocab + v] = 2.5;  // row 1: many ties with its token
    values[2 * vocab + vocab - 1] = 30;                              // row 2: one dominant token
    std::vector<double> ids = {0, 3, static_cast<double>(vocab - 1), static_cast<double>(vocab / 2), 1};
    Tensor logits = make_tensor(DType::kF32, {num_seqs, vocab}, values);
    Tensor tokens = make_tensor(DType::kI32, {num_seqs}, ids);
    auto [cpu_logprobs, cpu_ranks] = run_token_logprobs(cpu_backend(), logits, tokens);
    auto [gpu_logprobs, gpu_ranks] = run_token_logprobs(cuda_backend(), logits, tokens);
    const std::string what = "token_logprobs vocab " + std::to_string(vocab);
    expect_close(gpu_ranks, cpu_ranks, 0, 0, what + " ranks");
    expect_close(gpu_logprobs, cpu_logprobs, 1e-4, 0, what + " logprobs");
    EXPECT_EQ(cpu_ranks[2], 1) << what;  // the dominant token
  }
}

// With logprobs, as the engine always asks; greedy rows are left as they are, so their timing
// needs no fresh copy of the logits. Sampled: top_k 50 + top_p 0.9 + min_p 0.05 on uniform logits,
// top_p 0.95 alone on peaky ones (both the candidate path), temperature alone (vLLM's throughput
// benchmark's setting: the whole-row path).
TEST(SamplePerf, Llama8B) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  const int64_t vocab = 128256;
  const SamplingRow kinds[] = {greedy(), seeded(1, 0, 0.8f, 50, 0.9f, 0.05f), seeded(1, 0, 1.0f, 0, 0.95f),
                               seeded(1, 0, 1.0f)};
  const char* const names[] = {"sample greedy", "sample top-k/p (+ logits copy)",
                               "sample top-p peaky (+ logits copy)", "sample temperature (+ logits copy)"};
  for (int64_t num_seqs : {int64_t{1}, int64_t{64}, int64_t{168}}) {
    for (int kind = 0; kind < 4; ++kind) {
      std::mt19937 rng(24);
      Tensor logits = kind == 2 ? make_tensor(DType::kF32, {num_seqs, vocab}, peaky_values(num_seqs, vocab, rng))
                                : random_tensor(DType::kF32, {num_seqs, vocab}, rng, -10, 10);
      Tensor pristine_d = to_device(logits);
      Tensor logits_d = to_device(logits);
      Tensor tokens_d(cuda_backend().allocator(), DType::kI32, {num_seqs});
      Tensor logprobs_d(cuda_backend().allocator(), DType::kF32, {num_seqs});
      std::vector<SamplingRow> rows(num_seqs, kinds[kind]);
      Tensor rows_d = to_device(TensorView(rows.data(), DType::kU8,
                                           {static_cast<int64_t>(rows.size() * sizeof(SamplingRow))}));
      SampleParams p;
      p.logits = logits_d;
      p.rows = rows_d.data_as<const SamplingRow>();
      p.out_tokens = tokens_d;
      p.out_logprobs = logprobs_d;
      report_perf(names[kind], "f32 [" + std::to_string(num_seqs) + ", 128256], logprobs", num_seqs * vocab * 4.0, 0,
                  [&] {
                    // Filtering leaves -inf behind: sampled rows start from fresh logits each time.
                    if (kind > 0) cuda_backend().copy(logits_d, pristine_d);
                    cuda_backend().sample(p);
                  }, 20);
    }
  }
}

}  // namespace
}  // namespace brisk::testing
