// A backend that runs another one and times each of its ops on the device: a fence before and
// after every op, read once the op is done. It records no graphs (the engine then runs every step
// op by op), so it measures eager steps; the fences also count the device's wait for the host to
// launch the op's own kernels (a few microseconds each), which matters for small ops only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace brisk {

struct OpTime {
  std::string label;  // what the caller was doing (set_label), e.g. the step kind
  std::string op;     // the op, with the shape that tells its calls apart (a GEMM's weight)
  int64_t num_calls = 0;
  double device_s = 0;
};

class OpTimingBackend final : public Backend {
 public:
  explicit OpTimingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  Backend& inner() { return *inner_; }

  // Ops queued from now on are counted under this label.
  void set_label(std::string label) { label_ = std::move(label); }
  // Waits for every timed op queued so far and adds it to the totals.
  void flush();
  // Totals by label and op, most device time first.
  std::vector<OpTime> totals() const;

  std::string name() const override { return inner_->name(); }
  Device device() const override { return inner_->device(); }
  Allocator& allocator() override { return inner_->allocator(); }
  bool shares_host_memory() const override { return inner_->shares_host_memory(); }
  DType activation_dtype(DType weight_dtype) const override { return inner_->activation_dtype(weight_dtype); }
  void copy(TensorView dst, TensorView src) override;
  Allocator& host_allocator() override { return inner_->host_allocator(); }
  void copy_async(TensorView dst, TensorView src) override;
  std::unique_ptr<Fence> record_fence() override { return inner_->record_fence(); }
  void convert(TensorView dst, TensorView src) override;
  void synchronize() override { inner_->synchronize(); }
  uint64_t free_memory_bytes() const override { return inner_->free_memory_bytes(); }
  void embedding(const EmbeddingParams& p) override;
  void rms_norm(const RmsNormParams& p) override;
  void rope_kv_append(const RopeKvAppendParams& p) override;
  void gemm(const GemmParams& p) override;
  void gemm_w4a16(const GemmW4A16Params& p) override;
  void gemm_fp8(const GemmFp8Params& p) override;
  int64_t gemm_fp8_rows(int64_t m) const override { return inner_->gemm_fp8_rows(m); }
  Int4Layout repack_int4(TensorView qweight) override { return inner_->repack_int4(qweight); }
  void attention(const AttentionParams& p) override;
  void rope_append_attention(const RopeKvAppendParams& append, const AttentionParams& attn) override;
  void silu_mul(const SiluMulParams& p) override;
  void sample(const SampleParams& p) override;
  void top_logprobs(const TopLogprobsParams& p) override;
  void token_logprobs(const TokenLogprobsParams& p) override;
  void feed_tokens(const FeedTokensParams& p) override;
  void apply_token_bitmask(const TokenBitmaskParams& p) override;
  void logit_bias(const LogitBiasParams& p) override;
  std::unique_ptr<RecordedGraph> record_graph(const std::function<void()>&) override { return nullptr; }

 private:
  struct Pending {
    std::string op;
    std::string label;
    std::unique_ptr<Fence> start, end;
  };
  // Runs `run` between two fences, counted as `op`.
  template <typename Fn>
  void timed(std::string op, Fn&& run);

  std::unique_ptr<Backend> inner_;
  std::string label_;
  std::vector<Pending> pending_;
  std::map<std::pair<std::string, std::string>, OpTime> totals_;
};

}  // namespace brisk
