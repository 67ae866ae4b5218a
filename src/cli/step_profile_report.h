// The engine's step profile (EngineOptions::profile_steps) as the benches print it: per step kind
// the count, tokens, device time per token, host time and model FLOP utilisation, then the
// device's busy fraction and the loop's overlap.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "brisk/engine.h"

namespace brisk::cli {

// peak_flops: the device's dense 16-bit tensor rate, the denominator of the utilisation.
std::string format_step_profile(const StepProfile& profile, double peak_flops);
nlohmann::json step_profile_json(const StepProfile& profile, double peak_flops);

}  // namespace brisk::cli
