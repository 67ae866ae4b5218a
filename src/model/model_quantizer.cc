#include "model/model_quantizer.h"

#include <fstream>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "model/int4_weight.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/safetensors.h"

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
  if (options.method == "awq")
    throw_error(ErrorCode::kUnsupported,
                "quantize: --method awq (activation-aware scale search) is not implemented yet; use --method rtn");
  if (options.method != "rtn")
    throw_error(ErrorCode::kInvalidArgument, "quantize: --method is '{}' but must be rtn or awq", options.method);
  if (options.group_size < 8 || options.group_size % 8 != 0)
    throw_error(ErrorCode::kInvalidArgument, "quantize: --group-size is {} but must be a positive multiple of 8",
                options.group_size);
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
  std::set<std::string> quantized_names;
  for (const std::string& m : modules) quantized_names.insert(m + ".weight");
  std::vector<SafetensorsWriteEntry> entries;
  std::vector<Tensor> keep;  // the packed tensors written below
  for (const std::string& name : checkpoint.tensor_names()) {
    if (!quantized_names.count(name)) entries.push_back({name, checkpoint.tensor(name)});
  }
  for (const std::string& module : modules) {
    const std::string name = module + ".weight";
    if (!checkpoint.contains(name))
      throw_error(ErrorCode::kNotFound, "quantize: tensor '{}' is missing from {}", name, model_dir.string());
    const TensorView weight = checkpoint.tensor(name);
    if (weight.rank() != 2 || weight.size(1) % options.group_size != 0 || weight.size(0) % 8 != 0)
      throw_error(ErrorCode::kUnsupported,
                  "quantize: '{}' is {}; AutoAWQ packing needs in_features to be a multiple of the group size "
                  "{} and out_features a multiple of 8", name, weight.describe(), options.group_size);
    AwqPacked packed = to_awq(quantize_rtn(weight, options.group_size, DType::kF16));
    for (auto [suffix, tensor] : {std::pair{".qweight", &packed.qweight}, std::pair{".qzeros", &packed.qzeros},
                                  std::pair{".scales", &packed.scales}}) {
      keep.push_back(std::move(*tensor));
      entries.push_back({module + suffix, keep.back()});
    }
  }
  // (entries view the packed tensors' buffers, which stay put when `keep` grows.)
  write_safetensors(out_dir / "model.safetensors", entries, {{"format", "pt"}});

  nlohmann::json json = read_json(model_dir / "config.json");
  json["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", options.group_size},
                                 {"zero_point", true}, {"version", "gemm"}, {"modules_to_not_convert", nullptr}};
  std::ofstream(out_dir / "config.json") << json.dump(2) << "\n";
  copy_other_files(model_dir, out_dir);
  spdlog::info("quantized {} linear layers of {} into {} ({}, group {})", modules.size(), model_dir.string(),
               out_dir.string(), options.method, options.group_size);
}

}  // namespace brisk
