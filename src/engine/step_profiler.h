// Accumulates the StepProfile of engine.h: each step's kind, tokens and FLOPs when it is
// launched, its device time and the host's wait when it is collected, and the device's idle time
// between steps that followed each other without the engine running out of work.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "brisk/engine.h"
#include "engine/scheduler.h"
#include "model/model_config.h"

namespace brisk {

// What is known of a step when it is launched.
struct StepShape {
  StepKindProfile* kind = nullptr;  // the profile's entry for its kind
  const char* kind_name = "";       // "decode", "mixed" or "prefill"
  int64_t num_tokens = 0;
  double flops = 0;
};

class StepProfiler {
 public:
  explicit StepProfiler(const ModelConfig& config) : config_(config) {}

  // Before the plan's chunks are committed: its kind, tokens and FLOPs.
  StepShape shape(const BatchPlan& plan);
  // overlapped: queued while the previous step was still in flight.
  void launched(const StepShape& shape, double host_prepare_s, bool overlapped);
  // The previous step was collected before this one could be prepared (see engine.h).
  void synchronized() { profile_.num_synchronous_steps++; }
  // After the step's done fence was waited for; start may be null (then no device time).
  void collected(const StepShape& shape, const Fence* start, std::unique_ptr<Fence> done, double host_wait_s);
  void processed(double host_process_s) { profile_.host_process_s += host_process_s; }
  // The engine ran out of work: the next step's distance from the last is not idle time.
  void went_idle() { last_done_.reset(); }
  const StepProfile& profile() const { return profile_; }

 private:
  const ModelConfig& config_;
  StepProfile profile_;
  std::unique_ptr<Fence> last_done_;  // the latest collected step's end
};

}  // namespace brisk
