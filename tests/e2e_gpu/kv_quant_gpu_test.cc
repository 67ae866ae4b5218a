// --kv-cache-dtype int8 / int4 / fp8 on the CUDA backend against the CPU backend with the same
// cache dtype (the f32 head_dim 128 test model, f32 activations): both quantize each new K / V
// row into the same codes (tests/ops/kv_quant_parity_test.cc checks the bits), so their greedy
// continuations agree until a near-tie, where the CUDA kernels' f16 dequantization may pick the
// other token. A broken decode kernel diverges at the second token, a broken prefill kernel at
// the first; the test asks for the first half of every continuation on average. Decode steps run
// from CUDA graphs (the default).
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace brisk {
namespace {

constexpr int kTokens = 24;

std::vector<std::vector<int32_t>> greedy(const std::string& backend, const std::string& kv_cache_dtype,
                                         const std::vector<std::vector<int32_t>>& prompts) {
  const auto dir = testing::test_data_dir() / "models" / "llama-mha-hd128-linearrope-f32";
  setenv("BRISK_CUDA_ACTIVATION_DTYPE", "f32", 1);
  EngineOptions options;
  options.model_dir = dir.string();
  options.backend = backend;
  options.num_kv_blocks = 256;
  options.max_num_seqs = 16;
  options.kv_cache_dtype = kv_cache_dtype;
  auto engine = Engine::create(options);
  unsetenv("BRISK_CUDA_ACTIVATION_DTYPE");
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& prompt : prompts) {
    GenerationRequest r{prompt, {}};
    r.sampling.temperature = 0.0f;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = kTokens;
    streams.push_back(engine->submit(r));
  }
  std::vector<std::vector<int32_t>> out;
  for (auto& stream : streams) {
    auto result = testing::collect(*stream);
    EXPECT_EQ(result.finish_reason, FinishReason::kLength) << result.error;
    out.push_back(result.tokens);
  }
  EXPECT_EQ(engine->stats().num_blocks_in_use, 0);
  return out;
}

TEST(KvQuantGpu, GreedyContinuationsFollowTheCpu) {
  const auto dir = testing::test_data_dir() / "models" / "llama-mha-hd128-linearrope-f32";
  auto json = nlohmann::json::parse(testing::read_file(dir / "goldens.json"));
  auto prompts = json.at("prompts").get<std::vector<std::vector<int32_t>>>();
  for (const std::string dtype : {"int8", "int4", "fp8"}) {
    const auto cpu = greedy("cpu", dtype, prompts);
    const auto cuda = greedy("cuda", dtype, prompts);
    ASSERT_EQ(cpu.size(), cuda.size());
    double agreed = 0;
    for (size_t p = 0; p < cpu.size(); ++p) {
      size_t n = 0;
      while (n < cpu[p].size() && n < cuda[p].size() && cpu[p][n] == cuda[p][n]) ++n;
      EXPECT_GE(n, 1u) << dtype << " prompt " << p << ": the first token (prefill) differs";
      agreed += static_cast<double>(n) / kTokens;
    }
    EXPECT_GE(agreed / static_cast<double>(cpu.size()), 0.5) << dtype;
  }
}

}  // namespace
}  // namespace brisk
