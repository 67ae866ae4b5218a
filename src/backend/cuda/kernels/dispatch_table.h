// The dispatch tables of the kernel families: each maps a runtime key (KV dtype, head dim, the
// codes of a quantized cache, and optionally an upper bound of the context length the entry is
// tuned for) to a kernel instance's
// shape and launcher. A family lists its instances once in an X-macro, from which both the
// `extern template` declarations and its table are built; find_kernel returns the first entry
// that matches, or nullptr: the caller reports a missing key as a clear error.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

template <typename Args, typename Shape>
struct KernelEntry {
  FloatType kv_type;
  int head_dim;
  int64_t max_context;  // 0: any context length
  Shape shape;
  void (*launch)(const Args&, cudaStream_t);
  KvCodes codes = KvCodes::kNone;  // a quantized cache's codes (kv_type: what they dequantize to)
};

template <typename Args, typename Shape, size_t N>
const KernelEntry<Args, Shape>* find_kernel(const KernelEntry<Args, Shape> (&table)[N], FloatType kv_type,
                                            int head_dim, int64_t max_context_len = 0,
                                            KvCodes codes = KvCodes::kNone) {
  for (const KernelEntry<Args, Shape>& entry : table) {
    if (entry.kv_type == kv_type && entry.head_dim == head_dim && entry.codes == codes &&
        (entry.max_context == 0 || max_context_len <= entry.max_context))
      return &entry;
  }
  return nullptr;
}

}  // namespace brisk::cuda
