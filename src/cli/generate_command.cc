// `brisk generate`: one prompt (ids, text or a chat message) through the engine, greedy or
// sampled; streams text to the terminal, or prints one JSON object with --json.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "cli/batch_generate.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/prompt_input.h"
#include "core/error.h"
#include "model/model_config.h"

namespace brisk::cli {
namespace {

struct GenerateArgs {
  EngineOptions engine;
  SamplingParams sampling;
  PromptInput prompt;
  std::string input;   // JSONL of requests (offline batch)
  std::string output;
  bool json = false;
};

int run_generate(GenerateArgs& args) {
  BRISK_CHECK(args.input.empty() || !args.output.empty(), "--input needs --output (the results file)");
  if (!args.input.empty()) return run_batch_generate(args.engine, args.sampling, args.input, args.output);
  BRISK_CHECK(args.prompt.given(), "generate needs one of --prompt-ids, --prompt, --chat or --input");
  // The folder and its config first: a missing folder or an unsupported architecture says so,
  // not that the (absent) folder has no tokenizer.
  const std::filesystem::path model_dir = args.engine.model_dir;
  if (!std::filesystem::is_directory(model_dir))
    throw_error(ErrorCode::kNotFound, "model folder '{}' does not exist", model_dir.string());
  ModelConfig::from_file(model_dir / "config.json");
  auto tokenizer = Tokenizer::from_folder_if_any(args.engine.model_dir);
  std::vector<int32_t> prompt = resolve_prompt(args.prompt, args.engine.model_dir, tokenizer.get());
  show_load_progress(args.engine);
  auto engine = Engine::create(args.engine);
  auto stream = engine->submit({prompt, args.sampling});
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::string text;
  RequestEvent event;
  while (true) {
    event = *stream->next();
    text += event.text;
    if (!args.json && tokenizer) {
      fmt::print("{}", event.text);
      std::fflush(stdout);
    }
    if (event.kind == RequestEvent::Kind::kFinished) break;
    tokens.push_back(event.token);
    logprobs.push_back(event.logprob);
  }
  if (event.finish_reason == FinishReason::kError) throw Error(ErrorCode::kInvalidArgument, event.error);
  if (!args.json && tokenizer) fmt::print("\n");
  if (args.json) {
    nlohmann::json out = {{"token_ids", tokens}, {"finish_reason", finish_reason_name(event.finish_reason)},
                          {"logprobs", logprobs}, {"prompt_token_ids", prompt}};
    if (tokenizer) out["text"] = text;
    fmt::print("{}\n", out.dump());
  } else if (!tokenizer) {
    fmt::print("{}\n", fmt::join(tokens, ","));
  }
  std::fflush(stdout);
  if (!args.json) fmt::print(stderr, "finish_reason: {}\n", finish_reason_name(event.finish_reason));
  return 0;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  args->sampling.temperature = 0.0f;  // greedy unless asked
  args->sampling.max_tokens = 64;
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of one prompt (greedy or sampled)");
  add_engine_options(cmd, args->engine);
  add_prompt_options(cmd, args->prompt);
  auto* input = cmd->add_option("--input", args->input,
                                "JSONL file of requests ({\"prompt\": ...} or {\"prompt_ids\": [...]} per line, "
                                "with OpenAI's sampling fields), all run at once");
  cmd->add_option("--output", args->output, "JSONL results in input order (with --input)")->needs(input);
  input->excludes("--prompt-ids")->excludes("--prompt")->excludes("--chat");
  add_sampling_options(cmd, args->sampling);
  cmd->add_flag("--json", args->json, "print one JSON object: token_ids, text, finish_reason, logprobs");
  return [args] { return run_generate(*args); };
}

}  // namespace brisk::cli
