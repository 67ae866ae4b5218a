#include <gtest/gtest.h>

#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

TensorView ids_view(std::vector<int32_t>& v) {
  return TensorView(v.data(), DType::kI32, {static_cast<int64_t>(v.size())});
}

TEST(CpuFeedTokens, CopiesSampledIdsAndSkipsNegativeDestinations) {
  auto backend = make_cpu_backend();
  std::vector<int32_t> ids{10, 11, 12, 13, 14}, sampled{100, 101, 102};
  std::vector<int32_t> dst{4, -1, 1}, src{2, 0, 0};
  backend->feed_tokens({ids_view(ids), ids_view(dst), ids_view(src), ids_view(sampled)});
  EXPECT_EQ(ids, (std::vector<int32_t>{10, 100, 12, 13, 102}));
}

TEST(CpuFeedTokens, NamesPairsOutsideTheTensors) {
  auto backend = make_cpu_backend();
  std::vector<int32_t> ids{1, 2}, sampled{7};
  std::vector<int32_t> dst{0, 2}, src{0, 0}, short_src{0};
  EXPECT_ERROR_CONTAINS(backend->feed_tokens({ids_view(ids), ids_view(dst), ids_view(src), ids_view(sampled)}),
                        "feed_tokens: pair 1 copies sampled[0] of 1 into ids[2] of 2");
  EXPECT_ERROR_CONTAINS(backend->feed_tokens({ids_view(ids), ids_view(dst), ids_view(short_src), ids_view(sampled)}),
                        "src");
}

}  // namespace
}  // namespace brisk
