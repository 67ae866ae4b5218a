#include "core/tensor.h"

#include <gtest/gtest.h>

#include "brisk/status.h"
#include "core/parallel.h"

#include <atomic>

namespace brisk {
namespace {

TEST(Tensor, ViewsSliceAndReshape) {
  Tensor t(cpu_allocator(), DType::kF32, {4, 6});
  float* data = t.data_as<float>();
  for (int i = 0; i < 24; ++i) data[i] = static_cast<float>(i);
  TensorView cols = t.view().slice(1, 2, 5);
  EXPECT_EQ(cols.shape(), Shape({4, 3}));
  EXPECT_FALSE(cols.is_contiguous());
  EXPECT_EQ(cols.stride(0), 6);
  EXPECT_EQ(cols.data_as<float>()[0], 2.0f);
  TensorView row = t.view().select(2);
  EXPECT_EQ(row.shape(), Shape({6}));
  EXPECT_EQ(row.data_as<float>()[0], 12.0f);
  EXPECT_EQ(t.view().reshape({2, 12}).shape(), Shape({2, 12}));
}

TEST(Tensor, BadShapesNameTheProblem) {
  Tensor t(cpu_allocator(), DType::kF32, {4, 6});
  try {
    t.view().reshape({5, 5});
    FAIL() << "reshape to a different element count must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[5, 5]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.view().slice(0, 3, 7), Error);
  EXPECT_THROW(t.view().slice(1, 0, 7), Error);
  EXPECT_THROW(t.view().slice(1, 0, 7), Error);
  EXPECT_THROW(t.view().reshape({4, 6}).slice(1, 0, 3).reshape({12}), Error);
  EXPECT_THROW(Shape({-1}), Error);
}

TEST(Parallel, CoversEveryItemOnceAndPropagatesErrors) {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(1000, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_THROW(parallel_for(100, 1, [](int64_t b, int64_t) {
                 if (b == 0) throw Error(ErrorCode::kInternal, "boom");
               }),
               Error);
}

}  // namespace
}  // namespace brisk
