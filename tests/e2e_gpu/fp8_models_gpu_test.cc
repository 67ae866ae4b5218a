// The FP8 test models (compressed-tensors per-channel and static per-tensor, block-wise fp8; made
// by tools/make_quant_test_models.py with numpy) on the CUDA backend:
// - every canonical linear layer on the folder's probe inputs against the script's float64
//   products, within the FP8 tensor cores' summation error (ops/gemm_fp8_parity_test.cc:
//   2^-12 of the sum of the products' magnitudes) plus bf16's rounding of y;
// - the models end to end against the same folders on the CPU. Each layer re-quantizes its
//   input, so where the GPU's bf16 activations (or fp32 summation order) move a value across an
//   e4m3 rounding boundary that element changes by a whole e4m3 step (6%), and these random-weight
//   test models amplify such changes: the bound is loose (mean |error| within 10% of the largest
//   logit; measured 3-5%), a check that the layers are wired, not of FP8's accuracy (that is
//   tests/e2e/awq_quantize_test.cc's perplexity test on a trained model).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/make_backend.h"
#include "model/llama_model.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kFp8Models = {"llama-gqa4-hd64-tied-fp8-channel", "qwen2-gqa2-hd64-bias-tied-fp8-tensor",
                                             "qwen3-gqa4-hd128-qknorm-fp8-block"};

Backend& cuda() {
  static std::unique_ptr<Backend> backend = make_backend("cuda");
  return *backend;
}

class Fp8ModelGpu : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return testing::test_data_dir() / "models" / GetParam(); }
};

TEST_P(Fp8ModelGpu, LinearLayersMatchProbes) {
  const ModelConfig config = ModelConfig::from_file(dir() / "config.json");
  auto cpu = make_cpu_backend();
  const ModelWeights host = load_weights(config, dir(), *cpu);
  const ModelWeights device = load_weights(config, dir(), cuda());
  auto probes = SafetensorsFile::open(dir() / "probes.safetensors");
  for (size_t i = 0; i < host.layers.size(); ++i) {
    const std::pair<const char*, const LinearWeight*> linears[] = {
        {"qkv", &host.layers[i].qkv}, {"o_proj", &host.layers[i].o_proj}, {"gate_up", &host.layers[i].gate_up},
        {"down", &host.layers[i].down}};
    const LinearWeight* on_device[] = {&device.layers[i].qkv, &device.layers[i].o_proj, &device.layers[i].gate_up,
                                       &device.layers[i].down};
    for (int l = 0; l < 4; ++l) {
      const LinearWeight& w = *linears[l].second;
      const std::string key = std::to_string(i) + "." + linears[l].first;
      const TensorView x = probes->tensor(key + ".x"), expected = probes->tensor(key + ".y");
      Tensor x_d(cuda().allocator(), DType::kF32, x.shape()), y_d(cuda().allocator(), DType::kF32, expected.shape());
      cuda().copy(x_d, x);
      run_linear(cuda(), x_d, *on_device[l], {}, y_d);
      Tensor y(cpu_allocator(), DType::kF32, expected.shape());
      cuda().copy(y, y_d);
      const cpu::Fp8QuantizedRows q = cpu::quantize_fp8_activations(x, w.fp8_block_size, w.input_scale);
      const int64_t n = w.fp8.size(0), k = w.fp8.size(1), groups = w.fp8_scale.size(1);
      for (int64_t m = 0; m < x.size(0); ++m)
        for (int64_t r = 0; r < n; ++r) {
          double magnitude = 0;
          for (int64_t c = 0; c < k; ++c) {
            const int64_t g = w.fp8_block_size > 0 ? c / w.fp8_block_size : 0;
            magnitude += std::fabs(q.q[m * k + c] * q.scales[m * q.groups + g] *
                                   e4m3_to_float(w.fp8.data_as<const uint8_t>()[r * k + c]) *
                                   w.fp8_scale.data_as<const float>()[r * groups + g]);
          }
          const float e = expected.data_as<float>()[m * n + r];
          ASSERT_NEAR(y.data_as<float>()[m * n + r], e, std::ldexp(magnitude, -12) + 1e-5 * std::fabs(e) + 1e-6)
              << GetParam() << " " << key << " [" << m << ", " << r << "]";
        }
    }
  }
}

TEST_P(Fp8ModelGpu, PrefillLogitsFollowTheCpu) {
  auto cpu = make_cpu_backend();
  auto model = LlamaModel::load(dir(), cuda());
  auto reference = LlamaModel::load(dir(), *cpu);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 29; ++i) prompt.push_back((i * 37 + 11) % 500 + 3);
  auto logits = [&](LlamaModel& m, Backend& backend) {
    KvCache cache(m.config(), backend, m.activation_dtype(), 8, 16);
    BatchInputs inputs({SequenceChunk{prompt, 0, {0, 1, 2, 3, 4, 5, 6, 7}, true}}, 16);
    Tensor out(backend.allocator(), DType::kF32, {inputs.num_logits(), m.config().vocab_size});
    m.forward(inputs.upload(backend), cache, out);
    Tensor host(cpu_allocator(), DType::kF32, out.shape());
    backend.copy(host, out);
    return host;
  };
  const Tensor expected = logits(*reference, *cpu), actual = logits(*model, cuda());
  double worst = 0, total = 0, largest = 0;
  const int64_t count = expected.view().num_elements();
  for (int64_t j = 0; j < count; ++j) {
    const double error = std::fabs(actual.data_as<float>()[j] - expected.data_as<float>()[j]);
    ASSERT_TRUE(std::isfinite(error)) << GetParam() << " logit " << j;
    worst = std::max(worst, error);
    total += error;
    largest = std::max(largest, static_cast<double>(std::fabs(expected.data_as<float>()[j])));
  }
  std::printf("%s: max |error| %.4f, mean %.5f, largest logit %.3f\n", GetParam().c_str(), worst, total / count, largest);
  EXPECT_LE(total / count, 0.1 * largest) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, Fp8ModelGpu, ::testing::ValuesIn(kFp8Models), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

}  // namespace
}  // namespace brisk
