#include "quant/model_quantizer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "backend/backend.h"
#include "core/error.h"
#include "core/host_convert.h"
#include "model/forward_batch.h"
#include "model/fp8_weight.h"
#include "model/int4_weight.h"
#include "model/kv_cache.h"
#include "model/llama_model.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/safetensors.h"
#include "quant/activation_sampler.h"
#include "quant/awq_scaling.h"
#include "quant/awq_search.h"

namespace brisk {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::kNotFound, "{}: cannot open", path.string());
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) throw_error(ErrorCode::kCorruptData, "{}: not valid JSON", path.string());
  return json;
}

void check_options(const QuantizeOptions& options) {
  if (options.method != "rtn" && options.method != "awq" && options.method != "fp8")
    throw_error(ErrorCode::kInvalidArgument, "quantize: --method is '{}' but must be rtn, awq or fp8", options.method);
  if (options.method == "fp8") return;
  if (options.group_size < 8 || options.group_size % 8 != 0)
    throw_error(ErrorCode::kInvalidArgument, "quantize: --group-size is {} but must be a positive multiple of 8",
                options.group_size);
  if (options.method != "awq") return;
  if (options.calibration.empty())
    throw_error(ErrorCode::kInvalidArgument, "quantize: --method awq needs calibration samples (none given)");
  for (const auto& sample : options.calibration)
    if (sample.empty()) throw_error(ErrorCode::kInvalidArgument, "quantize: a calibration sample is empty");
  if (options.backend == nullptr || !options.backend->shares_host_memory())
    throw_error(ErrorCode::kInvalidArgument, "quantize: --method awq runs its calibration on the CPU backend");
  if (options.max_rows_per_input <= 0)
    throw_error(ErrorCode::kInvalidArgument, "quantize: max_rows_per_input is {} but must be positive",
                options.max_rows_per_input);
}

// Every linear layer must fit the AutoAWQ packing; checked before the (long) AWQ search.
void check_linear_shapes(const Checkpoint& checkpoint, const std::vector<std::string>& modules,
                         const QuantizeOptions& options) {
  const int64_t group_size = options.group_size;
  for (const std::string& module : modules) {
    const std::string name = module + ".weight";
    if (!checkpoint.contains(name))
      throw_error(ErrorCode::kNotFound, "quantize: tensor '{}' is missing from {}", name, checkpoint.dir().string());
    const TensorView weight = checkpoint.tensor(name);
    if (options.method == "fp8") {
      if (weight.rank() != 2) throw_error(ErrorCode::kUnsupported, "quantize: '{}' is {}; expected [out, in]", name, weight.describe());
      continue;
    }
    if (weight.rank() != 2 || weight.size(1) % group_size != 0 || weight.size(0) % 8 != 0)
      throw_error(ErrorCode::kUnsupported,
                  "quantize: '{}' is {}; AutoAWQ packing needs in_features to be a multiple of the group size "
                  "{} and out_features a multiple of 8", name, weight.describe(), group_size);
  }
}

// Runs the dense model over the calibration samples and keeps the inputs of its linear layers.
ActivationSampler capture_activations(const fs::path& model_dir, const ModelConfig& config,
                                      const QuantizeOptions& options) {
  Backend& backend = *options.backend;
  int64_t max_len = 0;
  for (const auto& sample : options.calibration) {
    max_len = std::max<int64_t>(max_len, static_cast<int64_t>(sample.size()));
    for (int32_t id : sample)
      BRISK_CHECK(id >= 0 && id < config.vocab_size, "quantize: calibration token {} is outside the vocabulary "
                  "of {} (vocab_size {})", id, model_dir.string(), config.vocab_size);
  }
  BRISK_CHECK(max_len <= config.max_position_embeddings,
              "quantize: calibration samples of {} tokens exceed max_position_embeddings {} of {}; lower "
              "--calib-seq-len", max_len, config.max_position_embeddings, model_dir.string());
  ModelLoadOptions load_options;
  load_options.max_model_len = max_len;
  auto model = LlamaModel::load(model_dir, backend, load_options);
  ActivationSampler sampler(config.num_layers, options.max_rows_per_input, /*seed=*/0);
  model->set_linear_observer(&sampler);
  constexpr int kBlockSize = 16;
  const int64_t num_blocks = (max_len + kBlockSize - 1) / kBlockSize;
  KvCache cache(model->config(), backend, model->activation_dtype(), num_blocks, kBlockSize);
  std::vector<int32_t> block_table(num_blocks);
  std::iota(block_table.begin(), block_table.end(), 0);
  Tensor logits(backend.allocator(), DType::kF32, {1, config.vocab_size});
  for (const auto& sample : options.calibration) {  // each sample overwrites the cache from slot 0
    BatchInputs inputs({SequenceChunk{sample, 0, block_table, false, true}}, kBlockSize);
    model->forward(inputs.upload(backend), cache, logits);
  }
  model->set_linear_observer(nullptr);
  return sampler;
}

// The rows of `blocks` of weight (f32 [N, K]), clip-searched against x and written back.
void clip_rows(Tensor& weight, const std::vector<RowBlock>& blocks, const ActivationRows& x, int64_t group_size) {
  const int64_t k = weight.shape()[1];
  int64_t num_rows = 0;
  for (const RowBlock& b : blocks) num_rows += b.count;
  if (num_rows == 0) return;
  Tensor part(cpu_allocator(), DType::kF32, {num_rows, k});
  float* dst = part.data_as<float>();
  for (const RowBlock& b : blocks)
    dst = std::copy_n(weight.data_as<float>() + b.begin * k, b.count * k, dst);
  search_clip(part, x, group_size);
  const float* src = part.data_as<float>();
  for (const RowBlock& b : blocks) {
    std::copy_n(src, b.count * k, weight.data_as<float>() + b.begin * k);
    src += b.count * k;
  }
}

// AWQ: scales searched and folded, then clipping searched, group by group; the changed tensors
// (f32) end up in `tensors`.
void search_awq(const ModelConfig& config, const Checkpoint& checkpoint, const ActivationSampler& sampler,
                const QuantizeOptions& options, DenseTensors& tensors) {
  double rtn_loss = 0, awq_loss = 0;
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    for (const ScalingGroup& group : scaling_groups(config, layer)) {
      const ActivationRows& x = sampler.rows(layer, group.input);
      BRISK_CHECK(x.num_rows > 0, "quantize: no calibration rows reached {}", group.name);
      BRISK_CHECK(std::all_of(x.mean_abs.begin(), x.mean_abs.end(), [](float v) { return std::isfinite(v); }),
                  "quantize: the dense model's activations at {} are not finite on the calibration text", group.name);
      std::vector<const Tensor*> weights;
      for (const GroupLinear& linear : group.linears) weights.push_back(&dense_f32(tensors, checkpoint, linear.weight));
      ScaleSearchResult result = search_scales(weights, x, options.group_size);
      make_scales_foldable(result.scales, tensors, checkpoint, group);
      fold_scales(tensors, checkpoint, group, result.scales);
      rtn_loss += result.rtn_loss;
      awq_loss += result.loss;
      spdlog::debug("AWQ {}: alpha {:.2f}, output error {:.4g} (round to nearest: {:.4g})", group.name,
                    result.alpha, result.loss, result.rtn_loss);
      if (!options.clip) continue;
      ActivationRows scaled = x;  // the group's inputs now arrive divided by the scales
      for (int64_t i = 0; i < static_cast<int64_t>(scaled.rows.size()); ++i)
        scaled.rows[i] /= result.scales[i % x.num_cols];
      for (const GroupLinear& linear : group.linears)
        clip_rows(tensors.at(linear.weight), linear.clip_rows, scaled, options.group_size);
    }
    spdlog::info("AWQ search: layer {} of {} done", layer + 1, config.num_layers);
  }
  spdlog::info("AWQ scales: output error on the calibration rows is {:.3f} of round to nearest's",
               rtn_loss > 0 ? awq_loss / rtn_loss : 1.0);
}

// A changed tensor back in its checkpoint dtype.
Tensor to_checkpoint_dtype(const Tensor& f32, DType dtype) {
  Tensor out(cpu_allocator(), dtype, f32.shape());
  convert_on_host(out, f32);
  return out;
}

// llm-compressor's FP8_DYNAMIC scheme as compressed-tensors describes it (what brisk and vLLM
// read): e4m3 weights with per-channel scales, activations scaled per token at run time.
nlohmann::json fp8_quantization_config() {
  const nlohmann::json fp8 = {{"num_bits", 8}, {"type", "float"}, {"symmetric", true}};
  nlohmann::json weights = fp8, activations = fp8;
  weights.update({{"strategy", "channel"}, {"dynamic", false}});
  activations.update({{"strategy", "token"}, {"dynamic", true}});
  return {{"quant_method", "compressed-tensors"},
          {"format", "float-quantized"},
          {"quantization_status", "compressed"},
          {"ignore", {"lm_head"}},
          {"config_groups",
           {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", activations}}}}}};
}

// Copies every file of the folder that is not weights or config.json (tokenizer files, ...).
void copy_other_files(const fs::path& model_dir, const fs::path& out_dir) {
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    if (!entry.is_regular_file()) continue;
    const fs::path name = entry.path().filename();
    if (name == "config.json" || name == "model.safetensors.index.json" || name.extension() == ".safetensors")
      continue;
    fs::copy_file(entry.path(), out_dir / name, fs::copy_options::overwrite_existing);
  }
}

}  // namespace

void quantize_model(const fs::path& model_dir, const fs::path& out_dir, const QuantizeOptions& options) {
  check_options(options);
  const ModelConfig config = ModelConfig::from_file(model_dir / "config.json");
  if (config.quantization.method != QuantMethod::kNone)
    throw_error(ErrorCode::kInvalidArgument, "quantize: {} is already quantized", model_dir.string());
  if (fs::exists(out_dir / "config.json"))
    throw_error(ErrorCode::kInvalidArgument, "quantize: {} already holds a model (config.json); choose a new folder",
                out_dir.string());
  fs::create_directories(out_dir);

  const Checkpoint checkpoint = Checkpoint::open(model_dir);
  const std::vector<std::string> modules = linear_module_names(config);
  check_linear_shapes(checkpoint, modules, options);
  DenseTensors changed;  // f32 copies of the tensors AWQ changes
  if (options.method == "awq") {
    const ActivationSampler sampler = capture_activations(model_dir, config, options);
    search_awq(config, checkpoint, sampler, options, changed);
  }
  std::set<std::string> quantized_names;
  for (const std::string& m : modules) quantized_names.insert(m + ".weight");
  std::vector<SafetensorsWriteEntry> entries;
  std::vector<Tensor> keep;  // tensors written below
  keep.reserve(3 * modules.size() + changed.size());
  for (const std::string& name : checkpoint.tensor_names()) {
    if (quantized_names.count(name)) continue;
    auto it = changed.find(name);
    if (it == changed.end()) {
      entries.push_back({name, checkpoint.tensor(name)});
      continue;
    }
    keep.push_back(to_checkpoint_dtype(it->second, checkpoint.tensor(name).dtype()));
    entries.push_back({name, keep.back()});
  }
  for (const std::string& module : modules) {
    const std::string name = module + ".weight";
    auto it = changed.find(name);
    const TensorView weight = it != changed.end() ? it->second.view() : checkpoint.tensor(name);
    if (options.method == "fp8") {
      Fp8Weight fp8 = quantize_fp8(weight);
      keep.push_back(std::move(fp8.weight));
      entries.push_back({module + ".weight", keep.back()});
      keep.push_back(std::move(fp8.weight_scale));  // f32 [N, 1], as the quantization used it
      entries.push_back({module + ".weight_scale", keep.back()});
      continue;
    }
    AwqPacked packed = to_awq(quantize_rtn(weight, options.group_size, DType::kF16));
    for (auto [suffix, tensor] : {std::pair{".qweight", &packed.qweight}, std::pair{".qzeros", &packed.qzeros},
                                  std::pair{".scales", &packed.scales}}) {
      keep.push_back(std::move(*tensor));
      entries.push_back({module + suffix, keep.back()});
    }
  }
  // (entries view the buffers of `keep`'s tensors, which stay put when `keep` grows.)
  write_safetensors(out_dir / "model.safetensors", entries, {{"format", "pt"}});

  nlohmann::json json = read_json(model_dir / "config.json");
  json["quantization_config"] = options.method == "fp8" ? fp8_quantization_config()
                                                        : nlohmann::json{{"quant_method", "awq"},
                                                                         {"bits", 4},
                                                                         {"group_size", options.group_size},
                                                                         {"zero_point", true},
                                                                         {"version", "gemm"},
                                                                         {"modules_to_not_convert", nullptr}};
  std::ofstream(out_dir / "config.json") << json.dump(2) << "\n";
  copy_other_files(model_dir, out_dir);
  spdlog::info("quantized {} linear layers of {} into {} ({})", modules.size(), model_dir.string(), out_dir.string(),
               options.method == "fp8" ? std::string("fp8, per-channel weight scales, dynamic per-token activations")
                                       : fmt::format("{}, group {}", options.method, options.group_size));
}

std::vector<std::vector<int32_t>> calibration_samples(const std::vector<int32_t>& tokens, int64_t num_samples,
                                                      int64_t seq_len, const std::string& source) {
  if (num_samples <= 0 || seq_len <= 0)
    throw_error(ErrorCode::kInvalidArgument, "quantize: --calib-samples ({}) and --calib-seq-len ({}) must be positive",
                num_samples, seq_len);
  const int64_t total = static_cast<int64_t>(tokens.size());
  if (total < num_samples * seq_len)
    throw_error(ErrorCode::kInvalidArgument,
                "quantize: calibration text {} is too short: {} tokens with the model's tokenizer, but "
                "--calib-samples {} x --calib-seq-len {} needs {}", source, total, num_samples, seq_len,
                num_samples * seq_len);
  const int64_t stride = total / num_samples;  // >= seq_len: the windows do not overlap
  std::vector<std::vector<int32_t>> samples;
  for (int64_t i = 0; i < num_samples; ++i)
    samples.emplace_back(tokens.begin() + i * stride, tokens.begin() + i * stride + seq_len);
  return samples;
}

}  // namespace brisk
