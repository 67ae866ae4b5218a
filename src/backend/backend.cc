#include "backend/backend.h"

#include <chrono>
#include <fstream>

#include "core/error.h"

namespace brisk {

uint64_t Backend::free_memory_bytes() const {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  throw_error(ErrorCode::kBackend, "cannot read MemAvailable from /proc/meminfo to size the KV cache");
}

namespace {

// The fence of a backend whose ops have all run by the time they return.
class HostClockFence final : public Fence {
 public:
  void wait() override {}
  double seconds_since(const Fence& earlier) const override {
    return std::chrono::duration<double>(time_ - static_cast<const HostClockFence&>(earlier).time_).count();
  }

 private:
  std::chrono::steady_clock::time_point time_ = std::chrono::steady_clock::now();
};

}  // namespace

std::unique_ptr<Fence> Backend::record_fence() { return std::make_unique<HostClockFence>(); }

std::unique_ptr<RecordedGraph> Backend::record_graph(const std::function<void()>&) { return nullptr; }

Int4Layout Backend::repack_int4(TensorView qweight) {
  BRISK_CHECK(qweight.dtype() == DType::kI4 && qweight.rank() == 2, "repack_int4: qweight is {} but must be i4 [N, K]",
              qweight.describe());
  return Int4Layout::kRows;
}

void Backend::rope_append_attention(const RopeKvAppendParams& append, const AttentionParams& attn) {
  rope_kv_append(append);
  attention(attn);
}

TensorView to_backend(Backend& backend, TensorView host, std::vector<Tensor>& keep) {
  if (backend.shares_host_memory()) return host;
  keep.emplace_back(backend.allocator(), host.dtype(), host.shape());
  backend.copy(keep.back(), host);
  return keep.back().view();
}

}  // namespace brisk
