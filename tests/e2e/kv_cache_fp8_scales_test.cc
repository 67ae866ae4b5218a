// The fp8 KV cache's scales from a compressed-tensors checkpoint (quantization_config.kv_cache_scheme
// with each layer's self_attn.k_scale / v_scale, as llm-compressor writes them): loaded per layer,
// used by --kv-cache-dtype fp8, and malformed schemes or scales refused naming what is wrong. The
// checkpoints are the FP8 test model with the scheme and the scales added.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "brisk/engine.h"
#include "engine_test_util.h"
#include "model/llama_model.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json kScheme = {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"dynamic", false},
                      {"symmetric", true}};

// The FP8 test model (2 layers) with `scheme` as its kv_cache_scheme and `scales` (name -> value,
// one f32 each: layer 0's as shape [], the rest as [1]) added to its tensors.
fs::path scaled_model(const std::string& name, const json& scheme, const std::vector<std::pair<std::string, float>>& scales) {
  const fs::path src = testing::test_data_dir() / "models" / "qwen2-gqa2-hd64-bias-tied-fp8-tensor";
  const fs::path dir = testing::make_temp_dir(name);
  fs::copy_file(src / "generation_config.json", dir / "generation_config.json");
  json config = json::parse(testing::read_file(src / "config.json"));
  config["quantization_config"]["kv_cache_scheme"] = scheme;
  std::ofstream(dir / "config.json") << config.dump(2);
  const Checkpoint checkpoint = Checkpoint::open(src);
  std::vector<SafetensorsWriteEntry> entries;
  for (const std::string& tensor : checkpoint.tensor_names()) entries.push_back({tensor, checkpoint.tensor(tensor)});
  std::vector<Tensor> values;
  values.reserve(scales.size());
  for (const auto& [tensor, value] : scales) {
    values.emplace_back(cpu_allocator(), DType::kF32, tensor.find("layers.0.") != std::string::npos ? Shape{} : Shape{1});
    values.back().data_as<float>()[0] = value;
    entries.push_back({tensor, values.back()});
  }
  write_safetensors(dir / "model.safetensors", entries);
  return dir;
}

std::vector<std::pair<std::string, float>> layer_scales(float k, float v) {
  std::vector<std::pair<std::string, float>> out;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
    out.push_back({p + "k_scale", k * (layer + 1)});
    out.push_back({p + "v_scale", v * (layer + 1)});
  }
  return out;
}

std::vector<int32_t> greedy(const fs::path& model, const std::string& kv_cache_dtype) {
  EngineOptions options;
  options.model_dir = model.string();
  options.kv_cache_dtype = kv_cache_dtype;
  options.num_kv_blocks = 16;
  auto engine = Engine::create(options);
  GenerationRequest r{{1, 5, 9, 14, 20, 27, 33, 40, 41, 42, 50, 61}, {}};
  r.sampling.temperature = 0.0f;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 12;
  auto result = testing::collect(*engine->submit(r));
  EXPECT_EQ(result.finish_reason, FinishReason::kLength) << result.error;
  return result.tokens;
}

TEST(KvCacheFp8Scales, LoadedPerLayer) {
  const fs::path dir = scaled_model("kv-scales", kScheme, layer_scales(0.05f, 0.02f));
  auto backend = make_cpu_backend();
  auto model = LlamaModel::load(dir, *backend);
  EXPECT_EQ(model->kv_cache_scales(0), std::make_pair(0.05f, 0.02f));
  EXPECT_EQ(model->kv_cache_scales(1), std::make_pair(0.1f, 0.04f));
  // Without the scheme the same tensors are not the cache's.
  auto plain = LlamaModel::load(testing::test_data_dir() / "models" / "qwen2-gqa2-hd64-bias-tied-fp8-tensor", *backend);
  EXPECT_EQ(plain->kv_cache_scales(0), std::make_pair(0.0f, 0.0f));
}

// Scales 1e4 push every K and V value below e4m3's smallest step: if the cache uses them, the
// attention sees zeros and the continuation changes; with --kv-cache-dtype auto they are unused.
TEST(KvCacheFp8Scales, UsedByTheFp8Cache) {
  const fs::path model = scaled_model("kv-scales-huge", kScheme, layer_scales(1e4f, 1e4f));
  const fs::path plain = testing::test_data_dir() / "models" / "qwen2-gqa2-hd64-bias-tied-fp8-tensor";
  EXPECT_EQ(greedy(model, "auto"), greedy(plain, "auto"));
  EXPECT_NE(greedy(model, "fp8"), greedy(plain, "fp8"));
}

TEST(KvCacheFp8Scales, MalformedSchemesAndScalesAreRefused) {
  auto backend = make_cpu_backend();
  json channel = kScheme;
  channel["strategy"] = "channel";
  testing::expect_error([&] { LlamaModel::load(scaled_model("kv-channel", channel, layer_scales(0.05f, 0.02f)), *backend); },
                        ErrorCode::kUnsupported, {"kv_cache_scheme.strategy 'channel'"});
  json int8 = kScheme;
  int8["type"] = "int";
  testing::expect_error([&] { LlamaModel::load(scaled_model("kv-int", int8, layer_scales(0.05f, 0.02f)), *backend); },
                        ErrorCode::kUnsupported, {"kv_cache_scheme.num_bits", "type 'int'"});
  auto missing = layer_scales(0.05f, 0.02f);
  missing.pop_back();  // layer 1's v_scale
  testing::expect_error([&] { LlamaModel::load(scaled_model("kv-missing", kScheme, missing), *backend); },
                        ErrorCode::kNotFound, {"model.layers.1.self_attn.v_scale"});
  testing::expect_error(
      [&] { LlamaModel::load(scaled_model("kv-negative", kScheme, layer_scales(-0.05f, 0.02f)), *backend); },
      ErrorCode::kInvalidArgument, {"model.layers.0.self_attn.k_scale", "positive"});
}

}  // namespace
}  // namespace brisk
