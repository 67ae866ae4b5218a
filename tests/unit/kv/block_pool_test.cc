#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <numeric>

#include "brisk/status.h"

namespace brisk {
namespace {

constexpr int kBlockSize = 4;

void expect_counts(const BlockPool& pool, int64_t num_free, int64_t num_cached, int64_t num_in_use) {
  EXPECT_EQ(pool.num_free(), num_free);
  EXPECT_EQ(pool.num_cached(), num_cached);
  EXPECT_EQ(pool.num_in_use(), num_in_use);
}

// Registers `block` in the cache as the first block of a prompt starting with `first_token`.
void register_block(PrefixCache& cache, BlockId block, TokenId first_token) {
  std::vector<TokenId> tokens(kBlockSize);
  std::iota(tokens.begin(), tokens.end(), first_token);
  ASSERT_TRUE(cache.insert(cache.hash_block(cache.root_hash(), tokens), cache.root_hash(), block,
                           tokens));
}

TEST(BlockPool, AllocatesUntilEmptyAndFreesOnRelease) {
  PrefixCache cache(kBlockSize);
  BlockPool pool(3, kBlockSize, cache);
  expect_counts(pool, 3, 0, 0);
  EXPECT_TRUE(pool.can_allocate(3));
  EXPECT_FALSE(pool.can_allocate(4));
  EXPECT_EQ(pool.allocate(), BlockId{0});
  EXPECT_EQ(pool.allocate(), BlockId{1});
  EXPECT_EQ(pool.allocate(), BlockId{2});
  EXPECT_EQ(pool.allocate(), std::nullopt);
  expect_counts(pool, 0, 0, 3);
  EXPECT_EQ(pool.state(1), BlockState::kInUse);
  pool.release(1);
  EXPECT_EQ(pool.state(1), BlockState::kFree);
  expect_counts(pool, 1, 0, 2);
  EXPECT_EQ(pool.allocate(), BlockId{1});
}

TEST(BlockPool, RefcountsShareBlocks) {
  PrefixCache cache(kBlockSize);
  BlockPool pool(2, kBlockSize, cache);
  const BlockId block = *pool.allocate();
  pool.add_ref(block);
  EXPECT_EQ(pool.refcount(block), 2);
  pool.release(block);
  EXPECT_EQ(pool.state(block), BlockState::kInUse);
  pool.release(block);
  EXPECT_EQ(pool.refcount(block), 0);
  EXPECT_EQ(pool.state(block), BlockState::kFree);
}

TEST(BlockPool, MisuseNamesTheBlock) {
  PrefixCache cache(kBlockSize);
  BlockPool pool(2, kBlockSize, cache);
  try {
    pool.release(1);
    FAIL() << "releasing a free block must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("release of block 1, which is not in use (free)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(pool.add_ref(0), Error);   // free: nothing to share
  EXPECT_THROW(pool.release(2), Error);   // out of range
  EXPECT_THROW(pool.add_ref(-1), Error);
  EXPECT_THROW(BlockPool(0, kBlockSize, cache), Error);
  EXPECT_THROW(BlockPool(4, kBlockSize + 1, cache), Error);
}

TEST(BlockPool, RegisteredBlocksBecomeCachedAndRevive) {
  PrefixCache cache(kBlockSize);
  BlockPool pool(2, kBlockSize, cache);
  const BlockId block = *pool.allocate();
  register_block(cache, block, 0);
  pool.release(block);
  EXPECT_EQ(pool.state(block), BlockState::kCached);
  expect_counts(pool, 1, 1, 0);
  EXPECT_THROW(pool.release(block), Error);  // cached is not in use
  pool.add_ref(block);                       // a prefix hit revives it
  EXPECT_EQ(pool.state(block), BlockState::kInUse);
  expect_counts(pool, 1, 0, 1);
  pool.release(block);
  EXPECT_EQ(pool.state(block), BlockState::kCached);
}

TEST(BlockPool, PrefersFreeBlocksThenEvictsLeastRecentlyUsed) {
  PrefixCache cache(kBlockSize);
  BlockPool pool(3, kBlockSize, cache);
  const BlockId a = *pool.allocate(), b = *pool.allocate(), c = *pool.allocate();
  register_block(cache, a, 0);
  register_block(cache, b, 100);
  pool.release(b);  // cached, older
  pool.release(a);  // cached, newer
  pool.release(c);  // free
  expect_counts(pool, 1, 2, 0);
  EXPECT_EQ(pool.allocate(), c);  // a free block first: cached KV stays
  EXPECT_EQ(pool.allocate(), b);  // then the LRU cached block, unregistered
  EXPECT_FALSE(cache.is_registered(b));
  EXPECT_TRUE(cache.is_registered(a));
  EXPECT_EQ(pool.allocate(), a);
  EXPECT_EQ(pool.allocate(), std::nullopt);
  expect_counts(pool, 0, 0, 3);
  EXPECT_EQ(cache.num_registered(), 0);
}

TEST(BlockPool, DisabledCacheFreesEveryBlock) {
  PrefixCache cache(kBlockSize, /*enabled=*/false);
  BlockPool pool(1, kBlockSize, cache);
  const BlockId block = *pool.allocate();
  std::vector<TokenId> tokens(kBlockSize, 7);
  EXPECT_FALSE(cache.insert(cache.hash_block(cache.root_hash(), tokens), cache.root_hash(), block,
                            tokens));
  pool.release(block);
  EXPECT_EQ(pool.state(block), BlockState::kFree);
}

}  // namespace
}  // namespace brisk
