// Moving rows of f32 / f16 / bf16 tensors in and out of fp32 scratch, and the fp32 row math
// (dot product, RMS normalisation) the CPU ops share. Every op does its math in fp32: it picks a load and a store function once
// per tensor (the dtype switch stays out of the element loops), converts a row into scratch,
// computes, and converts the result back.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace brisk::cpu {

using LoadFn = void (*)(const void* src, float* dst, int64_t num_elements);
using StoreFn = void (*)(const float* src, void* dst, int64_t num_elements);

// f32, f16 and bf16 only; other dtypes are rejected by the ops' checks before we get here.
LoadFn load_fn(DType dtype);
StoreFn store_fn(DType dtype);

// Address of element [row, col] of a 2-D view whose last dimension is contiguous.
inline char* element_ptr(const TensorView& view, int64_t row, int64_t col) {
  return static_cast<char*>(view.data()) +
         dtype_bytes(view.dtype(), row * view.stride(0) + col);
}

// A row as fp32: points straight at f32 data, or converts into scratch for other dtypes.
inline const float* row_as_f32(const void* src, DType dtype, LoadFn load, float* scratch,
                               int64_t num_elements) {
  if (dtype == DType::kF32) return static_cast<const float*>(src);
  load(src, scratch, num_elements);
  return scratch;
}

// Dot product with eight independent fp32 partial sums: the compiler can vectorise it without
// -ffast-math, and the summation order depends only on n, so a result never depends on which
// thread or batch computed it (the CPU backend's batch invariance rests on this).
inline float dot_f32(const float* a, const float* b, int64_t n) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) partial[j] += a[k + j] * b[k + j];
  }
  for (int j = 0; k < n; ++k, ++j) partial[j] += a[k] * b[k];
  return ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
         ((partial[2] + partial[6]) + (partial[3] + partial[7]));
}

// The gemm's dot product: while n is a multiple of 16 above 32, the sum of its two halves, each
// summed the same way; else dot_f32. A product over K split into 2^k equal parts of more than 16
// (the ranks of a row-parallel layer) is then the pairwise sum of the parts' products bit for bit,
// which is how the CPU's all-reduce adds them (cpu/thread_communicator.h).
inline float dot_f32_halving(const float* a, const float* b, int64_t n) {
  if (n > 32 && n % 16 == 0) {
    const int64_t half = n / 2;
    return dot_f32_halving(a, b, half) + dot_f32_halving(a + half, b + half, half);
  }
  return dot_f32(a, b, n);
}

// out = x / sqrt(mean(x^2) + eps) * weight, all in fp32 (Hugging Face's LlamaRMSNorm
// normalises in fp32 too; we also keep the product with weight in fp32 and round once, on store).
// out may alias x.
inline void rms_norm_row(const float* x, const float* weight, int64_t dim, float eps, float* out) {
  float mean_square = dot_f32(x, x, dim) / static_cast<float>(dim);
  float inv_rms = 1.0f / std::sqrt(mean_square + eps);
  for (int64_t i = 0; i < dim; ++i) out[i] = x[i] * inv_rms * weight[i];
}

}  // namespace brisk::cpu
