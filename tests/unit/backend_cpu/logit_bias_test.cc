#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

// Each named (row, token) logit gets its value added, in strided rows; nothing else changes.
TEST(CpuLogitBias, AddsToTheNamedLogitsOnly) {
  auto backend = make_cpu_backend();
  const int64_t vocab = 10, stride = 12;
  std::vector<float> logits(3 * stride, 1.0f);
  std::vector<int32_t> rows{0, 2, 2}, tokens{9, 0, 4};
  std::vector<float> values{-100.0f, 2.5f, 0.5f};
  const std::array<int64_t, Shape::kMaxDims> strides{stride, 1};
  backend->logit_bias({.logits = TensorView(logits.data(), DType::kF32, {3, vocab}, strides, Device::kCpu),
                       .rows = TensorView(rows.data(), DType::kI32, {3}),
                       .tokens = TensorView(tokens.data(), DType::kI32, {3}),
                       .values = TensorView(values.data(), DType::kF32, {3})});
  for (int64_t i = 0; i < 3 * stride; ++i) {
    const float expected = i == 9 ? -99.0f : (i == 2 * stride ? 3.5f : (i == 2 * stride + 4 ? 1.5f : 1.0f));
    EXPECT_EQ(logits[i], expected) << i;
  }
}

TEST(CpuLogitBias, NamesRowsAndTokensOutsideTheLogits) {
  auto backend = make_cpu_backend();
  std::vector<float> logits(2 * 8, 0.0f), values{1.0f};
  std::vector<int32_t> row{2}, token{3}, row_ok{1}, token_bad{8};
  auto call = [&](std::vector<int32_t>& rows, std::vector<int32_t>& tokens) {
    backend->logit_bias({.logits = TensorView(logits.data(), DType::kF32, {2, 8}),
                         .rows = TensorView(rows.data(), DType::kI32, {1}),
                         .tokens = TensorView(tokens.data(), DType::kI32, {1}),
                         .values = TensorView(values.data(), DType::kF32, {1})});
  };
  EXPECT_ERROR_CONTAINS(call(row, token), "logit_bias: rows[0] = 2 is outside the 2 rows of logits");
  EXPECT_ERROR_CONTAINS(call(row_ok, token_bad), "logit_bias: tokens[0] = 8 is outside the vocabulary [0, 8)");
  EXPECT_ERROR_CONTAINS(backend->logit_bias({.logits = TensorView(logits.data(), DType::kF32, {2, 8}),
                                            .rows = TensorView(row.data(), DType::kI32, {1}),
                                            .tokens = TensorView(token.data(), DType::kI32, {1}),
                                            .values = TensorView(values.data(), DType::kF32, {0})}),
                        "counts differ");
}

}  // namespace
}  // namespace brisk
