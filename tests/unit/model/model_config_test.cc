// config.json / generation_config.json parsing: realistic configs of every supported
// architecture (values as in the released Hugging Face configs), the transformers >= 5
// rope_parameters form, and every malformed field (error code + message naming file and field).
#include "model/model_config.h"

#include <gtest/gtest.h>

#include <functional>

#include "brisk/status.h"
#include "test_util.h"

namespace brisk {
namespace {

using nlohmann::json;

using testing::expect_error;

ModelConfig parse(const char* text) { return ModelConfig::from_json(json::parse(text), "config.json"); }

const char* kLlama31 = R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})";

TEST(ModelConfig, Llama31WithLlama3RopeScaling) {
  ModelConfig c = parse(kLlama31);
  EXPECT_EQ(c.architecture, Architecture::kLlama);
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 14336);
  EXPECT_EQ(c.num_layers, 32);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_FALSE(c.pad_token_id.has_value());
}

TEST(ModelConfig, Llama2Defaults) {
  // Llama-2-7b-hf: no rope_theta (defaults to 10000), float16, scalar eos, pad_token_id 0.
  ModelConfig c = parse(R"({"_name_or_path": "meta-llama/Llama-2-7b-hf",
      "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
      "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
      "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 32, "pad_token_id": 0, "pretraining_tp": 1,
      "rms_norm_eps": 1e-05, "rope_scaling": null, "tie_word_embeddings": false, "torch_dtype": "float16",
      "transformers_version": "4.31.0.dev0", "use_cache": true, "vocab_size": 32000})");
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(c.dtype, DType::kF16);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2}));
  EXPECT_EQ(c.pad_token_id, 0);
}

TEST(ModelConfig, LinearRopeScalingAndOldTypeKey) {
  json j = json::parse(kLlama31);
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  ModelConfig c = ModelConfig::from_json(j, "config.json");
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 4.0);
  j["rope_scaling"] = {{"type", "default"}};
  EXPECT_EQ(ModelConfig::from_json(j, "config.json").rope_scaling.type, RopeScalingType::kNone);
}

TEST(ModelConfig, Mistral7BSlidingWindow) {
  ModelConfig c = parse(R"({"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
      "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
      "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
      "sliding_window": 4096, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
      "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000})");
  EXPECT_EQ(c.architecture, Architecture::kMistral);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_FALSE(c.attention_bias);
  json v3 = json::parse(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
      "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_theta": 1000000.0, "sliding_window": null,
      "vocab_size": 32768})");
  EXPECT_EQ(ModelConfig::from_json(v3, "config.json").sliding_window, 0);
}

const char* kQwen25 = R"({"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584,
  "initializer_range": 0.02, "intermediate_size": 18944, "max_position_embeddings": 32768,
  "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28,
  "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.43.1",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 152064})";

TEST(ModelConfig, Qwen25AlwaysHasBiasesAndNoWindowUnlessEnabled) {
  ModelConfig c = parse(kQwen25);
  EXPECT_EQ(c.architecture, Architecture::kQwen2);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645}));

  json j = json::parse(kQwen25);
  j["use_sliding_window"] = true;
  j["max_window_layers"] = 0;  // every layer slides
  EXPECT_EQ(ModelConfig::from_json(j, "config.json").sliding_window, 131072);
  j["max_window_layers"] = 28;  // no layer slides
  EXPECT_EQ(ModelConfig::from_json(j, "config.json").sliding_window, 0);
  j["max_window_layers"] = 21;  // mixed layers
  expect_error([&] { ModelConfig::from_json(j, "config.json"); }, ErrorCode::kUnsupported,
               {"config.json", "max_window_layers 21"});
  j["max_window_layers"] = 0;
  j.erase("sliding_window");
  expect_error([&] { ModelConfig::from_json(j, "config.json"); }, ErrorCode::kInvalidArgument,
               {"config.json", "'sliding_window'"});
}

TEST(ModelConfig, Qwen3ExplicitHeadDimAndQkNorm) {
  // Qwen3-0.6B: head_dim 128 although hidden_size / num_attention_heads is 64.
  ModelConfig c = parse(R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128,
      "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
      "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
      "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
      "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
      "use_sliding_window": false, "vocab_size": 151936})");
  EXPECT_EQ(c.architecture, Architecture::kQwen3);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);  // an integer in the JSON
  EXPECT_EQ(c.sliding_window, 0);
}

TEST(ModelConfig, InternLM2) {
  const char* text = R"({"architectures": ["InternLM2ForCausalLM"], "attn_implementation": "eager",
      "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config",
                   "AutoModelForCausalLM": "modeling_internlm2.InternLM2ForCausalLM"},
      "bias": false, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
      "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
      "model_type": "internlm2", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
      "pad_token_id": 2, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 1000000,
      "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.33.2",
      "use_cache": true, "vocab_size": 92544})";
  ModelConfig c = parse(text);
  EXPECT_EQ(c.architecture, Architecture::kInternLM2);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(c.pad_token_id, 2);
  json j = json::parse(text);
  j.erase("bias");  // InternLM2Config's own default is bias=True
  EXPECT_TRUE(ModelConfig::from_json(j, "config.json").attention_bias);
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};  // internlm2_5-7b-chat-1m style
  expect_error([&] { ModelConfig::from_json(j, "config.json"); }, ErrorCode::kUnsupported,
               {"config.json", "'dynamic'", "rope_scaling"});
}

TEST(ModelConfig, Transformers5RopeParameters) {
  // Llama-3.2-1B as transformers >= 5 writes it: `dtype` and `rope_parameters`.
  ModelConfig c = parse(R"({"architectures": ["LlamaForCausalLM"], "bos_token_id": 128000,
      "dtype": "bfloat16", "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
      "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 131072,
      "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
      "rms_norm_eps": 1e-05,
      "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                          "original_max_position_embeddings": 8192, "rope_theta": 500000.0,
                          "rope_type": "llama3"},
      "tie_word_embeddings": true, "transformers_version": "5.0.0", "vocab_size": 128256})");
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_TRUE(c.tie_word_embeddings);

  // rope_parameters wins over the legacy fields when both are present.
  json j = json::parse(kQwen25);
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 250000.0}};
  ModelConfig q = ModelConfig::from_json(j, "config.json");
  EXPECT_DOUBLE_EQ(q.rope_theta, 250000.0);
  EXPECT_EQ(q.rope_scaling.type, RopeScalingType::kNone);
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}};  // theta falls back to rope_theta
  q = ModelConfig::from_json(j, "config.json");
  EXPECT_DOUBLE_EQ(q.rope_theta, 1e6);
  EXPECT_EQ(q.rope_scaling.type, RopeScalingType::kLinear);
}

TEST(ModelConfig, ModelTypeFallbackAndNames) {
  json j = json::parse(kLlama31);
  j.erase("architectures");
  EXPECT_EQ(ModelConfig::from_json(j, "config.json").architecture, Architecture::kLlama);
  EXPECT_EQ(architecture_name(Architecture::kLlama), "LlamaForCausalLM");
  EXPECT_EQ(architecture_name(Architecture::kMistral), "MistralForCausalLM");
  EXPECT_EQ(architecture_name(Architecture::kQwen2), "Qwen2ForCausalLM");
  EXPECT_EQ(architecture_name(Architecture::kQwen3), "Qwen3ForCausalLM");
  EXPECT_EQ(architecture_name(Architecture::kInternLM2), "InternLM2ForCausalLM");
}

struct BadConfig {
  std::function<void(json&)> edit;
  ErrorCode code;
  std::vector<std::string> substrings;  // besides "config.json"
};

TEST(ModelConfig, EveryBadFieldIsNamed) {
  using E = ErrorCode;
  auto set = [](const char* key, json value) { return [key, value](json& j) { j[key] = value; }; };
  auto drop = [](const char* key) { return [key](json& j) { j.erase(key); }; };
  auto rope = [](json value) { return [value](json& j) { j["rope_scaling"] = value; }; };
  const std::vector<BadConfig> cases = {
      {set("num_attention_heads", "eight"), E::kInvalidArgument,
       {"config.json: field 'num_attention_heads' must be a positive integer, got \"eight\""}},
      {drop("vocab_size"), E::kInvalidArgument, {"missing required field 'vocab_size'"}},
      {drop("hidden_size"), E::kInvalidArgument, {"'hidden_size'"}},
      {drop("intermediate_size"), E::kInvalidArgument, {"'intermediate_size'"}},
      {drop("num_hidden_layers"), E::kInvalidArgument, {"'num_hidden_layers'"}},
      {drop("num_attention_heads"), E::kInvalidArgument, {"'num_attention_heads'"}},
      {drop("max_position_embeddings"), E::kInvalidArgument, {"'max_position_embeddings'"}},
      {set("vocab_size", nullptr), E::kInvalidArgument, {"missing required field 'vocab_size'"}},
      {set("hidden_size", 0), E::kInvalidArgument, {"'hidden_size'", "got 0"}},
      {set("hidden_size", -4096), E::kInvalidArgument, {"'hidden_size'", "-4096"}},
      {set("hidden_size", 4096.5), E::kInvalidArgument, {"'hidden_size'", "4096.5"}},
      {set("hidden_size", true), E::kInvalidArgument, {"'hidden_size'", "true"}},
      {set("hidden_size", int64_t{1} << 40), E::kInvalidArgument, {"'hidden_size'"}},
      {set("intermediate_size", json::array({14336})), E::kInvalidArgument,
       {"'intermediate_size'", "[14336]"}},
      {set("num_hidden_layers", "32"), E::kInvalidArgument, {"'num_hidden_layers'", "\"32\""}},
      {set("max_position_embeddings", -1), E::kInvalidArgument, {"'max_position_embeddings'"}},
      {set("num_key_value_heads", 5), E::kInvalidArgument,
       {"num_key_value_heads (5)", "num_attention_heads (32)"}},
      {set("num_key_value_heads", 64), E::kInvalidArgument, {"num_key_value_heads (64)"}},
      {set("num_key_value_heads", 0), E::kInvalidArgument, {"'num_key_value_heads'"}},
      {set("head_dim", 0), E::kInvalidArgument, {"'head_dim'"}},
      {set("head_dim", "128"), E::kInvalidArgument, {"'head_dim'"}},
      {set("hidden_size", 4095), E::kInvalidArgument,
       {"hidden_size (4095)", "num_attention_heads", "head_dim"}},
      {set("rms_norm_eps", 0), E::kInvalidArgument, {"'rms_norm_eps'", "positive number"}},
      {set("rms_norm_eps", -1e-5), E::kInvalidArgument, {"'rms_norm_eps'"}},
      {set("rms_norm_eps", "1e-5"), E::kInvalidArgument, {"'rms_norm_eps'", "\"1e-5\""}},
      {set("rope_theta", 0), E::kInvalidArgument, {"'rope_theta'"}},
      {set("rope_theta", "big"), E::kInvalidArgument, {"'rope_theta'"}},
      {rope("llama3"), E::kInvalidArgument, {"'rope_scaling'", "an object or null"}},
      {rope({{"factor", 2.0}}), E::kInvalidArgument, {"'rope_scaling'", "rope_type"}},
      {rope({{"rope_type", 3}}), E::kInvalidArgument, {"'rope_scaling.rope_type'", "a string"}},
      {rope({{"rope_type", "dynamic"}, {"factor", 2.0}}), E::kUnsupported, {"'dynamic'", "linear, llama3"}},
      {rope({{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}}),
       E::kUnsupported, {"'yarn'"}},
      {rope({{"type", "linear"}}), E::kInvalidArgument, {"missing required field 'rope_scaling.factor'"}},
      {rope({{"type", "linear"}, {"factor", 0}}), E::kInvalidArgument, {"'rope_scaling.factor'"}},
      {rope({{"type", "linear"}, {"factor", -2.0}}), E::kInvalidArgument, {"'rope_scaling.factor'"}},
      {rope({{"rope_type", "llama3"}, {"factor", 8.0}, {"high_freq_factor", 4.0},
             {"original_max_position_embeddings", 8192}}),
       E::kInvalidArgument, {"'rope_scaling.low_freq_factor'"}},
      {rope({{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 4.0},
             {"original_max_position_embeddings", 8192}}),
       E::kInvalidArgument, {"'rope_scaling.high_freq_factor'", "greater"}},
      {rope({{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
             {"original_max_position_embeddings", 0}}),
       E::kInvalidArgument, {"'rope_scaling.original_max_position_embeddings'"}},
      {set("rope_parameters", "default"), E::kInvalidArgument, {"'rope_parameters'"}},
      {set("rope_parameters", {{"rope_type", "yarn"}, {"rope_theta", 1e4}}), E::kUnsupported,
       {"rope_parameters", "'yarn'"}},
      {set("rope_parameters", {{"rope_type", "default"}, {"rope_theta", -1}}), E::kInvalidArgument,
       {"'rope_parameters.rope_theta'"}},
      {set("rope_parameters", {{"rope_type", "linear"}, {"factor", 0.0}}), E::kInvalidArgument,
       {"'rope_parameters.factor'"}},
      {set("architectures", json::array({"GPT2LMHeadModel"})), E::kUnsupported,
       {"'GPT2LMHeadModel'", "LlamaForCausalLM", "Qwen3ForCausalLM", "InternLM2ForCausalLM"}},
      {set("architectures", json::array()), E::kInvalidArgument, {"'architectures'"}},
      {set("architectures", "LlamaForCausalLM"), E::kInvalidArgument, {"'architectures'"}},
      {[](json& j) { j.erase("architectures"); j.erase("model_type"); },
       E::kInvalidArgument, {"'architectures'"}},
      {[](json& j) { j.erase("architectures"); j["model_type"] = "gpt2"; }, E::kUnsupported, {"gpt2"}},
      {set("hidden_act", "gelu"), E::kUnsupported, {"hidden_act", "'gelu'"}},
      {set("hidden_act", 5), E::kInvalidArgument, {"'hidden_act'"}},
      {set("torch_dtype", "float64"), E::kUnsupported, {"torch_dtype", "'float64'"}},
      {set("dtype", 16), E::kInvalidArgument, {"'dtype'"}},
      {set("tie_word_embeddings", "yes"), E::kInvalidArgument, {"'tie_word_embeddings'", "true or false"}},
      {set("attention_bias", 1), E::kInvalidArgument, {"'attention_bias'"}},
      {set("eos_token_id", "</s>"), E::kInvalidArgument, {"'eos_token_id'"}},
      {set("eos_token_id", json::array({1, "a"})), E::kInvalidArgument, {"'eos_token_id'"}},
      {set("eos_token_id", -1), E::kInvalidArgument, {"'eos_token_id'"}},
      {set("eos_token_id", 200000), E::kInvalidArgument, {"'eos_token_id'", "200000", "vocabulary"}},
      {set("bos_token_id", 1.5), E::kInvalidArgument, {"'bos_token_id'"}},
      {set("bos_token_id", -3), E::kInvalidArgument, {"'bos_token_id'"}},
      {set("pad_token_id", "0"), E::kInvalidArgument, {"'pad_token_id'"}},
  };
  for (const BadConfig& bad : cases) {
    json j = json::parse(kLlama31);
    bad.edit(j);
    SCOPED_TRACE(j.dump());
    std::vector<std::string> substrings = bad.substrings;
    substrings.push_back("config.json");
    expect_error([&] { ModelConfig::from_json(j, "config.json"); }, bad.code, substrings);
  }
  expect_error([] { ModelConfig::from_json(json::array({1}), "config.json"); }, ErrorCode::kInvalidArgument,
               {"config.json", "JSON object"});
}

TEST(ModelConfig, ArchitectureSpecificBadFields) {
  json mistral = json::parse(kLlama31);
  mistral["architectures"] = {"MistralForCausalLM"};
  for (json window : {json(0), json(-4096), json("4096")}) {
    mistral["sliding_window"] = window;
    expect_error([&] { ModelConfig::from_json(mistral, "config.json"); }, ErrorCode::kInvalidArgument,
                 {"config.json", "'sliding_window'"});
  }
  json qwen = json::parse(kQwen25);
  qwen["use_sliding_window"] = "no";
  expect_error([&] { ModelConfig::from_json(qwen, "config.json"); }, ErrorCode::kInvalidArgument,
               {"config.json", "'use_sliding_window'"});
  json internlm = json::parse(kLlama31);
  internlm["architectures"] = {"InternLM2ForCausalLM"};
  internlm["bias"] = "false";
  expect_error([&] { ModelConfig::from_json(internlm, "config.json"); }, ErrorCode::kInvalidArgument,
               {"config.json", "'bias'"});
}

TEST(ModelConfig, ValidateCatchesHandBuiltConfigs) {
  ModelConfig c = parse(kLlama31);
  c.validate("dummy");
  ModelConfig bad = c;
  bad.num_kv_heads = 0;
  expect_error([&] { bad.validate("dummy"); }, ErrorCode::kInvalidArgument,
               {"dummy", "'num_key_value_heads'"});
  bad = c;
  bad.rms_norm_eps = 0;
  expect_error([&] { bad.validate("dummy"); }, ErrorCode::kInvalidArgument, {"dummy", "'rms_norm_eps'"});
  bad = c;
  bad.rope_scaling.factor = -1;
  expect_error([&] { bad.validate("dummy"); }, ErrorCode::kInvalidArgument,
               {"dummy", "'rope_scaling.factor'"});
  bad = c;
  bad.sliding_window = -1;
  expect_error([&] { bad.validate("dummy"); }, ErrorCode::kInvalidArgument, {"dummy", "'sliding_window'"});
}

TEST(ModelConfig, FromFile) {
  auto dir = testing::make_temp_dir("config");
  testing::write_file(dir / "config.json", kQwen25);
  EXPECT_EQ(ModelConfig::from_file(dir / "config.json").vocab_size, 152064);
  testing::write_file(dir / "bad.json", "{\"architectures\": [\"Qwen2ForCausalLM\"],");
  expect_error([&] { ModelConfig::from_file(dir / "bad.json"); }, ErrorCode::kCorruptData,
               {"bad.json", "JSON"});
  expect_error([&] { ModelConfig::from_file(dir / "absent.json"); }, ErrorCode::kNotFound, {"absent.json"});
  testing::write_file(dir / "eight.json",
                      R"({"architectures": ["LlamaForCausalLM"], "num_attention_heads": "eight"})");
  expect_error([&] { ModelConfig::from_file(dir / "eight.json"); }, ErrorCode::kInvalidArgument,
               {(dir / "eight.json").string(), "'vocab_size'"});
}

// --- generation_config.json ---------------------------------------------------------------------

GenerationConfig parse_generation(const char* text) {
  return GenerationConfig::from_json(json::parse(text), "generation_config.json");
}

// quantization_config as AutoAWQ / transformers and GPTQModel write it, and what brisk rejects.
TEST(ModelConfig, QuantizationConfig) {
  json j = json::parse(kLlama31);
  EXPECT_EQ(ModelConfig::from_json(j, "config.json").quantization.method, QuantMethod::kNone);
  j["quantization_config"] = json::parse(R"({"quant_method": "awq", "zero_point": true, "group_size": 128,
      "bits": 4, "version": "gemm", "modules_to_not_convert": null})");
  QuantizationConfig awq = ModelConfig::from_json(j, "config.json").quantization;
  EXPECT_EQ(awq.method, QuantMethod::kAwq);
  EXPECT_EQ(awq.group_size, 128);
  EXPECT_EQ(awq.zero_offset, 0);
  j["quantization_config"] = json::parse(R"({"quant_method": "gptq", "bits": 4, "group_size": -1,
      "desc_act": false, "sym": true, "checkpoint_format": "gptq"})");
  QuantizationConfig gptq = ModelConfig::from_json(j, "config.json").quantization;
  EXPECT_EQ(gptq.method, QuantMethod::kGptq);
  EXPECT_EQ(gptq.group_size, 0);
  EXPECT_TRUE(gptq.symmetric);
  EXPECT_EQ(gptq.zero_offset, 1);

  const std::pair<const char*, std::vector<std::string>> rejected[] = {
      {R"({"quant_method": "awq", "bits": 8, "group_size": 128})", {"quantization_config.bits", "8", "4-bit"}},
      {R"({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"})", {"version 'gemv'", "gemm"}},
      {R"({"quant_method": "awq", "bits": 4, "zero_point": false})", {"zero_point false"}},
      {R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true})", {"desc_act true"}},
      {R"({"quant_method": "gptq", "bits": 4, "checkpoint_format": "marlin"})", {"checkpoint_format 'marlin'"}},
      {R"({"quant_method": "bitsandbytes"})", {"quant_method 'bitsandbytes'", "awq, gptq"}},
  };
  for (const auto& [text, substrings] : rejected) {
    j["quantization_config"] = json::parse(text);
    expect_error([&] { ModelConfig::from_json(j, "config.json"); }, ErrorCode::kUnsupported, substrings);
  }
  j["quantization_config"] = json::parse(R"({"quant_method": "awq", "group_size": 0})");
  expect_error([&] { ModelConfig::from_json(j, "config.json"); }, ErrorCode::kInvalidArgument,
               {"quantization_config.group_size"});
}

// FP8 checkpoints: llm-compressor's compressed-tensors schemes (FP8_DYNAMIC, FP8 static, block)
// and the block-wise "fp8" form of Qwen3 / DeepSeek releases; what brisk refuses, by name.
TEST(ModelConfig, Fp8QuantizationConfig) {
  json j = json::parse(kLlama31);
  auto parse = [&](const std::string& text) {
    j["quantization_config"] = json::parse(text);
    return ModelConfig::from_json(j, "config.json").quantization;
  };
  auto compressed = [](const std::string& weights, const std::string& activations) {
    return R"({"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "quantization_status": "compressed", "config_groups": {"group_0": {"targets": ["Linear"],
        "weights": )" + weights + R"(, "input_activations": )" + activations + "}}}";
  };
  const std::string channel = R"({"num_bits": 8, "type": "float", "strategy": "channel", "dynamic": false, "symmetric": true})";
  const std::string tensor = R"({"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": false, "symmetric": true})";
  const std::string block = R"({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]})";
  const std::string token = R"({"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true})";
  const std::string group = R"({"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128, "dynamic": true})";

  QuantizationConfig q = parse(compressed(channel, token));
  EXPECT_EQ(q.method, QuantMethod::kFp8);
  EXPECT_EQ(q.fp8_weights, Fp8WeightScales::kChannel);
  EXPECT_EQ(q.fp8_activations, Fp8Activations::kToken);
  q = parse(compressed(tensor, tensor));
  EXPECT_EQ(q.fp8_weights, Fp8WeightScales::kTensor);
  EXPECT_EQ(q.fp8_activations, Fp8Activations::kStatic);
  q = parse(compressed(block, group));
  EXPECT_EQ(q.fp8_weights, Fp8WeightScales::kBlock);
  EXPECT_EQ(q.fp8_activations, Fp8Activations::kTokenGroup);
  q = parse(R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]})");
  EXPECT_EQ(q.fp8_weights, Fp8WeightScales::kBlock);
  EXPECT_EQ(q.fp8_activations, Fp8Activations::kTokenGroup);
  q = parse(R"({"quant_method": "fp8", "activation_scheme": "static"})");
  EXPECT_EQ(q.fp8_weights, Fp8WeightScales::kTensor);
  EXPECT_EQ(q.fp8_activations, Fp8Activations::kStatic);
  EXPECT_FALSE(q.kv_cache_scales);
  // llm-compressor's fp8 KV cache scheme: per-tensor k_scale / v_scale per layer.
  auto with_kv_scheme = [&](const std::string& scheme) {
    std::string text = compressed(channel, token);
    return text.insert(1, R"("kv_cache_scheme": )" + scheme + ", ");
  };
  EXPECT_TRUE(parse(with_kv_scheme(tensor)).kv_cache_scales);

  const std::pair<std::string, std::vector<std::string>> rejected[] = {
      {R"({"quant_method": "fp8", "fmt": "e5m2"})", {"fmt 'e5m2'"}},
      {R"({"quant_method": "fp8", "weight_block_size": [64, 64]})", {"weight_block_size [64,64]", "128x128"}},
      {R"({"quant_method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128]})",
       {"static activation scales with block-wise weights"}},
      {compressed(channel, "null"), {"input_activations null"}},
      {compressed(R"({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128})", token),
       {"weights.num_bits of 4 bits, type 'int'"}},
      {compressed(block, token), {"activations 'token'", "'block' weights"}},
      {compressed(R"({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [64, 64]})", group),
       {"block_structure [64,64]"}},
      {R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {}})",
       {"format 'pack-quantized'"}},
      {R"({"quant_method": "compressed-tensors", "config_groups": {"a": {}, "b": {}}})", {"config_groups with 2 groups"}},
      {R"({"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8}, "config_groups": {}})",
       {"kv_cache_scheme.num_bits of 8 bits, type ''"}},
      {with_kv_scheme(channel), {"kv_cache_scheme.strategy 'channel'", "per-tensor only"}},
      {with_kv_scheme(R"({"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": true})"),
       {"kv_cache_scheme.dynamic true"}},
  };
  for (const auto& [text, substrings] : rejected) {
    expect_error([&] { parse(text); }, ErrorCode::kUnsupported, substrings);
  }
}

TEST(ModelConfig, QuantizeConfigBesideConfigJson) {
  auto dir = testing::make_temp_dir("quantconfig");
  testing::write_file(dir / "config.json", kLlama31);
  testing::write_file(dir / "quantize_config.json", R"({"bits": 4, "group_size": 64, "desc_act": false,
      "sym": false})");
  QuantizationConfig q = ModelConfig::from_file(dir / "config.json").quantization;
  EXPECT_EQ(q.method, QuantMethod::kGptq);
  EXPECT_EQ(q.group_size, 64);
  EXPECT_FALSE(q.symmetric);
}

TEST(GenerationConfig, RealConfigs) {
  auto llama = parse_generation(R"({"bos_token_id": 128000, "do_sample": true,
      "eos_token_id": [128001, 128008, 128009], "temperature": 0.6, "top_p": 0.9,
      "transformers_version": "4.42.3"})");
  EXPECT_EQ(llama.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(llama.bos_token_id, 128000);
  EXPECT_TRUE(llama.do_sample);
  EXPECT_DOUBLE_EQ(*llama.temperature, 0.6);
  EXPECT_DOUBLE_EQ(*llama.top_p, 0.9);
  EXPECT_FALSE(llama.top_k.has_value());

  auto qwen = parse_generation(R"({"bos_token_id": 151643, "pad_token_id": 151643, "do_sample": true,
      "eos_token_id": [151645, 151643], "repetition_penalty": 1.05, "temperature": 0.7, "top_p": 0.8,
      "top_k": 20, "max_new_tokens": null, "transformers_version": "4.37.0"})");
  EXPECT_EQ(qwen.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(qwen.top_k, 20);
  EXPECT_DOUBLE_EQ(*qwen.repetition_penalty, 1.05);
  EXPECT_FALSE(qwen.max_new_tokens.has_value());

  auto plain = parse_generation(R"({"eos_token_id": 2, "max_new_tokens": 256})");
  EXPECT_EQ(plain.eos_token_ids, (std::vector<int64_t>{2}));
  EXPECT_EQ(plain.max_new_tokens, 256);
  EXPECT_FALSE(plain.do_sample);
}

TEST(GenerationConfig, BadFieldsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"temperature": "hot"})", "'temperature'"},  {R"({"temperature": -0.5})", "'temperature'"},
      {R"({"top_p": 1.5})", "'top_p'"},                {R"({"top_p": 0})", "'top_p'"},
      {R"({"top_k": -1})", "'top_k'"},                 {R"({"top_k": 2.5})", "'top_k'"},
      {R"({"repetition_penalty": 0})", "'repetition_penalty'"},
      {R"({"max_new_tokens": 0})", "'max_new_tokens'"}, {R"({"do_sample": "yes"})", "'do_sample'"},
      {R"({"eos_token_id": [2, null]})", "'eos_token_id'"}, {R"({"bos_token_id": "<s>"})", "'bos_token_id'"},
      {R"([1, 2])", "JSON object"},
  };
  for (const auto& [text, field] : cases) {
    SCOPED_TRACE(text);
    expect_error([&] { parse_generation(text.c_str()); }, ErrorCode::kInvalidArgument,
                 {"generation_config.json", field});
  }
}

TEST(GenerationConfig, FromFileOrDefault) {
  auto dir = testing::make_temp_dir("genconfig");
  GenerationConfig defaults = GenerationConfig::from_file_or_default(dir / "generation_config.json");
  EXPECT_TRUE(defaults.eos_token_ids.empty());
  EXPECT_FALSE(defaults.temperature.has_value());
  EXPECT_FALSE(defaults.do_sample);
  testing::write_file(dir / "generation_config.json", R"({"eos_token_id": [7, 8], "temperature": 0.3})");
  EXPECT_EQ(GenerationConfig::from_file_or_default(dir / "generation_config.json").eos_token_ids,
            (std::vector<int64_t>{7, 8}));
  testing::write_file(dir / "generation_config.json", R"({"eos_token_id": [7, 8], )");
  expect_error([&] { GenerationConfig::from_file_or_default(dir / "generation_config.json"); },
               ErrorCode::kCorruptData, {"generation_config.json", "JSON"});
}

}  // namespace
}  // namespace brisk
