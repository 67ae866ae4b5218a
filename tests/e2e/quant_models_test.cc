// The int4 test models (AutoAWQ and GPTQ folders written by tools/make_quant_test_models.py
// with numpy, independently of brisk's unpacking code) on the CPU backend:
// - probes: every canonical (fused, for InternLM2 regrouped) linear layer times the probe inputs
//   matches the script's float64 product of its own dequantized weights (fp32 summation:
//   |error| <= 1e-5 * sqrt(K) + 1e-5 * |y|);
// - the model loaded int4 (gemm_w4a16) and loaded dequantized to dense f32 give bit-identical
//   prefill logits and the same greedy tokens (the CPU's int4 op is exact against its dequantized
//   weights, see backend/cpu/gemm.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "brisk/status.h"
#include "model/llama_model.h"
#include "model/safetensors.h"
#include "quant/model_quantizer.h"
#include "test_util.h"
#include "unit/backend_cpu/op_test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kQuantModels = {"llama-gqa4-hd64-tied-awq-g32", "internlm2-gqa2-hd32-gptq-g64"};

class QuantModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = testing::test_data_dir() / "models" / GetParam();
    backend_ = make_cpu_backend();
  }
  fs::path dir_;
  std::unique_ptr<Backend> backend_;
};

TEST_P(QuantModel, LinearLayersMatchProbes) {
  ModelConfig config = ModelConfig::from_file(dir_ / "config.json");
  ASSERT_NE(config.quantization.method, QuantMethod::kNone);
  auto probes = SafetensorsFile::open(dir_ / "probes.safetensors");
  for (bool dequantized : {false, true}) {
    ModelWeights weights = load_weights(config, dir_, *backend_, dequantized);
    for (size_t i = 0; i < weights.layers.size(); ++i) {
      const LayerWeights& layer = weights.layers[i];
      const std::pair<const char*, const LinearWeight*> linears[] = {
          {"qkv", &layer.qkv}, {"o_proj", &layer.o_proj}, {"gate_up", &layer.gate_up}, {"down", &layer.down}};
      for (const auto& [name, linear] : linears) {
        const std::string key = std::to_string(i) + "." + name;
        EXPECT_EQ(linear->quantized(), !dequantized) << key;
        TensorView x = probes->tensor(key + ".x"), expected = probes->tensor(key + ".y");
        Tensor y(cpu_allocator(), DType::kF32, expected.shape());
        run_linear(*backend_, x, *linear, {}, y);
        const double atol = 1e-5 * std::sqrt(static_cast<double>(x.size(1)));
        for (int64_t j = 0; j < expected.num_elements(); ++j) {
          const float e = expected.data_as<float>()[j];
          ASSERT_NEAR(y.data_as<float>()[j], e, atol + 1e-5 * std::fabs(e))
              << GetParam() << " layer " << key << (dequantized ? " dequantized" : " int4") << " element " << j;
        }
      }
    }
  }
}

// Greedy decoding with full logits per step, one sequence, on the CPU.
std::vector<std::vector<float>> greedy_logits(LlamaModel& model, Backend& backend, std::vector<int32_t> prompt,
                                              int steps) {
  KvCache cache(model.config(), backend, model.activation_dtype(), 8, 16);
  std::vector<std::vector<float>> out;
  std::vector<int32_t> tokens = prompt;
  int32_t num_cached = 0;
  const int64_t vocab = model.config().vocab_size;
  for (int step = 0; step < steps; ++step) {
    SequenceChunk chunk{tokens, num_cached, {0, 1, 2, 3, 4, 5, 6, 7}, false};
    BatchInputs inputs({chunk}, 16);
    Tensor logits(cpu_allocator(), DType::kF32, {1, vocab});
    model.forward(inputs.upload(backend), cache, logits);
    out.emplace_back(logits.data_as<float>(), logits.data_as<float>() + vocab);
    num_cached += static_cast<int32_t>(tokens.size());
    tokens = {static_cast<int32_t>(std::max_element(out.back().begin(), out.back().end()) - out.back().begin())};
  }
  return out;
}

void expect_int4_equals_dequantized(const fs::path& dir, Backend& backend) {
  auto int4 = LlamaModel::load(dir, backend);
  ModelLoadOptions options;
  options.dequantize_int4 = true;
  auto reference = LlamaModel::load(dir, backend, options);
  for (const std::vector<int32_t>& prompt : {std::vector<int32_t>{1, 17, 300, 42, 5},
                                             std::vector<int32_t>{1, 9, 77, 128, 255, 3, 11, 400, 2, 8}}) {
    auto a = greedy_logits(*int4, backend, prompt, 12);
    auto b = greedy_logits(*reference, backend, prompt, 12);
    ASSERT_EQ(a.size(), b.size());
    for (size_t step = 0; step < a.size(); ++step) ASSERT_EQ(a[step], b[step]) << dir << " step " << step;
  }
}

TEST_P(QuantModel, Int4EqualsDequantizedReference) { expect_int4_equals_dequantized(dir_, *backend_); }

INSTANTIATE_TEST_SUITE_P(Models, QuantModel, ::testing::ValuesIn(kQuantModels), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

// brisk's own quantizer on the architectures the committed folders do not cover (Qwen2: q/k/v
// biases and tied embeddings; Qwen3: q/k norms, sharded checkpoint): the folder loads, its int4
// layers are within half a scale step of the dense weights, and it runs like its reference.
TEST(QuantModel, QuantizedQwenFoldersRun) {
  auto backend = make_cpu_backend();
  for (const char* name : {"qwen2-gqa2-hd64-bias-tied-bf16", "qwen3-gqa4-hd128-qknorm-bf16"}) {
    const fs::path src = testing::test_data_dir() / "models" / name;
    const fs::path out = testing::make_temp_dir("quantized") / name;
    quantize_model(src, out, {"rtn", 32});
    ModelConfig config = ModelConfig::from_file(out / "config.json");
    EXPECT_EQ(config.quantization.method, QuantMethod::kAwq);
    EXPECT_EQ(config.quantization.group_size, 32);
    ModelWeights dense = load_weights(ModelConfig::from_file(src / "config.json"), src, *backend);
    ModelWeights quantized = load_weights(config, out, *backend, /*dequantize_int4=*/true);
    const LinearWeight& a = dense.layers[0].gate_up;
    const LinearWeight& b = quantized.layers[0].gate_up;
    ASSERT_FALSE(a.quantized());
    std::vector<double> original = testing::to_doubles(a.dense), deq = testing::to_doubles(b.dense);
    ASSERT_EQ(original.size(), deq.size());
    double worst = 0;
    for (size_t i = 0; i < original.size(); ++i) worst = std::max(worst, std::fabs(original[i] - deq[i]));
    EXPECT_LT(worst, 0.5) << name;  // weights of these models have std 0.25: steps are < 0.2
    EXPECT_GT(worst, 0.0) << name;
    expect_int4_equals_dequantized(out, *backend);
  }
}

TEST(QuantModel, DummyWeightsFollowTheQuantizationConfig) {
  auto backend = make_cpu_backend();
  ModelConfig config = ModelConfig::from_file(testing::test_data_dir() / "models" / "llama-gqa4-hd64-tied-awq-g32" /
                                              "config.json");
  ModelWeights int4 = make_dummy_weights(config, *backend, 1);
  EXPECT_TRUE(int4.layers[0].down.quantized());
  EXPECT_EQ(int4.layers[0].down.group_size, 32);
  EXPECT_EQ(int4.layers[0].gate_up.scales.shape(), Shape({2 * config.intermediate_size, config.hidden_size / 32}));
  config.quantization = {};
  ModelWeights dense = make_dummy_weights(config, *backend, 1);
  EXPECT_FALSE(dense.layers[0].down.quantized());
  EXPECT_LT(int4.num_bytes(), dense.num_bytes());
}

TEST(QuantModel, MixedFusedLayersAreRejected) {
  // A checkpoint whose q_proj is int4 but k_proj dense cannot be fused into one qkv layer.
  const fs::path src = testing::test_data_dir() / "models" / "llama-gqa4-hd64-tied-awq-g32";
  const fs::path dir = testing::make_temp_dir("mixed_quant");
  fs::copy_file(src / "config.json", dir / "config.json");
  Checkpoint checkpoint = Checkpoint::open(src);
  std::vector<SafetensorsWriteEntry> entries;
  std::vector<Tensor> keep;
  for (const std::string& name : checkpoint.tensor_names()) {
    if (name.rfind("model.layers.0.self_attn.k_proj.", 0) == 0) continue;
    entries.push_back({name, checkpoint.tensor(name)});
  }
  keep.emplace_back(cpu_allocator(), DType::kBF16, Shape{64, 64});
  entries.push_back({"model.layers.0.self_attn.k_proj.weight", keep.back()});
  write_safetensors(dir / "model.safetensors", entries);
  auto backend = make_cpu_backend();
  testing::expect_error([&] { LlamaModel::load(dir, *backend); }, ErrorCode::kUnsupported,
                        {"self_attn.q_proj", "self_attn.k_proj", "only one is quantized"});
}

}  // namespace
}  // namespace brisk
