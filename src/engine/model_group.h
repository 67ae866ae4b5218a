// The models an engine serves from: one, or one per rank of a tensor-parallel group
// (--tensor-parallel-size), each rank with its own backend and communicator.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"
#include "backend/op_timing_backend.h"
#include "brisk/engine.h"
#include "model/llama_model.h"

namespace brisk {

struct ModelGroup {
  std::vector<std::unique_ptr<Backend>> backends;      // rank r's at index r
  std::vector<std::unique_ptr<Communicator>> comms;    // empty for one rank
  std::vector<std::unique_ptr<LlamaModel>> models;
  OpTimingBackend* op_timer = nullptr;  // rank 0's backend itself with options.profile_ops

  // Creates the backends and loads every rank's shard of options.model_dir.
  static ModelGroup load(const EngineOptions& options);
  LlamaModel& model() const { return *models.front(); }
  std::vector<LlamaModel*> ranks() const;
  // KV blocks each rank's cache gets from options.kv_cache_memory (or num_kv_blocks), after the
  // step workspace; logs the budget.
  int64_t kv_blocks(const EngineOptions& options, KvQuant quant) const;
};

}  // namespace brisk
