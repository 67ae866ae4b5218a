// The requests of `brisk bench throughput` and `brisk bench serve`: random token ids, or
// ShareGPT conversations as vLLM's benchmarks sample them (benchmarks/datasets.py, ShareGPT):
// the first human turn is the prompt and the "gpt" answer after it gives the output length (its
// token count), keeping only conversations with 4 <= prompt tokens <= 1024, 4 <= output tokens
// and prompt + output <= 2048 (or the model's context, when shorter). Files of prompts without
// answers get seeded gamma-distributed output lengths instead (in a file with some answers,
// conversations without one are skipped).
//
// Conversations are taken in file order (vLLM shuffles them with Python's random first; the
// files used here are already samples), so a workload depends on the file, the tokenizer and
// --num-prompts alone. A prompt is never sent twice unless --allow-repeats: repeated prompts
// would be served from the prefix cache and flatter the figures.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "brisk/engine.h"

namespace brisk::cli {

struct WorkloadOptions {
  int64_t num_prompts = 200;
  int64_t input_len = 128;        // random ids: prompt tokens
  int64_t output_len = 128;       // random ids: generated tokens
  std::string dataset;            // ShareGPT JSON; empty: random ids
  std::string tokenizer;          // folder of the tokenizer for dataset prompts (default: the model's)
  double mean_output_len = 180;   // files without answers: mean of the seeded output lengths
  int64_t max_input_len = 1024;   // files without answers: prompts are cut to this many tokens
  bool allow_repeats = false;     // cycle through the prompts when --num-prompts exceeds them
  uint64_t seed = 0;
};

// The model the workload is for, as far as it is known (a remote server's is not).
struct ModelLimits {
  std::filesystem::path model_dir;  // its tokenizer is the default one; empty: none
  bool has_tokenizer = false;       // the model folder has a tokenizer of its own
  int64_t vocab_size = 0;           // 0: unknown, ids are not checked here
  int64_t max_model_len = 0;        // 0: unknown
};

// The limits of a loaded engine for the model in `model_dir`.
ModelLimits model_limits(const Engine& engine, const std::filesystem::path& model_dir);

struct BenchRequest {
  std::vector<int32_t> prompt_ids;
  int64_t output_len = 0;  // max_tokens; with ignore_eos exactly this many tokens are generated
};

struct Workload {
  std::vector<BenchRequest> requests;
  std::string description;  // one line: count, mean/median prompt and output tokens, the source
};

// --num-prompts, --input-len, --output-len, --dataset, --tokenizer, --mean-output-len,
// --max-input-len, --allow-repeats, --seed.
void add_workload_options(CLI::App* command, WorkloadOptions& options);

// Throws brisk::Error naming the file, option or count at fault.
Workload make_workload(const WorkloadOptions& options, const ModelLimits& model);

}  // namespace brisk::cli
