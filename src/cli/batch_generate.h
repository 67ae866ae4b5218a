// `brisk generate --input prompts.jsonl --output results.jsonl`: a file of requests, all in
// flight at once, results written in input order.
#pragma once

#include <string>

#include "brisk/engine.h"

namespace brisk::cli {

// Each input line: {"prompt": str} or {"prompt_ids": [int]}, with optional max_tokens,
// temperature, top_p, top_k, min_p, seed, stop, stop_token_ids, ignore_eos. `defaults` gives the
// rest. A bad line fails the whole run before anything is submitted, naming the line.
int run_batch_generate(const EngineOptions& engine_options, const SamplingParams& defaults,
                       const std::string& input_path, const std::string& output_path);

}  // namespace brisk::cli
