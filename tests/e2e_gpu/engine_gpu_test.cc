// The engine on the CUDA backend, with pure decode steps replayed from CUDA graphs (the default)
// and op by op (enforce_eager). The f32 test model with f32 activations runs every op in fp32,
// ~3e-5 from the goldens while their greedy steps have top-1 margins >= 2e-3, so every request
// must produce the Hugging Face greedy tokens exactly, whatever batch bucket (and padding) each
// of its decode steps lands in; at tensor-parallel size 2 too, where two GPUs are visible.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "core/error.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace brisk {
namespace {

void expect_goldens_from_the_engine(bool enforce_eager, int tensor_parallel_size = 1) {
  const auto dir = testing::test_data_dir() / "models" / "llama-mha-hd128-linearrope-f32";
  auto json = nlohmann::json::parse(testing::read_file(dir / "goldens.json"));
  auto prompts = json.at("prompts").get<std::vector<std::vector<int32_t>>>();
  auto greedy = json.at("greedy").get<std::vector<std::vector<int32_t>>>();
  setenv("BRISK_CUDA_ACTIVATION_DTYPE", "f32", 1);
  EngineOptions options;
  options.model_dir = dir.string();
  options.backend = "cuda";
  options.num_kv_blocks = 512;
  options.max_num_seqs = 32;
  options.enforce_eager = enforce_eager;
  options.tensor_parallel_size = tensor_parallel_size;
  std::unique_ptr<Engine> engine;
  try {
    engine = Engine::create(options);
  } catch (const Error& e) {
    unsetenv("BRISK_CUDA_ACTIVATION_DTYPE");
    if (std::string(e.what()).find("needs CUDA device 1") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
  unsetenv("BRISK_CUDA_ACTIVATION_DTYPE");
  // 19 requests of different lengths: the running batch shrinks through buckets 32, 24, 16, 8,
  // 4, 2 and 1 as they finish.
  std::vector<std::pair<size_t, std::shared_ptr<RequestStream>>> streams;
  for (size_t i = 0; i < 19; ++i) {
    const size_t p = i % prompts.size();
    GenerationRequest r{prompts[p], {}};
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = static_cast<int64_t>(greedy[p].size()) - static_cast<int64_t>(i % 7) * 3;
    streams.emplace_back(p, engine->submit(r));
  }
  for (auto& [p, stream] : streams) {
    auto result = testing::collect(*stream);
    ASSERT_EQ(result.finish_reason, FinishReason::kLength) << result.error;
    const std::vector<int32_t> expected(greedy[p].begin(), greedy[p].begin() + result.tokens.size());
    EXPECT_EQ(result.tokens, expected) << "prompt " << p << (enforce_eager ? " (eager)" : " (graphs)");
  }
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
}

TEST(EngineGpu, GreedyGoldensWithCudaGraphs) { expect_goldens_from_the_engine(false); }
TEST(EngineGpu, GreedyGoldensEager) { expect_goldens_from_the_engine(true); }
TEST(EngineGpu, GreedyGoldensAtTensorParallel2WithCudaGraphs) { expect_goldens_from_the_engine(false, 2); }
TEST(EngineGpu, GreedyGoldensAtTensorParallel2Eager) { expect_goldens_from_the_engine(true, 2); }

}  // namespace
}  // namespace brisk
