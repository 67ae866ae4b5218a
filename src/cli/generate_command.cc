// `brisk generate`: one prompt (ids, text or a chat message) through the engine, greedy or
// sampled; streams text to the terminal, or prints one JSON object with --json.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "cli/batch_generate.h"
#include "cli/commands.h"
#include "cli/prompt_input.h"
#include "core/error.h"

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
  auto tokenizer = load_tokenizer_if_any(args.engine.model_dir);
  std::vector<int32_t> prompt = resolve_prompt(args.prompt, args.engine.model_dir, tokenizer.get());
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
  cmd->add_option("--model", args->engine.model_dir, "Hugging Face model folder (config.json, *.safetensors, ...)")
      ->required();
  add_prompt_options(cmd, args->prompt);
  auto* input = cmd->add_option("--input", args->input,
                                "JSONL file of requests ({\"prompt\": ...} or {\"prompt_ids\": [...]} per line), "
                                "all run at once");
  cmd->add_option("--output", args->output, "JSONL results in input order (with --input)")->needs(input);
  input->excludes("--prompt-ids")->excludes("--prompt")->excludes("--chat");
  cmd->add_option("--backend", args->engine.backend, "cpu or cuda")->capture_default_str();
  cmd->add_option("--max-model-len", args->engine.max_model_len, "context length (default: max_position_embeddings)");
  cmd->add_option("--kv-cache-memory", args->engine.kv_cache_memory,
                  "KV cache size: a fraction of free memory (0.9) or a size (4GiB)");
  cmd->add_flag("--dummy-weights", args->engine.dummy_weights, "random weights from config.json alone (benchmarks)");
  cmd->add_flag("--enforce-eager", args->engine.enforce_eager, "run decode steps op by op instead of CUDA graphs");
  SamplingParams& s = args->sampling;
  cmd->add_option("--max-tokens", s.max_tokens, "maximum number of tokens to generate")->capture_default_str();
  cmd->add_option("--min-tokens", s.min_tokens, "generate at least this many tokens before eos may stop")
      ->capture_default_str();
  cmd->add_option("--temperature", s.temperature, "0 for greedy decoding")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens (0: all)")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "nucleus sampling mass in (0, 1]")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "drop tokens below min_p times the top probability")->capture_default_str();
  cmd->add_option("--repetition-penalty", s.repetition_penalty, "> 1 discourages repeating prompt or output tokens")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "subtracted per earlier occurrence in the output")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty, "subtracted once if the token occurred in the output")
      ->capture_default_str();
  cmd->add_option("--seed", s.seed, "random seed for sampling (default: random)");
  cmd->add_option("--stop-token-ids", s.stop_token_ids, "extra token ids that end generation")->delimiter(',');
  cmd->add_option("--stop", s.stop, "text that ends generation (repeatable); not included in the output");
  cmd->add_flag("--ignore-eos", s.ignore_eos, "do not stop at end-of-sequence tokens");
  cmd->add_flag("--json", args->json, "print one JSON object: token_ids, text, finish_reason, logprobs");
  return [args] { return run_generate(*args); };
}

}  // namespace brisk::cli
