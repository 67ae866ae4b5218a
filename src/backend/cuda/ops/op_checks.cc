#include "backend/cuda/ops/op_checks.h"

#include <cstdint>

#include "core/error.h"

namespace brisk::cuda {

void check_view(std::string_view op, std::string_view name, const TensorView& view, int rank,
                Layout layout) {
  BRISK_CHECK(!view.empty(), "{}: {} is required but was not given", op, name);
  BRISK_CHECK(view.device() == Device::kCuda,
              "{}: {} is {} but the cuda backend needs device memory (copy it with "
              "Backend::copy or to_backend)", op, name, view.describe());
  BRISK_CHECK(view.rank() == rank, "{}: {} is {} but must have rank {}", op, name,
              view.describe(), rank);
  if (layout == Layout::kContiguous) {
    BRISK_CHECK(view.is_contiguous(), "{}: {} is {} and must be contiguous", op, name,
                view.describe());
  } else {
    BRISK_CHECK(view.size(-1) <= 1 || view.stride(-1) == 1,
                "{}: {} is {} with last-dimension stride {}; the last dimension must be "
                "contiguous", op, name, view.describe(), view.stride(-1));
  }
}

void check_float(std::string_view op, std::string_view name, const TensorView& view) {
  DType d = view.dtype();
  BRISK_CHECK(d == DType::kF32 || d == DType::kF16 || d == DType::kBF16,
              "{}: {} is {} but must be f32, f16 or bf16", op, name, view.describe());
}

void check_dtype(std::string_view op, std::string_view name, const TensorView& view, DType dtype) {
  BRISK_CHECK(view.dtype() == dtype, "{}: {} is {} but must be {}", op, name, view.describe(),
              dtype_name(dtype));
}

void check_index_vector(std::string_view op, std::string_view name, const TensorView& view,
                        int64_t num_elements) {
  check_view(op, name, view, 1, Layout::kContiguous);
  check_dtype(op, name, view, DType::kI32);
  BRISK_CHECK(view.size(0) == num_elements, "{}: {} is {} but must have {} elements", op, name,
              view.describe(), num_elements);
}

void check_same_shape(std::string_view op, std::string_view name_a, const TensorView& a,
                      std::string_view name_b, const TensorView& b) {
  BRISK_CHECK(a.shape() == b.shape(), "{}: {} is {} but {} is {}: shapes differ", op, name_a,
              a.describe(), name_b, b.describe());
}

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
