// `brisk quantize`: a dense Hugging Face folder -> an AutoAWQ-compatible int4 folder or a
// compressed-tensors FP8 one (quant/model_quantizer.h). --method awq tokenizes the calibration text with the model's own
// tokenizer and runs the calibration forward on the CPU backend.
#include <fmt/format.h>

#include "backend/make_backend.h"
#include "brisk/status.h"
#include "cli/commands.h"
#include "core/file_util.h"
#include "quant/model_quantizer.h"
#include "tokenizer/tokenizer.h"

namespace brisk::cli {
namespace {

// The calibration set shipped with brisk (data/calibration/README.md).
constexpr const char* kDefaultCalibrationFile = BRISK_DEFAULT_CALIBRATION_FILE;

struct Args {
  std::string model, out;
  QuantizeOptions options;
  std::string calib_file = kDefaultCalibrationFile;
  int64_t calib_samples = 64;
  int64_t calib_seq_len = 512;
};

std::vector<std::vector<int32_t>> calibration_tokens(const Args& args) {
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = Tokenizer::from_folder(args.model);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("quantize --method awq tokenizes the calibration text with the model's "
                                      "tokenizer: {}", e.what()));
  }
  const std::string text = read_text_file(args.calib_file);
  return calibration_samples(tokenizer->encode(text, /*add_special_tokens=*/false), args.calib_samples,
                             args.calib_seq_len, args.calib_file);
}

}  // namespace

Runner add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize",
                                 "Quantize a model's linear layers to int4 (AutoAWQ folder) or FP8 (compressed-tensors folder)");
  auto args = std::make_shared<Args>();
  cmd->add_option("--model", args->model, "Hugging Face model folder (bf16, f16 or f32 weights)")->required();
  cmd->add_option("--out", args->out, "Folder to write (must not hold a model yet)")->required();
  cmd->add_option("--method", args->options.method,
                  "rtn: int4, round to nearest per group; awq: int4 after an activation-aware scale and clipping "
                  "search on calibration text (CPU); fp8: e4m3 weights with per-channel scales, activations "
                  "quantized per token at run time")
      ->check(CLI::IsMember({"rtn", "awq", "fp8"}))
      ->capture_default_str();
  cmd->add_option("--group-size", args->options.group_size, "int4: input features per scale and zero point")
      ->capture_default_str();
  cmd->add_option("--calib-file", args->calib_file,
                  "awq: UTF-8 calibration text (default: brisk's public-domain Jane Austen excerpts)")
      ->capture_default_str();
  cmd->add_option("--calib-samples", args->calib_samples, "awq: calibration samples taken from the text")
      ->capture_default_str();
  cmd->add_option("--calib-seq-len", args->calib_seq_len, "awq: tokens per calibration sample")
      ->capture_default_str();
  return [args] {
    std::unique_ptr<Backend> backend;
    if (args->options.method == "awq") {
      args->options.calibration = calibration_tokens(*args);
      backend = make_backend("cpu");
      args->options.backend = backend.get();
    }
    quantize_model(args->model, args->out, args->options);
    fmt::print("wrote {}\n", args->out);
    return 0;
  };
}

}  // namespace brisk::cli
