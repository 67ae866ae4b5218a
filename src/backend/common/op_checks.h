// Parameter checks shared by the ops of every backend. Every message starts with the op and names
// the parameter and its description ("gemm: w is bf16[128, 32] (cpu) ..."), so a caller can tell
// which argument of which call was wrong. The bodies live in op_checks.cc: nvcc cannot compile
// fmt's compile-time format strings, so .cu files must never see a BRISK_CHECK body.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/tensor.h"

namespace brisk {

enum class Layout {
  kStridedRows,  // the last dimension is contiguous; dimension 0 may have any stride
  kContiguous,   // the whole view is contiguous
};

// A required view: present, in the memory of the backend that runs on device, of the given rank
// and layout.
void check_view(std::string_view op, std::string_view name, const TensorView& view, int rank,
                Layout layout, Device device);
// f32, f16 or bf16.
void check_float(std::string_view op, std::string_view name, const TensorView& view);
void check_dtype(std::string_view op, std::string_view name, const TensorView& view, DType dtype);
// A present, contiguous, 1-D i32 view of num_elements elements in device's memory.
void check_index_vector(std::string_view op, std::string_view name, const TensorView& view,
                        int64_t num_elements, Device device);
// Two views must have equal shapes (e.g. out and x).
void check_same_shape(std::string_view op, std::string_view name_a, const TensorView& a,
                      std::string_view name_b, const TensorView& b);

}  // namespace brisk
