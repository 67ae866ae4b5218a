#include "backend/common/op_checks.h"

#include "core/error.h"

namespace brisk {

void check_view(std::string_view op, std::string_view name, const TensorView& view, int rank,
                Layout layout, Device device) {
  BRISK_CHECK(!view.empty(), "{}: {} is required but was not given", op, name);
  if (device == Device::kCpu) {
    BRISK_CHECK(view.device() == Device::kCpu,
                "{}: {} is {} but the cpu backend needs host memory", op, name, view.describe());
  } else {
    BRISK_CHECK(view.device() == Device::kCuda,
                "{}: {} is {} but the cuda backend needs device memory (copy it with "
                "Backend::copy or to_backend)", op, name, view.describe());
  }
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
                        int64_t num_elements, Device device) {
  check_view(op, name, view, 1, Layout::kContiguous, device);
  check_dtype(op, name, view, DType::kI32);
  BRISK_CHECK(view.size(0) == num_elements, "{}: {} is {} but must have {} elements", op, name,
              view.describe(), num_elements);
}

void check_same_shape(std::string_view op, std::string_view name_a, const TensorView& a,
                      std::string_view name_b, const TensorView& b) {
  BRISK_CHECK(a.shape() == b.shape(), "{}: {} is {} but {} is {}: shapes differ", op, name_a,
              a.describe(), name_b, b.describe());
}

}  // namespace brisk
