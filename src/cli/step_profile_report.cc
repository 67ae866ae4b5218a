#include "cli/step_profile_report.h"

#include <map>

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

std::string format_op_profile(const std::vector<OpProfileEntry>& ops) {
  std::map<std::string, double> kind_total;
  for (const OpProfileEntry& e : ops) kind_total[e.step_kind] += e.device_s;
  std::string out;
  for (const auto& [kind, total] : kind_total) {
    out += fmt::format("{}: device time by op (total {:.1f} ms)\n", kind, total * 1e3);
    for (const OpProfileEntry& e : ops) {
      if (e.step_kind != kind || e.device_s < 0.002 * total) continue;
      out += fmt::format("  {:52s} {:7d} calls {:9.1f} ms {:5.1f}% {:8.1f} us/call\n", e.op, e.num_calls,
                         e.device_s * 1e3, 100 * e.device_s / total, e.device_s * 1e6 / e.num_calls);
    }
  }
  return out;
}

void report_step_profile(const Engine& engine, const EngineOptions& options, nlohmann::json& out) {
  if (!options.profile_steps && !options.profile_ops) return;
  const StepProfile profile = engine.step_profile();
  fmt::print(stderr, "{}", format_step_profile(profile));
  out["step_profile"] = step_profile_json(profile);
  if (!options.profile_ops) return;
  const std::vector<OpProfileEntry> ops = engine.op_profile();
  fmt::print(stderr, "{}", format_op_profile(ops));
  for (const OpProfileEntry& e : ops)
    out["op_profile"].push_back({{"step_kind", e.step_kind}, {"op", e.op}, {"calls", e.num_calls},
                                 {"device_ms", e.device_s * 1e3}});
}

}  // namespace brisk::cli
