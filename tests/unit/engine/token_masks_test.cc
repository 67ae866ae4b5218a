// TokenMasks::share_equal: equal masks are kept once, rows point at the right one, and masks
// whose hashes collide stay apart.
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/token_masks.h"
#include "test_util.h"

namespace brisk {
namespace {

TEST(TokenMasks, EqualMasksAreKeptOnce) {
  const int64_t num_words = 3;
  const std::vector<std::vector<uint32_t>> per_row = {{1, 2, 3}, {7, 0, 0}, {1, 2, 3}, {0, 0, 9}, {7, 0, 0}};
  TokenMasks masks;
  std::vector<uint64_t> hashes;
  for (size_t j = 0; j < per_row.size(); ++j) {
    masks.rows.push_back(static_cast<int32_t>(10 + j));
    masks.words.insert(masks.words.end(), per_row[j].begin(), per_row[j].end());
    hashes.push_back(TokenMasks::hash(per_row[j]));
  }
  masks.share_equal(num_words, hashes);
  EXPECT_EQ(masks.rows, (std::vector<int32_t>{10, 11, 12, 13, 14}));
  EXPECT_EQ(masks.mask_index, (std::vector<int32_t>{0, 1, 0, 2, 1}));
  EXPECT_EQ(masks.words, (std::vector<uint32_t>{1, 2, 3, 7, 0, 0, 0, 0, 9}));
}

TEST(TokenMasks, CollidingHashesStayApart) {
  TokenMasks masks{{0, 1, 2}, {}, {5, 6, 5}};
  masks.share_equal(1, {42, 42, 42});  // every hash equal: only the words decide
  EXPECT_EQ(masks.mask_index, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(masks.words, (std::vector<uint32_t>{5, 6}));
  testing::expect_error([&] { masks.share_equal(1, {1}); }, ErrorCode::kInvalidArgument, {"token masks"});
}

}  // namespace
}  // namespace brisk
