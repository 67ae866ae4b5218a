// convert: float dtype conversion on the device.
#include <cstring>

#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "core/error.h"

namespace brisk::cuda {

void convert(const OpContext& ctx, TensorView dst, TensorView src) {
  constexpr std::string_view kOp = "convert";
  BRISK_CHECK(!dst.empty() && !src.empty(), "convert: dst ({}) and src ({}) must both be given",
              dst.describe(), src.describe());
  BRISK_CHECK(dst.device() == Device::kCuda && src.device() == Device::kCuda,
              "convert: dst is {} and src is {} but the cuda backend converts device memory only",
              dst.describe(), src.describe());
  check_same_shape(kOp, "dst", dst, "src", src);
  check_float(kOp, "dst", dst);
  check_float(kOp, "src", src);
  const bool contiguous = dst.is_contiguous() && src.is_contiguous();
  BRISK_CHECK(contiguous || (dst.rank() == 2 && dst.stride(1) == 1 && src.stride(1) == 1),
              "convert: dst ({}) and src ({}) must be contiguous, or matrices with contiguous rows",
              dst.describe(), src.describe());
  if (src.num_elements() == 0) return;
  if (contiguous && dst.dtype() == src.dtype()) {
    BRISK_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.num_bytes(),
                                     cudaMemcpyDeviceToDevice, ctx.stream));
    return;
  }
  ConvertArgs a;
  a.src = src.data();
  a.src_type = float_type(src.dtype());
  a.dst = dst.data();
  a.dst_type = float_type(dst.dtype());
  a.num_elements = src.num_elements();
  if (!contiguous) {
    a.num_cols = src.size(1);
    a.src_stride = src.stride(0);
    a.dst_stride = dst.stride(0);
  }
  launch_convert(a, ctx.stream);
}

}  // namespace brisk::cuda
