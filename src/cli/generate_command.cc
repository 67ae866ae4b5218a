// `brisk generate`: one prompt, greedy or sampled, printed as text or one JSON object.
#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/error.h"
#include "engine/generator.h"
#include "model/llama_model.h"

namespace brisk::cli {
namespace {

struct GenerateArgs {
  std::string model;
  std::string backend = "cpu";
  std::string prompt_ids;
  int64_t max_tokens = 64;
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  std::optional<uint64_t> seed;
  bool ignore_eos = false;
  bool json = false;
  bool dummy_weights = false;
  int64_t max_model_len = 0;
};

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int32_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    BRISK_CHECK(!item.empty() && ec == std::errc() && end == item.data() + item.size(),
                "--prompt-ids: '{}' is not a token id (expected comma-separated integers like 1,2,3)", item);
    ids.push_back(value);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return ids;
}

int run_generate(const GenerateArgs& args) {
  std::unique_ptr<Backend> backend = make_backend(args.backend);
  ModelLoadOptions load;
  load.dummy_weights = args.dummy_weights;
  load.max_model_len = args.max_model_len;
  auto model = LlamaModel::load(args.model, *backend, load);

  GenerateOptions options;
  options.max_tokens = args.max_tokens;
  options.ignore_eos = args.ignore_eos;
  options.seed = args.seed;
  options.sampling.temperature = args.temperature;
  options.sampling.top_k = args.top_k;
  options.sampling.top_p = args.top_p;
  options.sampling.min_p = args.min_p;
  options.sampling.repetition_penalty = args.repetition_penalty;
  options.sampling.frequency_penalty = args.frequency_penalty;
  options.sampling.presence_penalty = args.presence_penalty;
  GenerateResult result = generate(*model, parse_ids(args.prompt_ids), options);

  if (args.json) {
    nlohmann::json out = {{"token_ids", result.token_ids},
                          {"finish_reason", finish_reason_name(result.finish_reason)},
                          {"logprobs", result.logprobs}};
    fmt::print("{}\n", out.dump());
  } else {
    fmt::print("{}\nfinish_reason: {}\n", fmt::join(result.token_ids, ","), finish_reason_name(result.finish_reason));
  }
  return 0;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of one prompt (greedy or sampled)");
  cmd->add_option("--model", args->model, "Hugging Face model folder (config.json, *.safetensors, ...)")->required();
  cmd->add_option("--prompt-ids", args->prompt_ids, "prompt as comma-separated token ids, e.g. 1,2,3")->required();
  cmd->add_option("--backend", args->backend, "cpu or cuda")->capture_default_str();
  cmd->add_option("--max-tokens", args->max_tokens, "maximum number of tokens to generate")->capture_default_str();
  cmd->add_option("--temperature", args->temperature, "0 for greedy decoding")->capture_default_str();
  cmd->add_option("--top-k", args->top_k, "keep the k most likely tokens (0: all)")->capture_default_str();
  cmd->add_option("--top-p", args->top_p, "nucleus sampling mass in (0, 1]")->capture_default_str();
  cmd->add_option("--min-p", args->min_p, "drop tokens below min_p times the top probability")->capture_default_str();
  cmd->add_option("--repetition-penalty", args->repetition_penalty, "> 1 discourages repeating prompt or output tokens")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", args->frequency_penalty, "subtracted per earlier occurrence in the output")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", args->presence_penalty, "subtracted once if the token occurred in the output")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "random seed for sampling (default: random)");
  cmd->add_flag("--ignore-eos", args->ignore_eos, "do not stop at end-of-sequence tokens");
  cmd->add_flag("--json", args->json, "print one JSON object: token_ids, finish_reason, logprobs");
  cmd->add_flag("--dummy-weights", args->dummy_weights, "random weights from config.json alone (benchmarks)");
  cmd->add_option("--max-model-len", args->max_model_len, "context length (default: max_position_embeddings)");
  return [args] { return run_generate(*args); };
}

}  // namespace brisk::cli
