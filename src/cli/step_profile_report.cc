#include "cli/step_profile_report.h"

#include <fmt/format.h>

namespace brisk::cli {
namespace {

struct Row {
  const char* name;
  StepKindProfile kind;
};

StepKindProfile total_of(const StepProfile& p) {
  StepKindProfile t;
  for (const StepKindProfile* k : {&p.decode, &p.mixed, &p.prefill}) {
    t.num_steps += k->num_steps;
    t.num_tokens += k->num_tokens;
    t.device_s += k->device_s;
    t.host_prepare_s += k->host_prepare_s;
    t.host_wait_s += k->host_wait_s;
    t.flops += k->flops;
  }
  return t;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

std::string format_step_profile(const StepProfile& p, double peak_flops) {
  const StepKindProfile total = total_of(p);
  std::string out = fmt::format("{:8s} {:>7s} {:>9s} {:>8s} {:>10s} {:>9s} {:>10s} {:>10s} {:>8s} {:>6s}\n", "step",
                                "steps", "tokens", "tok/step", "device ms", "us/token", "prepare ms", "wait ms",
                                "TFLOP/s", "MFU");
  for (const Row& row : {Row{"decode", p.decode}, Row{"mixed", p.mixed}, Row{"prefill", p.prefill}, Row{"total", total}}) {
    const StepKindProfile& k = row.kind;
    if (k.num_steps == 0) continue;
    const double flops_per_s = ratio(k.flops, k.device_s);
    out += fmt::format("{:8s} {:7d} {:9d} {:8.1f} {:10.1f} {:9.2f} {:10.1f} {:10.1f} {:8.1f} {:5.1f}%\n", row.name,
                       k.num_steps, k.num_tokens, ratio(k.num_tokens, k.num_steps), k.device_s * 1e3,
                       ratio(k.device_s * 1e6, k.num_tokens), k.host_prepare_s * 1e3, k.host_wait_s * 1e3,
                       flops_per_s / 1e12, 100 * ratio(flops_per_s, peak_flops));
  }
  out += fmt::format("device busy {:.1f}% between steps (idle {:.1f} ms) | host processing {:.1f} ms | {} of {} steps "
                     "queued while the previous ran, {} waited for it (penalties)\n",
                     100 * ratio(total.device_s, total.device_s + p.device_idle_s), p.device_idle_s * 1e3,
                     p.host_process_s * 1e3, p.num_overlapped_steps, total.num_steps, p.num_synchronous_steps);
  return out;
}

nlohmann::json step_profile_json(const StepProfile& p, double peak_flops) {
  auto kind = [&](const StepKindProfile& k) {
    return nlohmann::json{{"steps", k.num_steps}, {"tokens", k.num_tokens}, {"device_ms", k.device_s * 1e3},
                          {"us_per_token", ratio(k.device_s * 1e6, k.num_tokens)},
                          {"host_prepare_ms", k.host_prepare_s * 1e3}, {"host_wait_ms", k.host_wait_s * 1e3},
                          {"mfu", ratio(ratio(k.flops, k.device_s), peak_flops)}};
  };
  const StepKindProfile total = total_of(p);
  return {{"decode", kind(p.decode)}, {"mixed", kind(p.mixed)}, {"prefill", kind(p.prefill)}, {"total", kind(total)},
          {"device_busy", ratio(total.device_s, total.device_s + p.device_idle_s)},
          {"device_idle_ms", p.device_idle_s * 1e3}, {"host_process_ms", p.host_process_s * 1e3},
          {"overlapped_steps", p.num_overlapped_steps}, {"synchronous_steps", p.num_synchronous_steps},
          {"peak_flops", peak_flops}};
}

}  // namespace brisk::cli
