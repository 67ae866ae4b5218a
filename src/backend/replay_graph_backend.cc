#include "backend/replay_graph_backend.h"

#include <utility>

namespace brisk {

class ReplayGraphBackend::Graph final : public RecordedGraph {
 public:
  explicit Graph(Allocator& memory) : memory_(memory) {}
  ~Graph() override {
    for (const auto& [ptr, num_bytes] : kept_) memory_.deallocate(ptr, num_bytes);
  }
  void replay() override {
    for (const auto& call : calls_) call();
  }
  void add(std::function<void()> call) { calls_.push_back(std::move(call)); }
  void keep(void* ptr, size_t num_bytes) { kept_.emplace_back(ptr, num_bytes); }

 private:
  Allocator& memory_;  // the inner allocator
  std::vector<std::function<void()>> calls_;
  std::vector<std::pair<void*, size_t>> kept_;
};

void* ReplayGraphBackend::GraphAllocator::allocate(size_t num_bytes) {
  void* ptr = inner_.allocate(num_bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (graph_ != nullptr) recorded_.insert(ptr);
  return ptr;
}

void ReplayGraphBackend::GraphAllocator::deallocate(void* ptr, size_t num_bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (graph_ != nullptr && recorded_.erase(ptr) > 0) {
      graph_->keep(ptr, num_bytes);
      return;
    }
  }
  inner_.deallocate(ptr, num_bytes);
}

void ReplayGraphBackend::GraphAllocator::begin(Graph* graph) {
  std::lock_guard<std::mutex> lock(mutex_);
  graph_ = graph;
}

void ReplayGraphBackend::GraphAllocator::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  graph_ = nullptr;
  recorded_.clear();  // what the recorded calls allocated and kept belongs to its owners
}

ReplayGraphBackend::ReplayGraphBackend(std::unique_ptr<Backend> inner)
    : inner_(std::move(inner)), allocator_(inner_->allocator()) {}

ReplayGraphBackend::~ReplayGraphBackend() = default;

void ReplayGraphBackend::run(std::function<void()> call) {
  if (recording_ != nullptr) {
    recording_->add(std::move(call));
  } else {
    call();
  }
}

std::unique_ptr<RecordedGraph> ReplayGraphBackend::record_graph(const std::function<void()>& ops) {
  ops();  // as a CUDA graph's warm-up run
  auto graph = std::make_unique<Graph>(inner_->allocator());
  recording_ = graph.get();
  allocator_.begin(graph.get());
  struct Stop {  // however ops() ends
    ReplayGraphBackend& backend;
    ~Stop() {
      backend.recording_ = nullptr;
      backend.allocator_.end();
    }
  } stop{*this};
  ops();
  return graph;
}

void ReplayGraphBackend::copy(TensorView dst, TensorView src) {
  run([this, dst, src] { inner_->copy(dst, src); });
}
void ReplayGraphBackend::copy_async(TensorView dst, TensorView src) {
  run([this, dst, src] { inner_->copy_async(dst, src); });
}
void ReplayGraphBackend::convert(TensorView dst, TensorView src) {
  run([this, dst, src] { inner_->convert(dst, src); });
}
void ReplayGraphBackend::embedding(const EmbeddingParams& p) {
  run([this, p] { inner_->embedding(p); });
}
void ReplayGraphBackend::rms_norm(const RmsNormParams& p) {
  run([this, p] { inner_->rms_norm(p); });
}
void ReplayGraphBackend::rope_kv_append(const RopeKvAppendParams& p) {
  run([this, p] { inner_->rope_kv_append(p); });
}
void ReplayGraphBackend::gemm(const GemmParams& p) {
  run([this, p] { inner_->gemm(p); });
}
void ReplayGraphBackend::gemm_w4a16(const GemmW4A16Params& p) {
  run([this, p] { inner_->gemm_w4a16(p); });
}
void ReplayGraphBackend::gemm_fp8(const GemmFp8Params& p) {
  run([this, p] { inner_->gemm_fp8(p); });
}
void ReplayGraphBackend::attention(const AttentionParams& p) {
  run([this, p] { inner_->attention(p); });
}
void ReplayGraphBackend::silu_mul(const SiluMulParams& p) {
  run([this, p] { inner_->silu_mul(p); });
}
void ReplayGraphBackend::sample(const SampleParams& p) {
  run([this, p] { inner_->sample(p); });
}
void ReplayGraphBackend::top_logprobs(const TopLogprobsParams& p) {
  run([this, p] { inner_->top_logprobs(p); });
}
void ReplayGraphBackend::token_logprobs(const TokenLogprobsParams& p) {
  run([this, p] { inner_->token_logprobs(p); });
}
void ReplayGraphBackend::feed_tokens(const FeedTokensParams& p) {
  run([this, p] { inner_->feed_tokens(p); });
}
void ReplayGraphBackend::apply_token_bitmask(const TokenBitmaskParams& p) {
  run([this, p] { inner_->apply_token_bitmask(p); });
}

void ReplayGraphBackend::logit_bias(const LogitBiasParams& p) {
  run([this, p] { inner_->logit_bias(p); });
}

}  // namespace brisk
