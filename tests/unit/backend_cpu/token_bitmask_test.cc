#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

TEST(CpuTokenBitmask, MasksTheNamedRowsOnlyAndTokensPastTheWords) {
  auto backend = make_cpu_backend();
  const int64_t vocab = 70;  // three rows of 70 logits; one mask word covers tokens 0..31 only
  std::vector<float> logits(3 * vocab, 1.0f);
  std::vector<uint32_t> mask{0x80000005u};  // tokens 0, 2 and 31
  std::vector<int32_t> rows{2};
  backend->apply_token_bitmask({.logits = TensorView(logits.data(), DType::kF32, {3, vocab}),
                                .bitmask = TensorView(mask.data(), DType::kU32, {1, 1}),
                                .rows = TensorView(rows.data(), DType::kI32, {1})});
  for (int64_t v = 0; v < vocab; ++v) {
    EXPECT_EQ(logits[v], 1.0f) << v;
    EXPECT_EQ(logits[vocab + v], 1.0f) << v;
    const bool allowed = v == 0 || v == 2 || v == 31;
    EXPECT_EQ(logits[2 * vocab + v], allowed ? 1.0f : -INFINITY) << v;
  }
}

TEST(CpuTokenBitmask, RowsShareMasksByIndex) {
  auto backend = make_cpu_backend();
  const int64_t vocab = 40;
  std::vector<float> logits(4 * vocab, 1.0f);
  std::vector<uint32_t> masks{0x1u, 0, 0x2u, 0x80u};  // two masks of two words: {0}, {1, 39}
  std::vector<int32_t> rows{3, 0, 1}, index{1, 0, 1};
  backend->apply_token_bitmask({.logits = TensorView(logits.data(), DType::kF32, {4, vocab}),
                                .bitmask = TensorView(masks.data(), DType::kU32, {2, 2}),
                                .rows = TensorView(rows.data(), DType::kI32, {3}),
                                .mask_index = TensorView(index.data(), DType::kI32, {3})});
  for (int64_t v = 0; v < vocab; ++v) {
    EXPECT_EQ(logits[v], v == 0 ? 1.0f : -INFINITY) << v;
    for (int64_t row : {1, 3}) EXPECT_EQ(logits[row * vocab + v], v == 1 || v == 39 ? 1.0f : -INFINITY) << v;
    EXPECT_EQ(logits[2 * vocab + v], 1.0f) << v;
  }
  index = {1, 2, 0};
  EXPECT_ERROR_CONTAINS(backend->apply_token_bitmask({.logits = TensorView(logits.data(), DType::kF32, {4, vocab}),
                                                      .bitmask = TensorView(masks.data(), DType::kU32, {2, 2}),
                                                      .rows = TensorView(rows.data(), DType::kI32, {3}),
                                                      .mask_index = TensorView(index.data(), DType::kI32, {3})}),
                        "mask_index[1] = 2 is outside the 2 rows of bitmask");
  EXPECT_ERROR_CONTAINS(backend->apply_token_bitmask({.logits = TensorView(logits.data(), DType::kF32, {4, vocab}),
                                                      .bitmask = TensorView(masks.data(), DType::kU32, {2, 2}),
                                                      .rows = TensorView(rows.data(), DType::kI32, {3}),
                                                      .mask_index = TensorView(index.data(), DType::kI32, {2})}),
                        "mask_index");
}

TEST(CpuTokenBitmask, NamesRowsOutsideTheLogits) {
  auto backend = make_cpu_backend();
  std::vector<float> logits(2 * 32, 0.0f);
  std::vector<uint32_t> mask{1u};
  std::vector<int32_t> rows{2};
  EXPECT_ERROR_CONTAINS(backend->apply_token_bitmask({.logits = TensorView(logits.data(), DType::kF32, {2, 32}),
                                                      .bitmask = TensorView(mask.data(), DType::kU32, {1, 1}),
                                                      .rows = TensorView(rows.data(), DType::kI32, {1})}),
                        "apply_token_bitmask: rows[0] = 2 is outside the 2 rows of logits");
}

}  // namespace
}  // namespace brisk
