// `brisk perplexity`: perplexity of a model over a text file, so quantization choices (weights,
// KV cache) are judged on numbers anyone can reproduce (llama.cpp's llama-perplexity is the
// model). The text's tokens are cut into windows of --context tokens that advance by --stride;
// each window scores the tokens no earlier window scored (the first window all but its first),
// so every token after the first is scored once, with at least context - stride tokens before
// it once the text is long enough. The windows run through the engine as prompts scored
// without generating (prompt logprobs), all at once.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "brisk/engine.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file_util.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace brisk::cli {
namespace {

struct PerplexityArgs {
  EngineOptions engine;
  std::string file;
  int64_t context = 512;
  int64_t stride = 0;       // 0: context / 2
  int64_t max_windows = 0;  // 0: all
  bool json = false;
};

struct Window {
  int64_t begin = 0;        // first token of the text in the window
  int64_t first_scored = 0; // the window's first scored position
};

int run_perplexity(PerplexityArgs& args) {
  const std::filesystem::path model_dir = args.engine.model_dir;
  if (!std::filesystem::is_directory(model_dir))
    throw_error(ErrorCode::kNotFound, "model folder '{}' does not exist", model_dir.string());
  ModelConfig::from_file(model_dir / "config.json");
  auto tokenizer = Tokenizer::from_folder_if_any(model_dir);
  BRISK_CHECK(tokenizer, "perplexity needs the model folder's tokenizer, and {} has none", model_dir.string());
  const std::vector<int32_t> tokens = tokenizer->encode(read_text_file(args.file), /*add_special_tokens=*/false);
  BRISK_CHECK(tokens.size() >= 2, "{} has {} tokens; perplexity needs at least 2", args.file, tokens.size());

  show_load_progress(args.engine);
  auto engine = Engine::create(args.engine);
  const int64_t context = std::min(args.context, engine->max_model_len());
  const int64_t stride = args.stride > 0 ? args.stride : std::max<int64_t>(context / 2, 1);
  BRISK_CHECK(stride <= context, "--stride {} exceeds the window of {} tokens", stride, context);
  const auto num_tokens = static_cast<int64_t>(tokens.size());
  std::vector<Window> windows;
  for (int64_t scored_to = 1; scored_to < num_tokens;) {  // tokens before scored_to are scored
    Window w;
    w.begin = windows.empty() ? 0 : std::max<int64_t>(0, std::min(scored_to + stride, num_tokens) - context);
    w.first_scored = scored_to - w.begin;
    windows.push_back(w);
    scored_to = std::min(w.begin + context, num_tokens);
    if (args.max_windows > 0 && static_cast<int64_t>(windows.size()) == args.max_windows) break;
  }

  SamplingParams scoring;
  scoring.max_tokens = 0;
  scoring.prompt_logprobs = 0;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const Window& w : windows) {
    const int64_t end = std::min(w.begin + context, num_tokens);
    streams.push_back(engine->submit({std::vector<int32_t>(tokens.begin() + w.begin, tokens.begin() + end), scoring}));
  }
  double nll = 0;
  int64_t num_scored = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    std::vector<PromptLogprob> scores;
    while (true) {
      RequestEvent e = *streams[i]->next();
      if (!e.prompt_logprobs.empty()) scores = std::move(e.prompt_logprobs);
      if (e.kind != RequestEvent::Kind::kFinished) continue;
      BRISK_CHECK(e.finish_reason != FinishReason::kError, "window {} failed: {}", i, e.error);
      break;
    }
    for (size_t j = windows[i].first_scored; j < scores.size(); ++j) {
      nll -= scores[j].logprob;
      ++num_scored;
    }
  }
  engine->shutdown();
  const double perplexity = std::exp(nll / static_cast<double>(num_scored));
  if (args.json) {
    nlohmann::json out = {{"perplexity", perplexity}, {"num_scored_tokens", num_scored},
                          {"num_windows", windows.size()}, {"context", context}, {"stride", stride},
                          {"kv_cache_dtype", args.engine.kv_cache_dtype}};
    fmt::print("{}\n", out.dump());
  } else {
    fmt::print("perplexity {:.4f} over {} tokens ({} windows of {} tokens, stride {}, KV cache {})\n", perplexity,
               num_scored, windows.size(), context, stride, args.engine.kv_cache_dtype);
  }
  return 0;
}

}  // namespace

Runner add_perplexity_command(CLI::App& app) {
  auto args = std::make_shared<PerplexityArgs>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a model over a text file (sliding windows)");
  cmd->footer("Example:\n  brisk perplexity --model models/tiny-austen --file tests/data/austen-heldout.txt "
              "--kv-cache-dtype int8");
  add_engine_options(cmd, args->engine);
  cmd->add_option("--file", args->file, "the text to score")->required()->check(CLI::ExistingFile)->group("Input");
  cmd->add_option("--context", args->context, "tokens per window (at most the model's context)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30))
      ->capture_default_str()
      ->group("Input");
  cmd->add_option("--stride", args->stride, "tokens each window advances by (default: half the context)")
      ->check(CLI::PositiveNumber)
      ->group("Input");
  cmd->add_option("--max-windows", args->max_windows, "score at most this many windows (default: the whole text)")
      ->check(CLI::PositiveNumber)
      ->group("Input");
  cmd->add_flag("--json", args->json, "print one JSON object")->group("Output");
  return [args] { return run_perplexity(*args); };
}

}  // namespace brisk::cli
