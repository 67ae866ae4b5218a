// copy (same dtype, raw bytes) and convert (between float dtypes, through fp32).
#include <algorithm>
#include <cstring>
#include <string_view>

#include "backend/common/op_checks.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {
namespace {

void check_pair(std::string_view op, const TensorView& dst, const TensorView& src) {
  BRISK_CHECK(!dst.empty() && !src.empty(), "{}: dst ({}) and src ({}) must both be given", op,
              dst.describe(), src.describe());
  BRISK_CHECK(dst.device() == Device::kCpu && src.device() == Device::kCpu,
              "{}: dst is {} and src is {} but the cpu backend only sees host memory", op,
              dst.describe(), src.describe());
  check_same_shape(op, "dst", dst, "src", src);
  BRISK_CHECK(dst.is_contiguous() && src.is_contiguous(),
              "{}: dst ({}) and src ({}) must both be contiguous", op, dst.describe(),
              src.describe());
}

}  // namespace

void copy(TensorView dst, TensorView src) {
  check_pair("copy", dst, src);
  BRISK_CHECK(dst.dtype() == src.dtype(), "copy: dst is {} but src is {}: dtypes differ (use convert)",
              dst.describe(), src.describe());
  std::memmove(dst.data(), src.data(), src.num_bytes());
}

void convert(TensorView dst, TensorView src) {
  check_pair("convert", dst, src);
  check_float("convert", "dst", dst);
  check_float("convert", "src", src);
  if (dst.dtype() == src.dtype()) {
    std::memmove(dst.data(), src.data(), src.num_bytes());
    return;
  }
  // Chunks small enough for a stack buffer, large enough to amortise the pool's scheduling.
  constexpr int64_t kChunk = 4096;
  const int64_t num_elements = src.num_elements();
  const int64_t num_chunks = (num_elements + kChunk - 1) / kChunk;
  LoadFn load = load_fn(src.dtype());
  StoreFn store = store_fn(dst.dtype());
  const char* in = static_cast<const char*>(src.data());
  char* out = static_cast<char*>(dst.data());
  parallel_for(num_chunks, 16, [&](int64_t begin, int64_t end) {
    float scratch[kChunk];
    for (int64_t c = begin; c < end; ++c) {
      int64_t start = c * kChunk;
      int64_t count = std::min(kChunk, num_elements - start);
      load(in + dtype_bytes(src.dtype(), start), scratch, count);
      store(scratch, out + dtype_bytes(dst.dtype(), start), count);
    }
  });
}

}  // namespace brisk::cpu
