// The int4 test models (AutoAWQ, GPTQ) on the CUDA backend (gemm_w4a16) against the CPU
// reference that runs the same folder with its int4 layers dequantized to dense f32 weights:
// - greedy: 12 tokens of each prompt, computed step by step, must equal the reference's, except
//   that the sequences may part at a step where the CUDA logits of the reference token and of
//   the chosen one are within 0.15 (a near tie that bf16 activations can flip; see
//   hf_goldens_gpu_test.cc), after which the continuation is not compared;
// - prefill logits (prompts of 5 and 29 tokens: the mma.sync kernel and, where K is a multiple
//   of 128, the wgmma kernel) within the bf16 bounds of hf_goldens_gpu_test.cc (max 1.2, mean
//   0.08), the mean widened to 0.12: the wgmma kernel rounds a checkpoint's f16 scales to bf16
//   before it rounds each weight (as vLLM's Marlin, which converts the scales to the activation
//   dtype at load), a second rounding the mma.sync kernel does not make (w4a16_wgmma.cu says
//   why). The GPTQ model's 29-token prompt: mean 0.088 on the H200;
// - with f32 activations (BRISK_CUDA_ACTIVATION_DTYPE=f32): the int4 kernel's logits within
//   2e-4 + 2e-4 * |x| of the same folder dequantized to dense f32 on the GPU (see the test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/make_backend.h"
#include "model/llama_model.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

constexpr float kNearTie = 0.15f;
constexpr int kGreedyTokens = 12;
const std::vector<std::string> kQuantModels = {"llama-gqa4-hd64-tied-awq-g32", "internlm2-gqa2-hd32-gptq-g64"};

std::vector<std::vector<int32_t>> prompts() {
  std::vector<int32_t> long_prompt;
  for (int i = 0; i < 29; ++i) long_prompt.push_back((i * 37 + 11) % 500 + 3);
  return {{1, 17, 300, 42, 5}, long_prompt};
}

// Logits of `tokens` after num_cached cached tokens, on the host (all rows or the last one).
Tensor forward(LlamaModel& model, Backend& backend, const std::vector<int32_t>& tokens, int32_t num_cached,
               bool all_logits, KvCache& cache) {
  SequenceChunk chunk{tokens, num_cached, {0, 1, 2, 3, 4, 5, 6, 7}, all_logits};
  BatchInputs inputs({chunk}, 16);
  Tensor out(backend.allocator(), DType::kF32, {inputs.num_logits(), model.config().vocab_size});
  model.forward(inputs.upload(backend), cache, out);
  Tensor host(cpu_allocator(), DType::kF32, out.shape());
  backend.copy(host, out);
  return host;
}

int32_t argmax(const float* row, int64_t vocab) {
  int32_t best = 0;
  for (int64_t v = 1; v < vocab; ++v)
    if (row[v] > row[best]) best = static_cast<int32_t>(v);
  return best;
}

class QuantModelGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = testing::test_data_dir() / "models" / GetParam();
    cpu_ = make_cpu_backend();
    ModelLoadOptions options;
    options.dequantize_int4 = true;
    reference_ = LlamaModel::load(dir_, *cpu_, options);
  }
  Backend& cuda() {
    static std::unique_ptr<Backend> backend = make_backend("cuda");
    return *backend;
  }
  fs::path dir_;
  std::unique_ptr<Backend> cpu_;
  std::unique_ptr<LlamaModel> reference_;
};

TEST_P(QuantModelGpu, GreedyTokensMatchDequantizedCpu) {
  auto model = LlamaModel::load(dir_, cuda());
  const int64_t vocab = model->config().vocab_size;
  for (const auto& prompt : prompts()) {
    KvCache gpu_cache(model->config(), cuda(), model->activation_dtype(), 8, 16);
    KvCache cpu_cache(reference_->config(), *cpu_, reference_->activation_dtype(), 8, 16);
    std::vector<int32_t> tokens = prompt;
    int32_t num_cached = 0;
    for (int step = 0; step < kGreedyTokens; ++step) {
      Tensor expected = forward(*reference_, *cpu_, tokens, num_cached, false, cpu_cache);
      Tensor actual = forward(*model, cuda(), tokens, num_cached, false, gpu_cache);
      const int32_t want = argmax(expected.data_as<float>(), vocab);
      const int32_t got = argmax(actual.data_as<float>(), vocab);
      if (got != want) {
        const float* row = actual.data_as<float>();
        EXPECT_LE(row[got] - row[want], kNearTie) << GetParam() << " step " << step << ": chose " << got
                                                  << " but the reference chose " << want;
        break;
      }
      num_cached += static_cast<int32_t>(tokens.size());
      tokens = {got};
    }
  }
}

TEST_P(QuantModelGpu, PrefillLogitsMatchDequantizedCpu) {
  auto model = LlamaModel::load(dir_, cuda());
  for (const auto& prompt : prompts()) {
    KvCache gpu_cache(model->config(), cuda(), model->activation_dtype(), 8, 16);
    KvCache cpu_cache(reference_->config(), *cpu_, reference_->activation_dtype(), 8, 16);
    Tensor expected = forward(*reference_, *cpu_, prompt, 0, true, cpu_cache);
    Tensor actual = forward(*model, cuda(), prompt, 0, true, gpu_cache);
    double worst = 0, total = 0;
    const int64_t count = expected.view().num_elements();
    for (int64_t j = 0; j < count; ++j) {
      const double error = std::fabs(actual.data_as<float>()[j] - expected.data_as<float>()[j]);
      worst = std::isnan(error) ? INFINITY : std::max(worst, error);
      total += error;
    }
    EXPECT_LE(worst, 1.2) << GetParam() << " prompt of " << prompt.size();
    EXPECT_LE(total / count, 0.12) << GetParam() << " prompt of " << prompt.size();
    std::printf("%s prompt of %zu: max |error| %.4f, mean %.5f\n", GetParam().c_str(), prompt.size(), worst,
                total / count);
  }
}

// f32 activations, the int4 kernels against the same folder loaded with its int4 layers
// dequantized to dense f32 weights (full-fp32 GEMMs), both on the GPU, so the model's int4
// wiring (fused qkv / gate_up, InternLM2's wqkv) is checked tightly: only fp32 summation order
// differs inside the layers, and the 16-bit lm_head rounds the final hidden state to its dtype
// in both runs (gemm_runner.h), which hides most of that (the H200 gave identical logits).
// Against the CPU, which does not round there, the logits move by up to ~1e-2 instead.
TEST_P(QuantModelGpu, F32ActivationsMatchTheDequantizedModel) {
  setenv("BRISK_CUDA_ACTIVATION_DTYPE", "f32", 1);
  std::unique_ptr<Backend> backend = make_backend("cuda");
  unsetenv("BRISK_CUDA_ACTIVATION_DTYPE");
  auto model = LlamaModel::load(dir_, *backend);
  ModelLoadOptions dense;
  dense.dequantize_int4 = true;
  auto reference = LlamaModel::load(dir_, *backend, dense);
  for (const auto& prompt : prompts()) {
    KvCache cache(model->config(), *backend, DType::kF32, 8, 16);
    KvCache reference_cache(reference->config(), *backend, DType::kF32, 8, 16);
    Tensor expected = forward(*reference, *backend, prompt, 0, true, reference_cache);
    Tensor actual = forward(*model, *backend, prompt, 0, true, cache);
    double worst = 0;
    for (int64_t j = 0; j < expected.view().num_elements(); ++j) {
      const float e = expected.data_as<float>()[j];
      worst = std::max(worst, static_cast<double>(std::fabs(actual.data_as<float>()[j] - e)));
      ASSERT_NEAR(actual.data_as<float>()[j], e, 2e-4 + 2e-4 * std::fabs(e))
          << GetParam() << " prompt of " << prompt.size() << " element " << j;
    }
    std::printf("%s prompt of %zu, f32 activations: max |int4 - dequantized| %.2e\n", GetParam().c_str(),
                prompt.size(), worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, QuantModelGpu, ::testing::ValuesIn(kQuantModels), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

}  // namespace
}  // namespace brisk
