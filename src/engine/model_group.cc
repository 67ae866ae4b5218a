#include "engine/model_group.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "backend/make_backend.h"
#include "core/error.h"
#include "kv/kv_budget.h"
#include "model/kv_cache.h"

namespace brisk {

ModelGroup ModelGroup::load(const EngineOptions& options) {
  const int size = options.tensor_parallel_size;
  BRISK_CHECK(size >= 1, "--tensor-parallel-size must be at least 1, got {}", size);
  ModelGroup group;
  for (int r = 0; r < size; ++r) group.backends.push_back(make_backend(options.backend, r));
  if (size > 1) {
    std::vector<Backend*> backends;
    for (const auto& b : group.backends) backends.push_back(b.get());
    group.comms = make_communicators(backends);
  }
  if (options.profile_ops) {  // rank 0's ops (the ranks run the same ops on their shards)
    auto timer = std::make_unique<OpTimingBackend>(std::move(group.backends.front()));
    timer->set_label("start-up");
    group.op_timer = timer.get();
    group.backends.front() = std::move(timer);
  }
  for (int r = 0; r < size; ++r) {
    ModelLoadOptions load;
    load.dummy_weights = options.dummy_weights;
    load.max_model_len = options.max_model_len;
    if (r == 0) load.on_progress = options.on_load_progress;
    load.tensor_parallel = {r, size, size > 1 ? group.comms[r].get() : nullptr};
    bind_thread(*group.backends[r]);
    group.models.push_back(LlamaModel::load(options.model_dir, *group.backends[r], load));
  }
  bind_thread(*group.backends.front());
  if (size > 1)
    spdlog::info("tensor parallelism: {} ranks, each with {} of {} query heads, {} KV heads, {} of {} MLP features",
                 size, group.model().shard_config().num_heads, group.model().config().num_heads,
                 group.model().shard_config().num_kv_heads, group.model().shard_config().intermediate_size,
                 group.model().config().intermediate_size);
  return group;
}

std::vector<LlamaModel*> ModelGroup::ranks() const {
  std::vector<LlamaModel*> out;
  for (const auto& m : models) out.push_back(m.get());
  return out;
}

int64_t ModelGroup::kv_blocks(const EngineOptions& options, KvQuant quant) const {
  if (options.num_kv_blocks > 0) return options.num_kv_blocks;
  const LlamaModel& m = model();
  const Backend& backend = *backends.front();
  const size_t bytes_per_block =
      KvCache::bytes_per_block(m.shard_config(), m.activation_dtype(), options.block_size, quant);
  std::string memory = options.kv_cache_memory;
  if (memory.empty()) memory = backend.device() == Device::kCpu ? "0.2" : "0.9";
  // The step's activations come from the same memory: keep twice their estimate (the caching
  // allocator rounds sizes up) plus 1 GiB out of what the fraction applies to.
  const ModelConfig& c = m.shard_config();
  const uint64_t act_bytes = dtype_bytes(m.activation_dtype(), 1);
  const uint64_t per_token = (4 * c.hidden_size + (c.num_heads + 2 * c.num_kv_heads) * c.head_dim +
                              3 * c.intermediate_size) * act_bytes;
  // int4 layers may multiply through a dense copy of the weight in scratch (the CUDA backend's
  // gemm_w4a16 past 4096 rows, or for weights its tile layout cannot take): room for the largest.
  uint64_t int4_scratch = 0;
  if (c.quantization.method != QuantMethod::kNone && !backend.shares_host_memory()) {
    const uint64_t hidden = c.hidden_size, inter = c.intermediate_size, attn = c.num_heads * c.head_dim;
    const uint64_t qkv = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
    int4_scratch = std::max({qkv * hidden, attn * hidden, 2 * inter * hidden}) * act_bytes;
  }
  // A quantized cache's prefill attention may read a 16-bit copy of the batch's blocks (the CUDA
  // backend's, at most 1 GiB: ops/attention.cc kMaxDequantizedBytes).
  const uint64_t kv_dequant_scratch = quant != KvQuant::kNone && !backend.shares_host_memory() ? 1ull << 30 : 0;
  const uint64_t workspace = 2 * (static_cast<uint64_t>(options.max_num_batched_tokens) * per_token +
                                  static_cast<uint64_t>(options.max_num_seqs) * m.config().vocab_size * 8) +
                             int4_scratch + kv_dequant_scratch + (1ull << 30);
  // Ranks on the CPU share its memory; GPU ranks each have their own.
  uint64_t free_bytes = backend.free_memory_bytes();
  if (backend.shares_host_memory()) free_bytes /= backends.size();
  BRISK_CHECK(free_bytes > workspace, "only {:.2f} GiB free after loading the model; the step workspace needs "
              "about {:.2f} GiB: lower --max-num-batched-tokens or --max-num-seqs", free_bytes / 1073741824.0,
              workspace / 1073741824.0);
  KvBudget budget = compute_kv_budget(KvMemorySpec::parse(memory), free_bytes - workspace,
                                      bytes_per_block, options.block_size);
  spdlog::info("{}{}", budget.describe(options.block_size),
               backends.size() > 1 ? fmt::format(" on each of {} ranks", backends.size()) : std::string());
  return budget.num_blocks;
}

}  // namespace brisk
