#include "cli/cli_options.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace brisk::cli {

void add_engine_options(CLI::App* cmd, EngineOptions& e) {
  cmd->add_option("--model", e.model_dir, "Hugging Face model folder (config.json, *.safetensors, tokenizer files)")
      ->required()
      ->group("Model");
  cmd->add_flag("--dummy-weights", e.dummy_weights, "random weights from config.json alone (benchmarks, tests)")
      ->group("Model");
  cmd->add_option("--max-model-len", e.max_model_len, "context length (default: the model's max_position_embeddings)")
      ->check(CLI::NonNegativeNumber)
      ->group("Model");
  cmd->add_option("--backend", e.backend, "cpu or cuda (cpu-graphs: the CPU through the graph paths, for tests)")
      ->capture_default_str()
      ->group("Engine");
  cmd->add_option("--tensor-parallel-size", e.tensor_parallel_size,
                  "ranks the model is split over (Megatron tensor parallelism): threads of this process, one "
                  "backend each")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group("Engine");
  cmd->add_option("--kv-cache-memory", e.kv_cache_memory,
                  "KV cache size: a fraction of free memory (0.9) or a size (4GiB); default 0.9 on a GPU, 0.2 of "
                  "host memory on the CPU")
      ->group("Engine");
  cmd->add_option("--kv-cache-dtype", e.kv_cache_dtype,
                  "how the KV cache holds keys and values: auto (the model's dtype), int8 or int4 (a scale and "
                  "zero point per token and head), fp8 (e4m3); quantized caches hold 2x / 3.8x the tokens")
      ->check(CLI::IsMember({"auto", "int8", "int4", "fp8"}))
      ->capture_default_str()
      ->group("Engine");
  cmd->add_option("--max-num-seqs", e.max_num_seqs, "most sequences running at once")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group("Engine");
  cmd->add_option("--max-num-batched-tokens", e.max_num_batched_tokens, "token budget of one step (prefill + decode)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group("Engine");
  cmd->add_option("--block-size", e.block_size, "tokens per KV cache block")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group("Engine");
  cmd->add_flag_callback("--no-prefix-caching", [&e] { e.enable_prefix_caching = false; },
                         "do not reuse the KV blocks of shared prompt prefixes")
      ->group("Engine");
  cmd->add_flag("--enforce-eager", e.enforce_eager, "run decode steps op by op instead of CUDA graphs")
      ->group("Engine");
  cmd->add_flag("--enable-jump-forward", e.enable_jump_forward,
                "structured output: append the tokens of text the grammar forces instead of sampling them")
      ->group("Engine");
  cmd->add_flag("--profile-steps", e.profile_steps,
                "time every step (device and host) and report where the time goes, by step kind")
      ->group("Engine");
  cmd->add_flag("--profile-ops", e.profile_ops,
                "also time every op on the device, by step kind (diagnostic: steps run op by op, without overlap)")
      ->group("Engine");
}

void add_sampling_options(CLI::App* cmd, SamplingParams& s) {
  // No range checks here: the engine validates every request and names the parameter at fault.
  const char* group = "Sampling";
  cmd->add_option("--max-tokens", s.max_tokens, "most tokens to generate")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--min-tokens", s.min_tokens, "generate at least this many tokens before eos may stop")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--temperature", s.temperature, "0 for greedy decoding")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--top-k", s.top_k, "keep the k most likely tokens (0: all)")->capture_default_str()->group(group);
  cmd->add_option("--top-p", s.top_p, "nucleus sampling mass in (0, 1]")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--min-p", s.min_p, "drop tokens below min_p times the top probability")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--repetition-penalty", s.repetition_penalty, "> 1 discourages repeating prompt or output tokens")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "subtracted per earlier occurrence in the output")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--presence-penalty", s.presence_penalty, "subtracted once if the token occurred in the output")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--seed", s.seed, "random seed for sampling (default: random)")->group(group);
  cmd->add_option("--stop-token-ids", s.stop_token_ids, "extra token ids that end generation")
      ->delimiter(',')
      ->group(group);
  cmd->add_option("--stop", s.stop, "text that ends generation (repeatable); not included in the output")->group(group);
  cmd->add_flag("--ignore-eos", s.ignore_eos, "do not stop at end-of-sequence tokens")->group(group);
}

void show_load_progress(EngineOptions& options) {
  if (!isatty(STDERR_FILENO)) return;
  options.on_load_progress = [](int64_t done, int64_t total) {
    constexpr int kWidth = 30;
    const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
    fmt::print(stderr, "\rLoading weights [{}{}] {}/{} layers", std::string(filled, '#'),
               std::string(kWidth - filled, '.'), done, total);
    if (done == total) fmt::print(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace brisk::cli
