// The CUDA ops' own helpers, beside the checks every backend shares (backend/common/op_checks.h,
// re-exported here). Data-dependent checks (ids in range, ragged offsets, block tables) would need
// a device-to-host copy and a synchronisation per op, so the kernels guard their reads instead
// (see each op's notes).
#pragma once

#include "backend/common/op_checks.h"
#include "backend/cuda/kernels/launch.h"
#include "core/tensor.h"

namespace brisk::cuda {

// The kernels' element type of a float view (checked by check_float before).
FloatType float_type(DType dtype);
// Whether the view's first element and every row start are 16-byte aligned and its rows hold a
// multiple of 8 elements: then kernels may move 8 elements per access.
bool rows_vectorizable(const TensorView& view);

}  // namespace brisk::cuda
