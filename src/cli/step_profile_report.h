// The engine's step profile (EngineOptions::profile_steps) as the benches print it: per step kind
// the count, tokens, device time per token, host time and model FLOP utilisation, then the
// device's busy fraction and the loop's overlap.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"

namespace brisk::cli {

// Dense bf16 tensor FLOP/s of an H100 / H200 SXM: the denominator of the model FLOP utilisation.
inline constexpr double kPeakFlops = 989e12;

std::string format_step_profile(const StepProfile& profile, double peak_flops = kPeakFlops);
nlohmann::json step_profile_json(const StepProfile& profile, double peak_flops = kPeakFlops);
// Each step kind's ops, most device time first, with their share of the kind's time.
std::string format_op_profile(const std::vector<OpProfileEntry>& ops);
// With options.profile_steps (or profile_ops): prints the engine's step profile (and op profile)
// to stderr and adds it to `out` as "step_profile" (and "op_profile"); otherwise nothing.
void report_step_profile(const Engine& engine, const EngineOptions& options, nlohmann::json& out);

}  // namespace brisk::cli
