// Parameter checks of the CUDA ops: the CPU reference's checks (same messages, naming the op and
// the parameter), except that views must live in device memory. Data-dependent checks (ids in
// range, ragged offsets, block tables) would need a device-to-host copy and a synchronisation
// per op, so the kernels guard their reads instead (see each op's notes).
#pragma once

#include <string_view>

#include "backend/cuda/kernels/launch.h"
#include "core/tensor.h"

namespace brisk::cuda {

enum class Layout {
  kStridedRows,  // the last dimension is contiguous; dimension 0 may have any stride
  kContiguous,   // the whole view is contiguous
};

// A required view: present, in device memory, of the given rank and layout.
void check_view(std::string_view op, std::string_view name, const TensorView& view, int rank,
                Layout layout);
// f32, f16 or bf16.
void check_float(std::string_view op, std::string_view name, const TensorView& view);
void check_dtype(std::string_view op, std::string_view name, const TensorView& view, DType dtype);
// A present, contiguous, 1-D i32 device view of num_elements elements.
void check_index_vector(std::string_view op, std::string_view name, const TensorView& view,
                        int64_t num_elements);
void check_same_shape(std::string_view op, std::string_view name_a, const TensorView& a,
                      std::string_view name_b, const TensorView& b);

// The kernels' element type of a float view (checked by check_float before).
FloatType float_type(DType dtype);
// Whether the view's first element and every row start are 16-byte aligned and its rows hold a
// multiple of 8 elements: then kernels may move 8 elements per access.
bool rows_vectorizable(const TensorView& view);

}  // namespace brisk::cuda
