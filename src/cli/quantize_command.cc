// `brisk quantize`: a dense Hugging Face folder -> an AutoAWQ-compatible int4 folder
// (model/model_quantizer.h).
#include <fmt/format.h>

#include "cli/commands.h"
#include "model/model_quantizer.h"

namespace brisk::cli {

Runner add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "Quantize a model's linear layers to int4 (AutoAWQ folder)");
  struct Args {
    std::string model, out;
    QuantizeOptions options;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("--model", args->model, "Hugging Face model folder (bf16, f16 or f32 weights)")->required();
  cmd->add_option("--out", args->out, "Folder to write (must not hold a model yet)")->required();
  cmd->add_option("--method", args->options.method, "rtn (round to nearest); awq is not implemented yet")
      ->check(CLI::IsMember({"rtn", "awq"}))
      ->capture_default_str();
  cmd->add_option("--group-size", args->options.group_size, "Input features per scale and zero point")
      ->capture_default_str();
  return [args] {
    quantize_model(args->model, args->out, args->options);
    fmt::print("wrote {}\n", args->out);
    return 0;
  };
}

}  // namespace brisk::cli
