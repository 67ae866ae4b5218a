#include "backend/cpu/float_rows.h"

#include <cstring>

#include "core/error.h"

namespace brisk::cpu {
namespace {

template <typename T>
void load_row(const void* src, float* dst, int64_t num_elements) {
  const T* in = static_cast<const T*>(src);
  for (int64_t i = 0; i < num_elements; ++i) dst[i] = to_float(in[i]);
}

template <typename T>
void store_row(const float* src, void* dst, int64_t num_elements) {
  T* out = static_cast<T*>(dst);
  for (int64_t i = 0; i < num_elements; ++i) out[i] = from_float<T>(src[i]);
}

// bf16 is the upper half of an f32, so widening is a 16-bit shift: bit-identical to
// bf16_to_float, written out because a loop over that out-of-line call cannot be vectorised and
// widening bf16 weights dominates the cost of CPU decoding.
void load_bf16(const void* src, float* dst, int64_t num_elements) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < num_elements; ++i) {
    const uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(dst + i, &bits, sizeof(float));
  }
}

// f32 rows may alias (rms_norm's out may be x), so memmove rather than memcpy.
void load_f32(const void* src, float* dst, int64_t num_elements) {
  std::memmove(dst, src, num_elements * sizeof(float));
}
void store_f32(const float* src, void* dst, int64_t num_elements) {
  std::memmove(dst, src, num_elements * sizeof(float));
}

}  // namespace

LoadFn load_fn(DType dtype) {
  switch (dtype) {
    case DType::kF32: return load_f32;
    case DType::kF16: return load_row<Half>;
    case DType::kBF16: return load_bf16;
    default: break;
  }
  throw_error(ErrorCode::kInternal, "cpu backend: no fp32 load for dtype {}", dtype_name(dtype));
}

StoreFn store_fn(DType dtype) {
  switch (dtype) {
    case DType::kF32: return store_f32;
    case DType::kF16: return store_row<Half>;
    case DType::kBF16: return store_row<BFloat16>;
    default: break;
  }
  throw_error(ErrorCode::kInternal, "cpu backend: no fp32 store for dtype {}", dtype_name(dtype));
}

}  // namespace brisk::cpu
