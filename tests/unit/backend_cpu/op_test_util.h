// Helpers for the CPU op tests: host tensors filled from doubles, read back as doubles,
// closeness checks with per-dtype tolerances, and error-message assertions.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "brisk/status.h"
#include "core/tensor.h"

namespace brisk::testing {

inline void store_double(void* data, DType dtype, int64_t index, double value) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(data)[index] = static_cast<float>(value); return;
    case DType::kF16: static_cast<Half*>(data)[index] = float_to_half(static_cast<float>(value)); return;
    case DType::kBF16: static_cast<BFloat16*>(data)[index] = float_to_bf16(static_cast<float>(value)); return;
    case DType::kI32: static_cast<int32_t*>(data)[index] = static_cast<int32_t>(value); return;
    default: FAIL() << "store_double: unsupported dtype";
  }
}

inline double load_double(const void* data, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(data)[index];
    case DType::kF16: return half_to_float(static_cast<const Half*>(data)[index]);
    case DType::kBF16: return bf16_to_float(static_cast<const BFloat16*>(data)[index]);
    case DType::kI32: return static_cast<const int32_t*>(data)[index];
    default: ADD_FAILURE() << "load_double: unsupported dtype"; return 0;
  }
}

// Element offset of flat (row-major) index i in a view of rank <= 2 with any row stride.
inline int64_t view_offset(const TensorView& view, int64_t i) {
  if (view.rank() < 2) return i;
  const int64_t cols = view.size(-1);
  int64_t row = i / cols;
  return row * view.stride(0) + (i % cols);
}

// A contiguous host tensor holding values rounded to dtype.
inline Tensor make_tensor(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(cpu_allocator(), dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), shape.num_elements());
  for (size_t i = 0; i < values.size(); ++i) store_double(t.view().data(), dtype, i, values[i]);
  return t;
}

inline Tensor make_i32(Shape shape, const std::vector<int32_t>& values) {
  return make_tensor(DType::kI32, shape, std::vector<double>(values.begin(), values.end()));
}

// The elements of a view (rank <= 2 with strided rows, or contiguous of any rank) as doubles.
inline std::vector<double> to_doubles(const TensorView& view) {
  std::vector<double> out(view.num_elements());
  for (int64_t i = 0; i < view.num_elements(); ++i) {
    out[i] = load_double(view.data(), view.dtype(), view.rank() <= 2 ? view_offset(view, i) : i);
  }
  return out;
}

inline std::vector<double> random_values(size_t count, std::mt19937& rng, double lo = -1.0,
                                         double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(count);
  for (auto& v : out) v = dist(rng);
  return out;
}

// A random tensor; the reference reads its stored (rounded) values back with to_doubles.
inline Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng, double lo = -1.0,
                            double hi = 1.0) {
  return make_tensor(dtype, shape, random_values(shape.num_elements(), rng, lo, hi));
}

// Relative tolerance of one rounding to dtype, with headroom for fp32 accumulation.
inline double rounding_tolerance(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return 1.0 / 128;  // 8 significant bits: half an ulp is 2^-9, plus slack
    case DType::kF16: return 1.0 / 1024;  // 11 significant bits
    default: return 1e-5;                 // fp32 accumulation over a few hundred terms
  }
}

inline std::string dtype_str(DType dtype) { return std::string(dtype_name(dtype)); }

// |actual - expected| <= atol + rtol * |expected| elementwise; reports the first few misses.
inline void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                         double atol, double rtol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int misses = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double bound = atol + rtol * std::abs(expected[i]);
    if (!(std::abs(actual[i] - expected[i]) <= bound)) {
      if (++misses <= 5) {
        ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected "
                      << expected[i] << " (bound " << bound << ")";
      }
    }
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << actual.size() << " elements off";
}

}  // namespace brisk::testing

namespace brisk {
// gtest prints a DType (a test parameter, say) by name rather than as a byte dump.
inline void PrintTo(DType dtype, std::ostream* os) { *os << dtype_name(dtype); }
}  // namespace brisk

// Expects statement to throw brisk::Error whose message contains substring.
#define EXPECT_ERROR_CONTAINS(statement, substring)                                        \
  do {                                                                                     \
    try {                                                                                  \
      statement;                                                                           \
      ADD_FAILURE() << "expected brisk::Error containing '" << (substring) << "'";         \
    } catch (const ::brisk::Error& e) {                                                    \
      EXPECT_NE(std::string(e.what()).find(substring), std::string::npos)                  \
          << "message '" << e.what() << "' lacks '" << (substring) << "'";                 \
    }                                                                                      \
  } while (0)
