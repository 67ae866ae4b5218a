// Parameter checks shared by the CPU ops. Every message starts with the op and names the
// parameter and its description ("gemm: w is bf16[128, 32] (cpu) ..."), so a caller can tell
// which argument of which call was wrong.
#pragma once

#include <string_view>

#include "core/tensor.h"

namespace brisk::cpu {

enum class Layout {
  kStridedRows,  // the last dimension is contiguous; dimension 0 may have any stride
  kContiguous,   // the whole view is contiguous
};

// A required view: present, in host memory, of the given rank and layout.
void check_view(std::string_view op, std::string_view name, const TensorView& view, int rank,
                Layout layout);
// f32, f16 or bf16.
void check_float(std::string_view op, std::string_view name, const TensorView& view);
void check_dtype(std::string_view op, std::string_view name, const TensorView& view, DType dtype);
// A present, contiguous, 1-D i32 view of num_elements elements.
void check_index_vector(std::string_view op, std::string_view name, const TensorView& view,
                        int64_t num_elements);
// Two views must have equal shapes (e.g. out and x).
void check_same_shape(std::string_view op, std::string_view name_a, const TensorView& a,
                      std::string_view name_b, const TensorView& b);

}  // namespace brisk::cpu
