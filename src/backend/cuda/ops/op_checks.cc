#include "backend/cuda/ops/op_checks.h"

#include <cstdint>

#include "core/error.h"

namespace brisk::cuda {

FloatType float_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return FloatType::kF32;
    case DType::kF16: return FloatType::kF16;
    case DType::kBF16: return FloatType::kBF16;
    default: break;
  }
  throw_error(ErrorCode::kInternal, "cuda backend: {} is not a float dtype", dtype_name(dtype));
}

bool rows_vectorizable(const TensorView& view) {
  if (view.empty()) return true;
  const int64_t cols = view.size(-1);
  const size_t element_bytes = dtype_bytes(view.dtype(), 1);
  const bool rows_aligned =
      view.rank() < 2 || view.size(0) <= 1 || (view.stride(0) * element_bytes) % 16 == 0;
  return cols % 8 == 0 && reinterpret_cast<uintptr_t>(view.data()) % 16 == 0 && rows_aligned;
}

}  // namespace brisk::cuda
