// End to end on the CPU backend: every test model's logits and greedy tokens against the
// Hugging Face transformers goldens recorded by tools/make_test_models.py (float32, eager).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "brisk/engine.h"
#include "engine_test_util.h"
#include "model/llama_model.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

// Both sides compute in fp32 from the same stored weights; differences are summation order
// only (observed ~1e-5). Greedy tokens must match exactly: the goldens were drawn so that every
// greedy step has a top-1 margin of at least 2e-3.
constexpr float kLogitAbsTol = 2e-4f;
constexpr float kLogitRelTol = 1e-4f;

GenerationRequest greedy_request(const std::vector<int32_t>& prompt, size_t num_tokens) {
  GenerationRequest request{prompt, {}};
  request.sampling.temperature = 0.0f;
  request.sampling.max_tokens = static_cast<int64_t>(num_tokens);
  request.sampling.ignore_eos = true;
  return request;
}

struct Goldens {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<int32_t>> greedy;
  std::unique_ptr<SafetensorsFile> logits;  // "logits.<i>": [prompt length, vocab] f32
};

Goldens read_goldens(const fs::path& dir) {
  auto json = nlohmann::json::parse(testing::read_file(dir / "goldens.json"));
  Goldens g;
  g.prompts = json.at("prompts").get<std::vector<std::vector<int32_t>>>();
  g.greedy = json.at("greedy").get<std::vector<std::vector<int32_t>>>();
  g.logits = SafetensorsFile::open(dir / "goldens.safetensors");
  return g;
}

class HfGoldens : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = testing::test_data_dir() / "models" / GetParam();
    backend_ = make_cpu_backend();
    model_ = LlamaModel::load(dir_, *backend_);
    goldens_ = read_goldens(dir_);
  }

  // Runs the prompt's tokens in chunks of the given sizes (the last chunk takes the rest) and
  // returns the logits of every token of the final chunk.
  Tensor prefill(const std::vector<int32_t>& prompt, std::vector<size_t> chunk_sizes, KvCache& cache) {
    SequenceChunk chunk;
    for (int32_t b = 0; b < cache.num_blocks(); ++b) chunk.block_table.push_back(b);
    chunk.want_all_logits = true;
    size_t done = 0;
    Tensor logits;
    chunk_sizes.push_back(prompt.size());
    for (size_t size : chunk_sizes) {
      size = std::min(size, prompt.size() - done);
      if (size == 0) continue;
      chunk.tokens.assign(prompt.begin() + done, prompt.begin() + done + size);
      chunk.num_cached = static_cast<int32_t>(done);
      BatchInputs inputs({chunk}, cache.block_size());
      logits = Tensor(cpu_allocator(), DType::kF32, {static_cast<int64_t>(size), model_->config().vocab_size});
      model_->forward(inputs.upload(*backend_), cache, logits);
      done += size;
    }
    return logits;
  }

  void expect_logits_match(const Tensor& actual, size_t prompt_index, size_t first_row) {
    TensorView expected = goldens_.logits->tensor("logits." + std::to_string(prompt_index));
    const int64_t vocab = expected.size(1);
    float worst = 0;
    for (int64_t r = 0; r < actual.shape()[0]; ++r) {
      for (int64_t v = 0; v < vocab; ++v) {
        float e = expected.data_as<float>()[(first_row + r) * vocab + v];
        float a = actual.data_as<float>()[r * vocab + v];
        worst = std::max(worst, std::fabs(a - e));
        ASSERT_NEAR(a, e, kLogitAbsTol + kLogitRelTol * std::fabs(e))
            << GetParam() << " prompt " << prompt_index << " row " << first_row + r << " token " << v;
      }
    }
    RecordProperty("max_abs_logit_error", std::to_string(worst));
  }

  fs::path dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<LlamaModel> model_;
  Goldens goldens_;
};

TEST_P(HfGoldens, PrefillLogitsMatch) {
  for (size_t i = 0; i < goldens_.prompts.size(); ++i) {
    KvCache cache(model_->config(), *backend_, model_->activation_dtype(), 8, 16);
    Tensor logits = prefill(goldens_.prompts[i], {}, cache);
    expect_logits_match(logits, i, 0);
  }
}

TEST_P(HfGoldens, ChunkedPrefillContinuesCachedContext) {
  // Chunks of 3, 7, rest, in blocks of 4 so chunks straddle block boundaries.
  const auto& prompt = goldens_.prompts.back();
  KvCache cache(model_->config(), *backend_, model_->activation_dtype(), 16, 4);
  Tensor logits = prefill(prompt, {3, 7}, cache);
  expect_logits_match(logits, goldens_.prompts.size() - 1, 10);
}

TEST_P(HfGoldens, GreedyTokensMatch) {
  EngineOptions options;
  options.model_dir = dir_.string();
  options.num_kv_blocks = 64;
  auto engine = Engine::create(options);
  for (size_t i = 0; i < goldens_.prompts.size(); ++i) {
    auto result = testing::run_request(*engine, greedy_request(goldens_.prompts[i], goldens_.greedy[i].size()));
    EXPECT_EQ(result.tokens, goldens_.greedy[i]) << GetParam() << " prompt " << i;
    EXPECT_EQ(result.finish_reason, FinishReason::kLength);
  }
}

// The same through recorded graphs (backend "cpu-graphs"): the prompts decode together, in the
// decode graphs of buckets 1 to 8 with padding rows.
TEST_P(HfGoldens, GreedyTokensMatchThroughRecordedGraphs) {
  EngineOptions options;
  options.model_dir = dir_.string();
  options.num_kv_blocks = 64;
  options.backend = "cpu-graphs";
  options.max_num_seqs = 8;
  auto engine = Engine::create(options);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < goldens_.prompts.size(); ++i)
    streams.push_back(engine->submit(greedy_request(goldens_.prompts[i], goldens_.greedy[i].size())));
  for (size_t i = 0; i < streams.size(); ++i)
    EXPECT_EQ(testing::collect(*streams[i]).tokens, goldens_.greedy[i]) << GetParam() << " prompt " << i;
  EXPECT_GT(engine->stats().num_graph_steps, 0);
}

TEST_P(HfGoldens, BatchedPrefillEqualsSinglePrefill) {
  // All prompts as one ragged batch with interleaved blocks give the same logits bit for bit.
  const int block_size = 4;
  KvCache cache(model_->config(), *backend_, model_->activation_dtype(), 64, block_size);
  std::vector<SequenceChunk> chunks(goldens_.prompts.size());
  for (size_t s = 0; s < chunks.size(); ++s) {
    chunks[s].tokens = goldens_.prompts[s];
    for (int32_t b = 0; b < 16; ++b) chunks[s].block_table.push_back(b * static_cast<int32_t>(chunks.size()) + static_cast<int32_t>(s));
  }
  BatchInputs inputs(chunks, block_size);
  Tensor logits(cpu_allocator(), DType::kF32, {inputs.num_logits(), model_->config().vocab_size});
  model_->forward(inputs.upload(*backend_), cache, logits);
  for (size_t s = 0; s < chunks.size(); ++s) {
    KvCache single_cache(model_->config(), *backend_, model_->activation_dtype(), 16, block_size);
    SequenceChunk single = chunks[s];
    single.block_table.clear();
    for (int32_t b = 0; b < 16; ++b) single.block_table.push_back(b);
    BatchInputs one({single}, block_size);
    Tensor expected(cpu_allocator(), DType::kF32, {1, model_->config().vocab_size});
    model_->forward(one.upload(*backend_), single_cache, expected);
    for (int64_t v = 0; v < model_->config().vocab_size; ++v)
      ASSERT_EQ(logits.data_as<float>()[s * model_->config().vocab_size + v], expected.data_as<float>()[v])
          << "sequence " << s << " token " << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, HfGoldens, ::testing::ValuesIn(testing::test_model_names("goldens.json")),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(InternLM2, ConvertedLlamaGivesIdenticalLogits) {
  auto backend = make_cpu_backend();
  auto llama = LlamaModel::load(testing::test_data_dir() / "models" / "llama-gqa2-hd32-bf16", *backend);
  auto internlm2 = LlamaModel::load(testing::test_data_dir() / "models" / "internlm2-gqa2-hd32-bf16", *backend);
  EXPECT_EQ(internlm2->config().architecture, Architecture::kInternLM2);
  std::vector<int32_t> prompt{1, 17, 300, 42, 5, 9, 77, 128, 255, 3, 11};
  SequenceChunk chunk{prompt, 0, {0, 1, 2, 3}, true};
  BatchInputs inputs({chunk}, 16);
  const int64_t vocab = llama->config().vocab_size;
  Tensor a(cpu_allocator(), DType::kF32, {static_cast<int64_t>(prompt.size()), vocab});
  Tensor b(cpu_allocator(), DType::kF32, {static_cast<int64_t>(prompt.size()), vocab});
  KvCache cache_a(llama->config(), *backend, DType::kF32, 4, 16), cache_b(internlm2->config(), *backend, DType::kF32, 4, 16);
  llama->forward(inputs.upload(*backend), cache_a, a);
  internlm2->forward(inputs.upload(*backend), cache_b, b);
  for (int64_t i = 0; i < a.shape().num_elements(); ++i) ASSERT_EQ(a.data_as<float>()[i], b.data_as<float>()[i]);
}

}  // namespace
}  // namespace brisk
