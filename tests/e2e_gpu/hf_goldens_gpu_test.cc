// End to end on the CUDA backend: every test model's prefill logits and greedy tokens against
// the Hugging Face transformers goldens (float32, eager), like tests/e2e/hf_goldens_test.cc on
// the CPU. The CUDA backend runs bf16 activations and KV cache (activation_dtype), so:
// - logits: the mean absolute error must stay below 0.08 and the largest below 1.2 (logits have
//   std ~2-3 here; bf16 rounding of every activation and of the KV cache through these random
//   models gave means of 0.011-0.066 and maxima up to 0.94 on the H200). These bounds only catch
//   gross errors: the tight end-to-end check is F32ActivationsMatchGoldensTightly below, where
//   the same kernels run in fp32 and match the goldens to ~3e-5;
// - greedy: the first 8 tokens must equal the goldens, except that the sequences may part at a
//   step where the CUDA logits of the golden token and of the chosen token are within 0.15 of
//   each other (a near tie that bf16 rounding can flip); after that the continuation differs by
//   construction and is not compared.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/make_backend.h"
#include "model/llama_model.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

constexpr double kMeanAbsTol = 0.08;
constexpr double kMaxAbsTol = 1.2;
constexpr float kNearTie = 0.15f;  // greedy: logit gap below which bf16 may flip the choice
constexpr size_t kGreedyTokens = 8;

Backend& cuda() {
  static std::unique_ptr<Backend> backend = make_backend("cuda");
  return *backend;
}

class HfGoldensGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = testing::test_data_dir() / "models" / GetParam();
    model_ = LlamaModel::load(dir_, cuda());
    auto json = nlohmann::json::parse(testing::read_file(dir_ / "goldens.json"));
    prompts_ = json.at("prompts").get<std::vector<std::vector<int32_t>>>();
    greedy_ = json.at("greedy").get<std::vector<std::vector<int32_t>>>();
    logits_ = SafetensorsFile::open(dir_ / "goldens.safetensors");
  }

  // Runs tokens after num_cached cached ones; returns the host logits of the wanted rows.
  Tensor forward(const std::vector<int32_t>& tokens, int32_t num_cached, bool all_logits, KvCache& cache) {
    SequenceChunk chunk;
    chunk.tokens = tokens;
    chunk.num_cached = num_cached;
    for (int32_t b = 0; b < cache.num_blocks(); ++b) chunk.block_table.push_back(b);
    chunk.want_all_logits = all_logits;
    BatchInputs inputs({chunk}, cache.block_size());
    const int64_t vocab = model_->config().vocab_size;
    Tensor device(cuda().allocator(), DType::kF32, {inputs.num_logits(), vocab});
    model_->forward(inputs.upload(cuda()), cache, device);
    Tensor host(cpu_allocator(), DType::kF32, device.shape());
    cuda().copy(host, device);
    return host;
  }

  fs::path dir_;
  std::unique_ptr<LlamaModel> model_;
  std::vector<std::vector<int32_t>> prompts_, greedy_;
  std::unique_ptr<SafetensorsFile> logits_;
};

TEST_P(HfGoldensGpu, PrefillLogitsMatch) {
  for (size_t i = 0; i < prompts_.size(); ++i) {
    KvCache cache(model_->config(), cuda(), model_->activation_dtype(), 8, 16);
    Tensor actual = forward(prompts_[i], 0, true, cache);
    TensorView expected = logits_->tensor("logits." + std::to_string(i));
    const int64_t count = expected.num_elements();
    ASSERT_EQ(actual.view().num_elements(), count);
    double worst = 0, total = 0;
    for (int64_t j = 0; j < count; ++j) {
      const double error = std::fabs(actual.data_as<float>()[j] - expected.data_as<float>()[j]);
      worst = std::isnan(error) ? INFINITY : std::max(worst, error);
      total += error;
    }
    EXPECT_LE(worst, kMaxAbsTol) << GetParam() << " prompt " << i;
    EXPECT_LE(total / count, kMeanAbsTol) << GetParam() << " prompt " << i;
    std::printf("%s prompt %zu: max |error| %.4f, mean %.5f\n", GetParam().c_str(), i, worst, total / count);
  }
}

TEST_P(HfGoldensGpu, GreedyTokensMatch) {
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const auto& prompt = prompts_[i];
    const size_t steps = std::min(kGreedyTokens, greedy_[i].size());
    KvCache cache(model_->config(), cuda(), model_->activation_dtype(),
                  (static_cast<int64_t>(prompt.size() + steps) + 15) / 16, 16);
    std::vector<int32_t> tokens = prompt;
    int32_t num_cached = 0;
    for (size_t step = 0; step < steps; ++step) {
      Tensor logits = forward(tokens, num_cached, false, cache);
      const float* row = logits.data_as<float>();
      const int64_t vocab = model_->config().vocab_size;
      int32_t best = 0;
      for (int64_t v = 1; v < vocab; ++v)
        if (row[v] > row[best]) best = static_cast<int32_t>(v);
      const int32_t golden = greedy_[i][step];
      if (best != golden) {
        EXPECT_LE(row[best] - row[golden], kNearTie)
            << GetParam() << " prompt " << i << " step " << step << ": chose " << best << " ("
            << row[best] << ") but the golden token " << golden << " has " << row[golden];
        break;  // a near tie flipped: the rest of the continuation legitimately differs
      }
      num_cached += static_cast<int32_t>(tokens.size());
      tokens = {best};
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, HfGoldensGpu, ::testing::ValuesIn(testing::test_model_names("goldens.json")),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The f32 checkpoint with f32 activations (BRISK_CUDA_ACTIVATION_DTYPE=f32) runs every op in
// fp32: this checks the whole CUDA forward against the goldens as tightly as the CPU e2e test
// (differences are summation order and expf only), which the bf16 run above cannot.
TEST(HfGoldensGpuF32, F32ActivationsMatchGoldensTightly) {
  setenv("BRISK_CUDA_ACTIVATION_DTYPE", "f32", 1);
  std::unique_ptr<Backend> backend = make_backend("cuda");
  unsetenv("BRISK_CUDA_ACTIVATION_DTYPE");
  const fs::path dir = testing::test_data_dir() / "models" / "llama-mha-hd128-linearrope-f32";
  auto model = LlamaModel::load(dir, *backend);
  ASSERT_EQ(model->activation_dtype(), DType::kF32);
  auto json = nlohmann::json::parse(testing::read_file(dir / "goldens.json"));
  auto prompts = json.at("prompts").get<std::vector<std::vector<int32_t>>>();
  auto goldens = SafetensorsFile::open(dir / "goldens.safetensors");
  for (size_t i = 0; i < prompts.size(); ++i) {
    KvCache cache(model->config(), *backend, DType::kF32, 8, 16);
    SequenceChunk chunk{prompts[i], 0, {0, 1, 2, 3, 4, 5, 6, 7}, true};
    BatchInputs inputs({chunk}, 16);
    Tensor device(backend->allocator(), DType::kF32, {inputs.num_logits(), model->config().vocab_size});
    model->forward(inputs.upload(*backend), cache, device);
    Tensor actual(cpu_allocator(), DType::kF32, device.shape());
    backend->copy(actual, device);
    TensorView expected = goldens->tensor("logits." + std::to_string(i));
    double worst = 0;
    for (int64_t j = 0; j < expected.num_elements(); ++j) {
      const float e = expected.data_as<float>()[j];
      const float a = actual.data_as<float>()[j];
      worst = std::max(worst, static_cast<double>(std::fabs(a - e)));
      ASSERT_NEAR(a, e, 1e-3 + 1e-3 * std::fabs(e)) << "prompt " << i << " element " << j;
    }
    std::printf("f32 activations, prompt %zu: max |error| %.2e\n", i, worst);
  }
}

}  // namespace
}  // namespace brisk
