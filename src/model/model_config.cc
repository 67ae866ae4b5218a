#include "model/model_config.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <cmath>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "core/json_util.h"

namespace brisk {
namespace {

using nlohmann::json;

// Sizes above this are surely a typo, and bounding them keeps products of two sizes (say
// vocab_size * hidden_size) far from int64 overflow.
constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();


// Typed access to the fields of one JSON object. `prefix` qualifies nested field names in
// messages ("rope_scaling.factor"); absent and null fields read as "not given", which is how
// Hugging Face treats them too.
class Fields {
 public:
  Fields(const json& object, const std::string& source, std::string prefix = "")
      : object_(object), source_(source), prefix_(std::move(prefix)) {}

  const json* find(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  bool has(const std::string& key) const { return find(key) != nullptr; }
  std::string name(const std::string& key) const { return prefix_ + key; }

  [[noreturn]] void fail(const std::string& key, const std::string& expected, const json& got) const {
    throw_error(ErrorCode::kInvalidArgument, "{}: field '{}' must be {}, got {}", source_, name(key),
                expected, describe_json(got));
  }
  const json& required(const std::string& key) const {
    const json* value = find(key);
    if (!value)
      throw_error(ErrorCode::kInvalidArgument, "{}: missing required field '{}'", source_, name(key));
    return *value;
  }

  std::optional<int64_t> optional_int(const std::string& key, int64_t min, int64_t max,
                                      const char* expected) const {
    const json* value = find(key);
    if (!value) return std::nullopt;
    auto v = json_int64(*value);
    if (!v || *v < min || *v > max) fail(key, expected, *value);
    return v;
  }
  std::optional<int64_t> optional_size(const std::string& key) const {
    return optional_int(key, 1, kMaxSize, "a positive integer");
  }
  int64_t size(const std::string& key) const {
    required(key);
    return *optional_size(key);
  }
  std::optional<int64_t> optional_token_id(const std::string& key) const {
    return optional_int(key, 0, kMaxSize, "a non-negative integer token id");
  }

  std::optional<double> optional_number(const std::string& key, bool positive) const {
    const json* value = find(key);
    if (!value) return std::nullopt;
    const char* expected = positive ? "a positive number" : "a non-negative number";
    if (!value->is_number()) fail(key, expected, *value);
    double v = value->get<double>();
    if (!std::isfinite(v) || v < 0 || (positive && v == 0)) fail(key, expected, *value);
    return v;
  }
  double positive_number(const std::string& key) const {
    required(key);
    return *optional_number(key, /*positive=*/true);
  }

  std::optional<bool> optional_bool(const std::string& key) const {
    const json* value = find(key);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) fail(key, "true or false", *value);
    return value->get<bool>();
  }
  std::optional<std::string> optional_string(const std::string& key) const {
    const json* value = find(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) fail(key, "a string", *value);
    return value->get<std::string>();
  }

  // An int, a list of ints, or null (Hugging Face allows all three for eos_token_id).
  std::vector<int64_t> token_id_list(const std::string& key) const {
    const json* value = find(key);
    if (!value) return {};
    const char* expected = "a non-negative integer token id or a list of them";
    std::vector<int64_t> ids;
    auto add = [&](const json& item) {
      auto id = json_int64(item);
      if (!id || *id < 0 || *id > kMaxSize) fail(key, expected, *value);
      if (std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
    };
    if (value->is_array()) {
      for (const json& item : *value) add(item);
    } else {
      add(*value);
    }
    return ids;
  }

  const std::string& source() const { return source_; }

 private:
  const json& object_;
  const std::string& source_;
  std::string prefix_;
};

struct ArchitectureInfo {
  const char* hf_name;
  const char* model_type;  // config.json's model_type, used when `architectures` is absent
  Architecture arch;
};
constexpr ArchitectureInfo kArchitectures[] = {
    {"LlamaForCausalLM", "llama", Architecture::kLlama},
    {"MistralForCausalLM", "mistral", Architecture::kMistral},
    {"Qwen2ForCausalLM", "qwen2", Architecture::kQwen2},
    {"Qwen3ForCausalLM", "qwen3", Architecture::kQwen3},
    {"InternLM2ForCausalLM", "internlm2", Architecture::kInternLM2},
};

std::string supported_architectures() {
  std::string out;
  for (const auto& info : kArchitectures) out += (out.empty() ? "" : ", ") + std::string(info.hf_name);
  return out;
}

Architecture parse_architecture(const Fields& fields) {
  std::string name;
  if (const json* list = fields.find("architectures")) {
    if (!list->is_array() || list->empty() || !(*list)[0].is_string())
      fields.fail("architectures", "a non-empty list of class names", *list);
    name = (*list)[0].get<std::string>();
    for (const auto& info : kArchitectures)
      if (name == info.hf_name) return info.arch;
  } else if (auto model_type = fields.optional_string("model_type")) {
    // Some hand-written configs carry only model_type; accept the ones we know.
    name = "model_type " + *model_type;
    for (const auto& info : kArchitectures)
      if (*model_type == info.model_type) return info.arch;
  } else {
    throw_error(ErrorCode::kInvalidArgument, "{}: missing required field 'architectures'", fields.source());
  }
  throw_error(ErrorCode::kUnsupported, "{}: architecture '{}' is not supported (supported: {})",
              fields.source(), name, supported_architectures());
}

// Reads rope_type/type, theta and scaling factors from `rope` (rope_scaling or, in
// transformers >= 5, rope_parameters).
RopeScaling parse_rope_scaling(const json& rope, const std::string& field, bool type_required,
                               const std::string& source) {
  Fields fields(rope, source, field + ".");
  std::optional<std::string> type = fields.optional_string("rope_type");
  if (!type) type = fields.optional_string("type");
  if (!type) {
    if (type_required)
      throw_error(ErrorCode::kInvalidArgument, "{}: field '{}' needs a 'rope_type' (or 'type')", source,
                  field);
    type = "default";
  }
  RopeScaling scaling;
  if (*type == "default") return scaling;
  if (*type == "linear") {
    scaling.type = RopeScalingType::kLinear;
    scaling.factor = fields.positive_number("factor");
    return scaling;
  }
  if (*type == "llama3") {
    scaling.type = RopeScalingType::kLlama3;
    scaling.factor = fields.positive_number("factor");
    scaling.low_freq_factor = fields.positive_number("low_freq_factor");
    scaling.high_freq_factor = fields.positive_number("high_freq_factor");
    fields.required("original_max_position_embeddings");
    scaling.original_max_position_embeddings = *fields.optional_size("original_max_position_embeddings");
    return scaling;
  }
  throw_error(ErrorCode::kUnsupported,
              "{}: {} type '{}' is not supported (supported: default, linear, llama3)", source, field, *type);
}

void parse_rope(const Fields& fields, ModelConfig& config) {
  config.rope_theta = fields.optional_number("rope_theta", /*positive=*/true).value_or(10000.0);
  // transformers >= 5 moves theta and scaling into rope_parameters; it wins when present.
  if (const json* params = fields.find("rope_parameters")) {
    if (!params->is_object()) fields.fail("rope_parameters", "an object", *params);
    Fields rope(*params, fields.source(), "rope_parameters.");
    if (auto theta = rope.optional_number("rope_theta", /*positive=*/true)) config.rope_theta = *theta;
    config.rope_scaling =
        parse_rope_scaling(*params, "rope_parameters", /*type_required=*/false, fields.source());
    return;
  }
  if (const json* scaling = fields.find("rope_scaling")) {
    if (!scaling->is_object()) fields.fail("rope_scaling", "an object or null", *scaling);
    config.rope_scaling =
        parse_rope_scaling(*scaling, "rope_scaling", /*type_required=*/true, fields.source());
  }
}

// Qwen2/Qwen3 use a window only when use_sliding_window is set, and then only on layers at or
// above max_window_layers. One window for all layers or none is what brisk runs.
int64_t parse_qwen_sliding_window(const Fields& fields, int64_t num_layers) {
  if (!fields.optional_bool("use_sliding_window").value_or(false)) return 0;
  int64_t window = fields.size("sliding_window");
  int64_t max_window_layers = fields.optional_int("max_window_layers", 0, kMaxSize, "a non-negative integer")
                                  .value_or(28);  // transformers' default
  if (max_window_layers >= num_layers) return 0;
  if (max_window_layers == 0) return window;
  throw_error(
      ErrorCode::kUnsupported,
      "{}: use_sliding_window with max_window_layers {} < num_hidden_layers {} mixes sliding and full "
      "attention layers, which is not supported",
      fields.source(), max_window_layers, num_layers);
}

DType parse_dtype(const Fields& fields) {
  // transformers >= 4.56 writes `dtype`; older versions `torch_dtype`.
  const char* key = fields.has("dtype") ? "dtype" : "torch_dtype";
  auto name = fields.optional_string(key);
  if (!name) return DType::kBF16;
  if (*name == "bfloat16") return DType::kBF16;
  if (*name == "float16") return DType::kF16;
  if (*name == "float32") return DType::kF32;
  throw_error(ErrorCode::kUnsupported, "{}: {} '{}' is not supported (supported: bfloat16, float16, float32)",
              fields.source(), key, *name);
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The first of several spellings of one field (AutoAWQ's quant_config.json says w_bit and
// q_group_size where transformers writes bits and group_size).
std::string first_present(const Fields& fields, std::initializer_list<const char*> keys) {
  for (const char* key : keys)
    if (fields.has(key)) return key;
  return *keys.begin();
}

json parse_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kNotFound, "{}: cannot open", path.string());
  json parsed = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw_error(ErrorCode::kCorruptData, "{}: not valid JSON", path.string());
  return parsed;
}

void require_object(const json& root, const std::string& source) {
  if (!root.is_object())
    throw_error(ErrorCode::kInvalidArgument, "{}: expected a JSON object at the top level, got {}", source,
                describe_json(root));
}

}  // namespace

[[noreturn]] void unsupported_fp8(const Fields& fields, const std::string& what) {
  throw_error(ErrorCode::kUnsupported, "{}: {} is not supported (FP8 checkpoints: e4m3 weights with per-tensor, "
              "per-channel or 128x128 block scales)", fields.source(), what);
}

// A compressed-tensors quantization scheme's "weights" or "input_activations": 8-bit float,
// symmetric; returns its strategy.
std::string fp8_scheme_strategy(const Fields& scheme) {
  const int64_t bits = scheme.optional_int("num_bits", 1, 64, "a positive integer").value_or(0);
  const std::string type = lowercase(scheme.optional_string("type").value_or(""));
  if (bits != 8 || type != "float")
    unsupported_fp8(scheme, fmt::format("{} of {} bits, type '{}'", scheme.name("num_bits"), bits, type));
  if (!scheme.optional_bool("symmetric").value_or(true)) unsupported_fp8(scheme, scheme.name("symmetric") + " false");
  return lowercase(scheme.optional_string("strategy").value_or(""));
}

// llm-compressor's FP8 schemes (quant_method "compressed-tensors"): one config group targeting
// Linear, e4m3 weights with per-tensor, per-channel or 128x128 block scales, activations static
// per tensor, dynamic per token or (with blocks) dynamic per 128-channel group.
QuantizationConfig compressed_tensors_fp8(const Fields& fields) {
  QuantizationConfig config;
  config.method = QuantMethod::kFp8;
  const std::string format = lowercase(fields.optional_string("format").value_or("float-quantized"));
  if (format != "float-quantized" && format != "naive-quantized")
    unsupported_fp8(fields, fmt::format("compressed-tensors format '{}'", format));
  if (const json* kv = fields.find("kv_cache_scheme"); kv != nullptr && !kv->is_null()) {
    if (!kv->is_object()) fields.fail("kv_cache_scheme", "an object", *kv);
    const Fields k(*kv, fields.source(), fields.name("kv_cache_scheme."));
    const std::string strategy = fp8_scheme_strategy(k);
    if (strategy != "tensor") unsupported_fp8(k, fmt::format("{} '{}' (per-tensor only)", k.name("strategy"), strategy));
    if (k.optional_bool("dynamic").value_or(false)) unsupported_fp8(k, k.name("dynamic") + " true");
    config.kv_cache_scales = true;
  }
  const json& groups = fields.required("config_groups");
  if (!groups.is_object() || groups.size() != 1)
    unsupported_fp8(fields, fmt::format("{} with {} groups (one group targeting Linear)", fields.name("config_groups"),
                                        groups.is_object() ? groups.size() : 0));
  const std::string group_name = groups.begin().key();
  const json& group = groups.begin().value();
  if (!group.is_object()) fields.fail("config_groups", "an object of objects", groups);
  Fields g(group, fields.source(), fields.name("config_groups." + group_name + "."));
  const json* targets = g.find("targets");
  if (!targets || !targets->is_array() || std::find(targets->begin(), targets->end(), json("Linear")) == targets->end())
    unsupported_fp8(g, fmt::format("{} without \"Linear\"", g.name("targets")));
  const json& weights = g.required("weights");
  if (!weights.is_object()) g.fail("weights", "an object", weights);
  const Fields w(weights, fields.source(), g.name("weights."));
  const std::string weight_strategy = fp8_scheme_strategy(w);
  if (weight_strategy == "tensor") {
    config.fp8_weights = Fp8WeightScales::kTensor;
  } else if (weight_strategy == "channel") {
    config.fp8_weights = Fp8WeightScales::kChannel;
  } else if (weight_strategy == "block") {
    const json* block = w.find("block_structure");
    if (!block || *block != json::array({128, 128}))
      unsupported_fp8(w, fmt::format("{} {} (128x128 only)", w.name("block_structure"), block ? block->dump() : "null"));
    config.fp8_weights = Fp8WeightScales::kBlock;
  } else {
    unsupported_fp8(w, fmt::format("{} '{}'", w.name("strategy"), weight_strategy));
  }
  const json* activations = g.find("input_activations");
  if (!activations) unsupported_fp8(g, g.name("input_activations") + " null (FP8 weights with 16-bit activations)");
  if (!activations->is_object()) g.fail("input_activations", "an object", *activations);
  const Fields a(*activations, fields.source(), g.name("input_activations."));
  const std::string strategy = fp8_scheme_strategy(a);
  const bool dynamic = a.optional_bool("dynamic").value_or(false);
  const int64_t group_size = a.optional_int("group_size", -1, kMaxSize, "an integer").value_or(0);
  const bool blocks = config.fp8_weights == Fp8WeightScales::kBlock;
  if (!blocks && strategy == "tensor" && !dynamic) {
    config.fp8_activations = Fp8Activations::kStatic;
  } else if (!blocks && strategy == "token" && dynamic) {
    config.fp8_activations = Fp8Activations::kToken;
  } else if (blocks && strategy == "group" && dynamic && group_size == 128) {
    config.fp8_activations = Fp8Activations::kTokenGroup;
  } else {
    unsupported_fp8(a, fmt::format("activations '{}' (dynamic {}, group_size {}) with '{}' weights", strategy, dynamic,
                                   group_size, weight_strategy));
  }
  return config;
}

// quant_method "fp8": block-wise (weight_block_size [128, 128], `weight_scale_inv`, dynamic
// activations per 128-channel group) as Qwen3 and DeepSeek publish, or per-tensor (`weight_scale`,
// static `input_scale` or dynamic per token).
QuantizationConfig fp8_config(const Fields& fields) {
  QuantizationConfig config;
  config.method = QuantMethod::kFp8;
  const std::string format = lowercase(fields.optional_string("fmt").value_or("e4m3"));
  if (format != "e4m3") unsupported_fp8(fields, fmt::format("{} '{}'", fields.name("fmt"), format));
  const std::string scheme = lowercase(fields.optional_string("activation_scheme").value_or("dynamic"));
  if (scheme != "dynamic" && scheme != "static")
    unsupported_fp8(fields, fmt::format("{} '{}'", fields.name("activation_scheme"), scheme));
  if (const json* block = fields.find("weight_block_size")) {
    if (*block != json::array({128, 128}))
      unsupported_fp8(fields, fmt::format("{} {} (128x128 only)", fields.name("weight_block_size"), block->dump()));
    if (scheme != "dynamic") unsupported_fp8(fields, "static activation scales with block-wise weights");
    config.fp8_weights = Fp8WeightScales::kBlock;
    config.fp8_activations = Fp8Activations::kTokenGroup;
    return config;
  }
  config.fp8_weights = Fp8WeightScales::kTensor;
  config.fp8_activations = scheme == "static" ? Fp8Activations::kStatic : Fp8Activations::kToken;
  return config;
}

QuantizationConfig QuantizationConfig::from_json(const nlohmann::json& root, const std::string& source) {
  if (!root.is_object())
    throw_error(ErrorCode::kInvalidArgument, "{}: quantization_config must be an object, got {}", source,
                describe_json(root));
  Fields fields(root, source, "quantization_config.");
  QuantizationConfig config;
  const std::string method = lowercase(fields.optional_string("quant_method").value_or(""));
  if (method == "awq") {
    config.method = QuantMethod::kAwq;
  } else if (method == "gptq") {
    config.method = QuantMethod::kGptq;
  } else if (method == "compressed-tensors") {
    return compressed_tensors_fp8(fields);
  } else if (method == "fp8") {
    return fp8_config(fields);
  } else {
    throw_error(ErrorCode::kUnsupported,
                "{}: quantization_config.quant_method '{}' is not supported (supported: awq, gptq, "
                "compressed-tensors (fp8), fp8)", source, method);
  }
  const std::string bits_key = first_present(fields, {"bits", "w_bit"});
  const int64_t bits = fields.optional_int(bits_key, 1, 64, "a positive integer").value_or(4);
  if (bits != 4)
    throw_error(ErrorCode::kUnsupported, "{}: quantization_config.{} is {}; only 4-bit weights are supported",
                source, bits_key, bits);
  const std::string group_key = first_present(fields, {"group_size", "q_group_size"});
  const int64_t group = fields.optional_int(group_key, -1, kMaxSize, "a positive integer or -1").value_or(128);
  if (group == 0 || (group == -1 && config.method == QuantMethod::kAwq))
    fields.fail(group_key, config.method == QuantMethod::kAwq ? "a positive integer" : "a positive integer or -1",
                root.at(group_key));
  config.group_size = group == -1 ? 0 : group;

  if (config.method == QuantMethod::kAwq) {
    const std::string version = lowercase(fields.optional_string("version").value_or("gemm"));
    if (version != "gemm")
      throw_error(ErrorCode::kUnsupported,
                  "{}: quantization_config.version '{}' is not supported (AutoAWQ's 'gemm' packing only)",
                  source, version);
    if (!fields.optional_bool("zero_point").value_or(true))
      throw_error(ErrorCode::kUnsupported,
                  "{}: quantization_config.zero_point false (symmetric AWQ) is not supported", source);
    return config;
  }
  if (fields.optional_bool("desc_act").value_or(false))
    throw_error(ErrorCode::kUnsupported,
                "{}: quantization_config.desc_act true (GPTQ act-order) is not supported", source);
  config.symmetric = fields.optional_bool("sym").value_or(true);
  const std::string format = lowercase(fields.optional_string("checkpoint_format").value_or("gptq"));
  if (format == "gptq") {
    config.zero_offset = 1;
  } else if (format != "gptq_v2") {
    throw_error(ErrorCode::kUnsupported,
                "{}: quantization_config.checkpoint_format '{}' is not supported (supported: gptq, gptq_v2)",
                source, format);
  }
  return config;
}

std::string_view architecture_name(Architecture arch) {
  for (const auto& info : kArchitectures)
    if (info.arch == arch) return info.hf_name;
  return "unknown";
}

ModelConfig ModelConfig::from_json(const nlohmann::json& root, const std::string& source) {
  require_object(root, source);
  Fields fields(root, source);
  ModelConfig config;
  config.architecture = parse_architecture(fields);
  config.vocab_size = fields.size("vocab_size");
  config.hidden_size = fields.size("hidden_size");
  config.intermediate_size = fields.size("intermediate_size");
  config.num_layers = fields.size("num_hidden_layers");
  config.num_heads = fields.size("num_attention_heads");
  config.num_kv_heads = fields.optional_size("num_key_value_heads").value_or(config.num_heads);
  if (auto head_dim = fields.optional_size("head_dim")) {
    config.head_dim = *head_dim;
  } else {
    if (config.hidden_size % config.num_heads != 0)
      throw_error(
          ErrorCode::kInvalidArgument,
          "{}: hidden_size ({}) is not divisible by num_attention_heads ({}) and head_dim is not given",
          source, config.hidden_size, config.num_heads);
    config.head_dim = config.hidden_size / config.num_heads;
  }
  config.max_position_embeddings = fields.size("max_position_embeddings");
  config.rms_norm_eps = fields.optional_number("rms_norm_eps", /*positive=*/true).value_or(1e-6);
  parse_rope(fields, config);

  std::string act = fields.optional_string("hidden_act").value_or("silu");
  if (act != "silu")
    throw_error(ErrorCode::kUnsupported, "{}: hidden_act '{}' is not supported (only silu)", source, act);
  config.tie_word_embeddings = fields.optional_bool("tie_word_embeddings").value_or(false);

  switch (config.architecture) {
    case Architecture::kLlama:
      config.attention_bias = fields.optional_bool("attention_bias").value_or(false);
      break;
    case Architecture::kMistral:
      config.attention_bias = fields.optional_bool("attention_bias").value_or(false);
      config.sliding_window = fields.optional_size("sliding_window").value_or(0);
      break;
    case Architecture::kQwen2:
      config.attention_bias = true;  // Qwen2 always has q/k/v biases; its config has no field
      config.sliding_window = parse_qwen_sliding_window(fields, config.num_layers);
      break;
    case Architecture::kQwen3:
      config.attention_bias = fields.optional_bool("attention_bias").value_or(false);
      config.qk_norm = true;
      config.sliding_window = parse_qwen_sliding_window(fields, config.num_layers);
      break;
    case Architecture::kInternLM2:
      // InternLM2's own configuration class defaults `bias` to true; released configs set it.
      config.attention_bias = fields.optional_bool("bias").value_or(true);
      break;
  }

  config.dtype = parse_dtype(fields);
  config.eos_token_ids = fields.token_id_list("eos_token_id");
  config.bos_token_id = fields.optional_token_id("bos_token_id");
  // Some converted Llama configs use pad_token_id -1 for "no padding token".
  if (const json* pad = fields.find("pad_token_id"); pad && json_int64(*pad) && *json_int64(*pad) < 0)
    config.pad_token_id = std::nullopt;
  else
    config.pad_token_id = fields.optional_token_id("pad_token_id");
  if (const json* quant = fields.find("quantization_config"))
    config.quantization = QuantizationConfig::from_json(*quant, source);
  config.validate(source);
  return config;
}

ModelConfig ModelConfig::from_file(const std::filesystem::path& config_json) {
  ModelConfig config = from_json(parse_json_file(config_json), config_json.string());
  if (config.quantization.method != QuantMethod::kNone) return config;
  // Older AutoGPTQ and AutoAWQ folders keep the quantization settings in a file of their own.
  for (const char* name : {"quantize_config.json", "quant_config.json"}) {
    const std::filesystem::path path = config_json.parent_path() / name;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) continue;
    json quant = parse_json_file(path);
    if (quant.is_object() && !quant.contains("quant_method"))  // AutoGPTQ's file does not say
      quant["quant_method"] = name == std::string("quant_config.json") ? "awq" : "gptq";
    config.quantization = QuantizationConfig::from_json(quant, path.string());
    break;
  }
  return config;
}

void ModelConfig::validate(const std::string& source) const {
  auto check_size = [&](int64_t value, const char* field) {
    if (value < 1 || value > kMaxSize)
      throw_error(ErrorCode::kInvalidArgument, "{}: field '{}' must be a positive integer, got {}", source,
                  field, value);
  };
  check_size(vocab_size, "vocab_size");
  check_size(hidden_size, "hidden_size");
  check_size(intermediate_size, "intermediate_size");
  check_size(num_layers, "num_hidden_layers");
  check_size(num_heads, "num_attention_heads");
  check_size(num_kv_heads, "num_key_value_heads");
  check_size(head_dim, "head_dim");
  check_size(max_position_embeddings, "max_position_embeddings");
  if (num_heads % num_kv_heads != 0)
    throw_error(ErrorCode::kInvalidArgument,
                "{}: num_attention_heads ({}) must be a multiple of num_key_value_heads ({})", source,
                num_heads, num_kv_heads);
  auto check_positive = [&](double value, const char* field) {
    if (!(std::isfinite(value) && value > 0))
      throw_error(ErrorCode::kInvalidArgument, "{}: field '{}' must be a positive number, got {}", source,
                  field, value);
  };
  check_positive(rms_norm_eps, "rms_norm_eps");
  check_positive(rope_theta, "rope_theta");
  if (rope_scaling.type != RopeScalingType::kNone) check_positive(rope_scaling.factor, "rope_scaling.factor");
  if (rope_scaling.type == RopeScalingType::kLlama3) {
    check_positive(rope_scaling.low_freq_factor, "rope_scaling.low_freq_factor");
    check_positive(rope_scaling.high_freq_factor, "rope_scaling.high_freq_factor");
    check_size(rope_scaling.original_max_position_embeddings,
               "rope_scaling.original_max_position_embeddings");
    // Llama 3 scaling interpolates between the two wavelengths; equal factors divide by zero.
    if (rope_scaling.high_freq_factor <= rope_scaling.low_freq_factor)
      throw_error(ErrorCode::kInvalidArgument,
                  "{}: field 'rope_scaling.high_freq_factor' ({}) must be greater than low_freq_factor ({})",
                  source, rope_scaling.high_freq_factor, rope_scaling.low_freq_factor);
  }
  if (sliding_window < 0)
    throw_error(ErrorCode::kInvalidArgument, "{}: field 'sliding_window' must be non-negative, got {}",
                source, sliding_window);
  auto check_token = [&](int64_t id, const char* field) {
    if (id < 0 || id >= vocab_size)
      throw_error(ErrorCode::kInvalidArgument, "{}: field '{}' ({}) is outside the vocabulary [0, {})",
                  source, field, id, vocab_size);
  };
  for (int64_t id : eos_token_ids) check_token(id, "eos_token_id");
  if (bos_token_id) check_token(*bos_token_id, "bos_token_id");
}

GenerationConfig GenerationConfig::from_json(const nlohmann::json& root, const std::string& source) {
  require_object(root, source);
  Fields fields(root, source);
  GenerationConfig config;
  config.eos_token_ids = fields.token_id_list("eos_token_id");
  config.bos_token_id = fields.optional_token_id("bos_token_id");
  config.temperature = fields.optional_number("temperature", /*positive=*/false);
  config.top_p = fields.optional_number("top_p", /*positive=*/true);
  if (config.top_p && *config.top_p > 1.0) fields.fail("top_p", "a number in (0, 1]", root.at("top_p"));
  // top_k 0 means "disabled" in transformers.
  config.top_k = fields.optional_int("top_k", 0, kMaxSize, "a non-negative integer");
  config.repetition_penalty = fields.optional_number("repetition_penalty", /*positive=*/true);
  config.max_new_tokens = fields.optional_size("max_new_tokens");
  config.do_sample = fields.optional_bool("do_sample").value_or(false);
  return config;
}

GenerationConfig GenerationConfig::from_file_or_default(const std::filesystem::path& generation_config_json) {
  std::error_code ec;
  if (!std::filesystem::exists(generation_config_json, ec)) return GenerationConfig{};
  return from_json(parse_json_file(generation_config_json), generation_config_json.string());
}

}  // namespace brisk
