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
