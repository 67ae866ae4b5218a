// Element-wise dtype conversion of contiguous host views (f32, f16, bf16, and f8e4m3 with
// float_to_e4m3's saturating rounding).
#pragma once

#include "core/tensor.h"

namespace brisk {

// dst and src must have the same element count; both contiguous host views.
void convert_on_host(TensorView dst, TensorView src);
// Writes one float into element i of a floating host view.
void store_float(TensorView dst, int64_t i, float value);
float load_float(TensorView src, int64_t i);

}  // namespace brisk
