// Option groups that several commands share, so `--help` reads the same everywhere (grouped
// like vLLM's and LMDeploy's: model, engine, sampling).
#pragma once

#include <CLI/CLI.hpp>

#include "brisk/engine.h"

namespace brisk::cli {

// --model (required) and the engine's options: --backend, --dummy-weights, --max-model-len,
// --kv-cache-memory, --max-num-seqs, --max-num-batched-tokens, --block-size, --no-prefix-caching,
// --enforce-eager.
void add_engine_options(CLI::App* command, EngineOptions& options);

// --max-tokens, --temperature, --top-p, --top-k, --min-p, penalties, --seed, stops, --ignore-eos.
void add_sampling_options(CLI::App* command, SamplingParams& sampling);

// Installs a progress bar for model loading on stderr when it is a terminal.
void show_load_progress(EngineOptions& options);

}  // namespace brisk::cli
