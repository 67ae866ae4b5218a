// Tiled tensor maps of 16-bit (and 8-bit) elements for the bulk tensor copy engine (TMA), as the Hopper
// kernels use them: 128-byte swizzle, L2 promotion of 256 bytes, zeros for elements outside the
// tensor. Encoded on the host (cuTensorMapEncodeTiled through the runtime's driver entry point:
// nothing links libcuda) and passed to kernels by value (__grid_constant__), so a captured CUDA
// graph keeps its own copy. No fmt here: .cu files include this header.
#pragma once

#include <cuda.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

// Whether the driver offers cuTensorMapEncodeTiled.
bool tensor_map_encoding_available();

// Encodes a map of `rank` dimensions (innermost first; strides in bytes of dimensions 1 and up)
// over bf16 or f16 elements at base, element strides 1. Throws brisk::Error naming `op` when the
// driver offers no encoder; returns the driver's result (the caller says what it was encoding).
CUresult encode_tensor_map_16bit(CUtensorMap& map, FloatType type, int rank, const void* base,
                                 const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                 const char* op);

// A map over a 16-bit [rows, k] matrix (rows `stride` elements apart, 16-byte aligned) in boxes of
// 64 K values (one 128-byte panel row) x box_rows rows; rows past the matrix read as zeros. Throws
// naming op and what when the driver refuses it.
CUtensorMap panel_tensor_map_16bit(const void* base, FloatType type, int64_t rows, int64_t k, int64_t stride,
                                   int box_rows, const char* op, const char* what);
// The same over a one-byte (e4m3) matrix: boxes of 128 K values x box_rows rows.
CUtensorMap panel_tensor_map_8bit(const void* base, int64_t rows, int64_t k, int64_t stride, int box_rows,
                                  const char* op, const char* what);

}  // namespace brisk::cuda
