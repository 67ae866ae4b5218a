// The int4 test models (AutoAWQ and GPTQ folders written by tools/make_quant_test_models.py
// with numpy, independently of brisk's unpacking code) on the CPU backend:
// - probes: every canonical (fused, for InternLM2 regrouped) linear layer times the probe inputs
//   matches the script's float64 product of its own dequantized weights (fp32 summation:
//   |error| <= 1e-5 * sqrt(K) + 1e-5 * |y|);
// - the model loaded int4 (gemm_w4a16) and loaded dequantized to dense f32 give bit-identical
//   prefill logits and the same greedy tokens (the CPU's int4 op is exact against its dequantized
//   weights, see backend/cpu/gemm.cc).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
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

// A layer's canonical linear layers under the probes' names.
std::array<std::pair<const char*, const LinearWeight*>, 4> named_linears(const LayerWeights& layer) {
  return {{{"qkv", &layer.qkv}, {"o_proj", &layer.o_proj}, {"gate_up", &layer.gate_up}, {"down", &layer.down}}};
}

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
      for (const auto& [name, linear] : named_linears(weights.layers[i])) {
        const std::string key = std::to_string(i) + "." + name;
        EXPECT_EQ(linear->is_int4(), !dequantized) << key;
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
    ASSERT_FALSE(a.is_int4());
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
  EXPECT_TRUE(int4.layers[0].down.is_int4());
  EXPECT_EQ(int4.layers[0].down.group_size, 32);
  EXPECT_EQ(int4.layers[0].gate_up.scales.shape(), Shape({2 * config.intermediate_size, config.hidden_size / 32}));
  config.quantization = {};
  ModelWeights dense = make_dummy_weights(config, *backend, 1);
  EXPECT_FALSE(dense.layers[0].down.is_int4());
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
                        {"self_attn.q_proj", "self_attn.k_proj", "quantized differently"});
}

// The FP8 test models (tools/make_quant_test_models.py: numpy, independently of brisk's code):
// compressed-tensors per-channel weights with per-token activations, per-tensor weights with
// static input scales (fused layers take the largest), and 128x128 blocks with per-group
// activations.
const char* const kFp8Models[] = {"llama-gqa4-hd64-tied-fp8-channel", "qwen2-gqa2-hd64-bias-tied-fp8-tensor",
                                  "qwen3-gqa4-hd128-qknorm-fp8-block"};

// Every canonical linear layer on the probe inputs: the activation scales brisk computes equal
// the script's exactly, and the outputs its float64 products within fp32 summation error.
TEST(Fp8Model, LinearLayersMatchProbes) {
  auto backend = make_cpu_backend();
  for (const char* folder : kFp8Models) {
    const fs::path dir = testing::test_data_dir() / "models" / folder;
    const ModelConfig config = ModelConfig::from_file(dir / "config.json");
    ASSERT_EQ(config.quantization.method, QuantMethod::kFp8) << folder;
    const ModelWeights weights = load_weights(config, dir, *backend);
    auto probes = SafetensorsFile::open(dir / "probes.safetensors");
    for (size_t i = 0; i < weights.layers.size(); ++i) {
      for (const auto& [name, linear] : named_linears(weights.layers[i])) {
        const std::string key = std::to_string(i) + "." + name;
        ASSERT_TRUE(linear->is_fp8()) << folder << " " << key;
        TensorView x = probes->tensor(key + ".x"), expected = probes->tensor(key + ".y");
        TensorView scales = probes->tensor(key + ".x_scale");
        const cpu::Fp8QuantizedRows q = cpu::quantize_fp8_activations(x, linear->fp8_block_size, linear->input_scale);
        const std::vector<double> want_scales = testing::to_doubles(scales);
        if (linear->input_scale.empty()) {
          ASSERT_EQ(q.scales.size(), want_scales.size()) << folder << " " << key;
          for (size_t j = 0; j < want_scales.size(); ++j)
            EXPECT_EQ(q.scales[j], static_cast<float>(want_scales[j])) << folder << " " << key << " scale " << j;
        } else {
          EXPECT_EQ(linear->input_scale.data_as<const float>()[0], static_cast<float>(want_scales[0]))
              << folder << " " << key;
        }
        Tensor y(cpu_allocator(), DType::kF32, expected.shape());
        run_linear(*backend, x, *linear, {}, y);
        const double atol = 1e-5 * std::sqrt(static_cast<double>(x.size(1)));
        for (int64_t j = 0; j < expected.num_elements(); ++j) {
          const float e = expected.data_as<float>()[j];
          ASSERT_NEAR(y.data_as<float>()[j], e, atol + 1e-5 * std::fabs(e)) << folder << " " << key << " element " << j;
        }
      }
    }
  }
}

// The FP8 models run end to end (greedy decoding, logits finite). How close FP8 stays to bf16 is
// measured on a trained model (awq_quantize_test.cc: these test models' random weights are no
// measure of accuracy).
TEST(Fp8Model, RunsEndToEnd) {
  auto backend = make_cpu_backend();
  for (const char* folder : kFp8Models) {
    auto model = LlamaModel::load(testing::test_data_dir() / "models" / folder, *backend);
    for (const auto& step : greedy_logits(*model, *backend, {1, 17, 300, 42, 5, 9, 77, 128}, 4))
      for (float v : step) ASSERT_TRUE(std::isfinite(v)) << folder;
  }
}

// brisk quantize --method fp8: a compressed-tensors folder with f32 per-channel scales that
// brisk loads back; each weight within half an e4m3 step of the original.
TEST(Fp8Model, QuantizeWritesALoadableFolder) {
  auto backend = make_cpu_backend();
  for (const char* name : {"qwen2-gqa2-hd64-bias-tied-bf16", "qwen3-gqa4-hd128-qknorm-bf16"}) {
    const fs::path src = testing::test_data_dir() / "models" / name;
    const fs::path out = testing::make_temp_dir("fp8") / name;
    quantize_model(src, out, {"fp8", 128});
    const ModelConfig config = ModelConfig::from_file(out / "config.json");
    EXPECT_EQ(config.quantization.method, QuantMethod::kFp8);
    EXPECT_EQ(config.quantization.fp8_weights, Fp8WeightScales::kChannel);
    EXPECT_EQ(config.quantization.fp8_activations, Fp8Activations::kToken);
    const ModelWeights dense = load_weights(ModelConfig::from_file(src / "config.json"), src, *backend);
    const ModelWeights fp8 = load_weights(config, out, *backend);
    const LinearWeight& a = dense.layers[1].gate_up;
    const LinearWeight& b = fp8.layers[1].gate_up;
    ASSERT_TRUE(b.is_fp8());
    const std::vector<double> original = testing::to_doubles(a.dense);
    const int64_t k = b.fp8.size(1);
    for (int64_t r = 0; r < b.fp8.size(0); ++r) {
      const double scale = b.fp8_scale.data_as<const float>()[r];
      for (int64_t i = 0; i < k; ++i) {
        const double w = original[r * k + i];
        const double d = e4m3_to_float(b.fp8.data_as<const uint8_t>()[r * k + i]) * scale;
        // e4m3 keeps 3 mantissa bits: half a step is 2^-4 of |w|, or 2^-10 * scale below 2^-6.
        ASSERT_LE(std::fabs(d - w), std::max(std::fabs(w) / 16, std::ldexp(scale, -10)) * 1.0001) << name << " " << r;
      }
    }
    auto model = LlamaModel::load(out, *backend);
    const auto logits = greedy_logits(*model, *backend, {1, 5, 9}, 3);
    for (float v : logits.back()) ASSERT_TRUE(std::isfinite(v)) << name;
  }
}

TEST(Fp8Model, DummyWeightsFollowTheQuantizationConfig) {
  auto backend = make_cpu_backend();
  for (const char* folder : kFp8Models) {
    const ModelConfig config = ModelConfig::from_file(testing::test_data_dir() / "models" / folder / "config.json");
    const ModelWeights w = make_dummy_weights(config, *backend, 1);
    const LinearWeight& down = w.layers[0].down;
    ASSERT_TRUE(down.is_fp8()) << folder;
    const bool blocks = config.quantization.fp8_weights == Fp8WeightScales::kBlock;
    EXPECT_EQ(down.fp8_scale.shape(), Shape({config.hidden_size, blocks ? (config.intermediate_size + 127) / 128 : 1}));
    EXPECT_EQ(down.input_scale.empty(), config.quantization.fp8_activations != Fp8Activations::kStatic) << folder;
  }
}

// Broken FP8 folders fail at load, naming the tensor: a missing static input scale, a scale of
// the wrong shape, e5m2 weights.
TEST(Fp8Model, BrokenFoldersFailAtLoad) {
  const fs::path src = testing::test_data_dir() / "models" / "qwen2-gqa2-hd64-bias-tied-fp8-tensor";
  const Checkpoint checkpoint = Checkpoint::open(src);
  auto backend = make_cpu_backend();
  const std::string module = "model.layers.0.self_attn.k_proj";
  auto broken = [&](const std::string& drop, const std::vector<SafetensorsWriteEntry>& extra) {
    const fs::path dir = testing::make_temp_dir("fp8_broken");
    fs::copy_file(src / "config.json", dir / "config.json");
    std::vector<SafetensorsWriteEntry> entries;
    for (const std::string& name : checkpoint.tensor_names())
      if (name != drop) entries.push_back({name, checkpoint.tensor(name)});
    entries.insert(entries.end(), extra.begin(), extra.end());
    write_safetensors(dir / "model.safetensors", entries);
    return dir;
  };
  testing::expect_error([&] { LlamaModel::load(broken(module + ".input_scale", {}), *backend); }, ErrorCode::kNotFound,
                        {module + ".input_scale is missing"});
  Tensor wide(cpu_allocator(), DType::kF32, Shape{2});
  wide.data_as<float>()[0] = wide.data_as<float>()[1] = 0.01f;
  testing::expect_error([&] { LlamaModel::load(broken(module + ".weight_scale", {{module + ".weight_scale", wide}}), *backend); },
                        ErrorCode::kInvalidArgument, {module, "per-tensor scale"});
  const TensorView weight = checkpoint.tensor(module + ".weight");
  const TensorView e5m2(const_cast<void*>(weight.data()), DType::kF8E5M2, weight.shape());
  testing::expect_error([&] { LlamaModel::load(broken(module + ".weight", {{module + ".weight", e5m2}}), *backend); },
                        ErrorCode::kUnsupported, {module + ".weight", "f8e5m2"});
}

}  // namespace
}  // namespace brisk
