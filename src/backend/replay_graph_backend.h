// A backend that runs a synchronous one (the CPU reference) with recorded graphs that behave as
// CUDA graphs do, so that the engine's graph paths (decode graphs: batch buckets, padding rows,
// inputs refilled in place, sampled tokens fed into a graph's inputs) run, and are tested, on the
// CPU: `--backend cpu-graphs`.
//
// record_graph runs the ops once, then runs them again recording each op call with its
// parameters as they are, without executing it; a replay repeats exactly those calls on the same
// memory, so sizes and every other host value are fixed when recorded, as in a CUDA graph. Memory
// allocated and released by the recorded calls stays with the graph until it is destroyed (a
// replay writes it again). Collectives are not backend ops and would not be recorded, so the
// backend serves one rank.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "backend/backend.h"

namespace brisk {

class ReplayGraphBackend final : public Backend {
 public:
  explicit ReplayGraphBackend(std::unique_ptr<Backend> inner);
  ~ReplayGraphBackend() override;

  std::string name() const override { return inner_->name() + "-graphs"; }
  Device device() const override { return inner_->device(); }
  Allocator& allocator() override { return allocator_; }
  bool shares_host_memory() const override { return inner_->shares_host_memory(); }
  DType activation_dtype(DType weight_dtype) const override { return inner_->activation_dtype(weight_dtype); }
  Allocator& host_allocator() override { return inner_->host_allocator(); }
  std::unique_ptr<Fence> record_fence() override { return inner_->record_fence(); }
  void synchronize() override { inner_->synchronize(); }
  uint64_t free_memory_bytes() const override { return inner_->free_memory_bytes(); }
  Int4Layout repack_int4(TensorView qweight) override { return inner_->repack_int4(qweight); }

  void copy(TensorView dst, TensorView src) override;
  void copy_async(TensorView dst, TensorView src) override;
  void convert(TensorView dst, TensorView src) override;
  void embedding(const EmbeddingParams& p) override;
  void rms_norm(const RmsNormParams& p) override;
  void rope_kv_append(const RopeKvAppendParams& p) override;
  void gemm(const GemmParams& p) override;
  void gemm_w4a16(const GemmW4A16Params& p) override;
  void gemm_fp8(const GemmFp8Params& p) override;
  int64_t gemm_fp8_rows(int64_t m) const override { return inner_->gemm_fp8_rows(m); }
  void attention(const AttentionParams& p) override;
  void silu_mul(const SiluMulParams& p) override;
  void sample(const SampleParams& p) override;
  void top_logprobs(const TopLogprobsParams& p) override;
  void token_logprobs(const TokenLogprobsParams& p) override;
  void feed_tokens(const FeedTokensParams& p) override;
  void apply_token_bitmask(const TokenBitmaskParams& p) override;
  void logit_bias(const LogitBiasParams& p) override;
  std::unique_ptr<RecordedGraph> record_graph(const std::function<void()>& ops) override;

 private:
  class Graph;
  // The inner backend's allocator, except that while a graph is recorded the memory allocated
  // and released meanwhile goes to the graph instead of back.
  class GraphAllocator final : public Allocator {
   public:
    explicit GraphAllocator(Allocator& inner) : inner_(inner) {}
    void* allocate(size_t num_bytes) override;
    void deallocate(void* ptr, size_t num_bytes) override;
    Device device() const override { return inner_.device(); }
    void begin(Graph* graph);
    void end();

   private:
    Allocator& inner_;
    std::mutex mutex_;
    Graph* graph_ = nullptr;
    std::unordered_set<void*> recorded_;  // allocated since begin()
  };

  // Runs the call now, or records it into the graph being recorded.
  void run(std::function<void()> call);

  std::unique_ptr<Backend> inner_;
  GraphAllocator allocator_;
  Graph* recording_ = nullptr;
};

}  // namespace brisk
