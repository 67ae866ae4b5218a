#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <numeric>

#include "brisk/status.h"

namespace brisk {
namespace {

constexpr int kBlockSize = 4;

std::vector<TokenId> iota_tokens(int count, TokenId first = 0) {
  std::vector<TokenId> tokens(count);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// Registers the full blocks of `tokens` as blocks first_block, first_block + 1, ...
void register_chain(PrefixCache& cache, const std::vector<TokenId>& tokens, BlockId first_block) {
  uint64_t parent = cache.root_hash();
  std::span<const TokenId> all(tokens);
  for (size_t i = 0; i < tokens.size() / kBlockSize; ++i) {
    const auto block_tokens = all.subspan(i * kBlockSize, kBlockSize);
    const uint64_t hash = cache.hash_block(parent, block_tokens);
    ASSERT_TRUE(cache.insert(hash, parent, first_block + static_cast<BlockId>(i), block_tokens));
    parent = hash;
  }
}

TEST(PrefixCache, HashDependsOnParentTokensAndExtraKey) {
  PrefixCache cache(kBlockSize);
  const auto a = iota_tokens(4), b = iota_tokens(4, 1);
  EXPECT_EQ(cache.hash_block(1, a), cache.hash_block(1, a));
  EXPECT_NE(cache.hash_block(1, a), cache.hash_block(2, a));
  EXPECT_NE(cache.hash_block(1, a), cache.hash_block(1, b));
  EXPECT_EQ(PrefixCache(kBlockSize, true, 0).root_hash(), cache.root_hash());
  EXPECT_NE(PrefixCache(kBlockSize, true, 7).root_hash(), cache.root_hash());
  EXPECT_THROW(cache.hash_block(1, iota_tokens(3)), Error);
}

TEST(PrefixCache, LookupFindsLongestPrefixOfFullBlocks) {
  PrefixCache cache(kBlockSize);
  register_chain(cache, iota_tokens(12), 10);  // blocks 10, 11, 12
  EXPECT_EQ(cache.num_registered(), 3);

  PrefixMatch match = cache.lookup(iota_tokens(14));
  EXPECT_EQ(match.blocks, (std::vector<BlockId>{10, 11, 12}));
  EXPECT_EQ(match.num_tokens, 12);
  ASSERT_EQ(match.hashes.size(), 3u);
  EXPECT_EQ(cache.find(match.hashes[2]), BlockId{12});

  // Only full blocks count: 7 tokens cover one full block.
  EXPECT_EQ(cache.lookup(iota_tokens(7)).blocks, (std::vector<BlockId>{10}));
  // A difference in block 1 stops the match there, even if block 2 is equal.
  auto tokens = iota_tokens(12);
  tokens[5] = 99;
  EXPECT_EQ(cache.lookup(tokens).blocks, (std::vector<BlockId>{10}));
  tokens[0] = 99;
  EXPECT_TRUE(cache.lookup(tokens).blocks.empty());
  EXPECT_TRUE(cache.lookup({}).blocks.empty());
}

TEST(PrefixCache, CountersGiveHitRate) {
  PrefixCache cache(kBlockSize);
  register_chain(cache, iota_tokens(8), 0);
  cache.lookup(iota_tokens(10));      // 8 of 10 hit
  cache.lookup(iota_tokens(6, 100));  // miss
  const PrefixCache::Stats& stats = cache.stats();
  EXPECT_EQ(stats.num_lookups, 2);
  EXPECT_EQ(stats.num_queried_tokens, 16);
  EXPECT_EQ(stats.num_hit_blocks, 2);
  EXPECT_EQ(stats.num_hit_tokens, 8);
}

TEST(PrefixCache, ExtraKeySeparatesCaches) {
  PrefixCache lora_a(kBlockSize, true, 1), lora_b(kBlockSize, true, 2);
  register_chain(lora_a, iota_tokens(8), 0);
  // The chain hashes of lora_b differ, so lora_a's entries would never be found from it.
  const uint64_t hash_a = lora_a.hash_block(lora_a.root_hash(), iota_tokens(4));
  const uint64_t hash_b = lora_b.hash_block(lora_b.root_hash(), iota_tokens(4));
  EXPECT_NE(hash_a, hash_b);
  EXPECT_TRUE(lora_a.find(hash_a).has_value());
  EXPECT_FALSE(lora_a.find(hash_b).has_value());
}

TEST(PrefixCache, HashHitWithOtherTokensIsAMiss) {
  PrefixCache cache(kBlockSize);
  const auto tokens = iota_tokens(4);
  // Fake a collision: register other tokens under the hash that `tokens` will produce.
  const uint64_t hash = cache.hash_block(cache.root_hash(), tokens);
  ASSERT_TRUE(cache.insert(hash, cache.root_hash(), 3, iota_tokens(4, 50)));
  EXPECT_TRUE(cache.lookup(tokens).blocks.empty());
  // Same tokens but another parent: also a miss.
  PrefixCache other(kBlockSize);
  ASSERT_TRUE(other.insert(hash, /*parent=*/12345, 3, tokens));
  EXPECT_TRUE(other.lookup(tokens).blocks.empty());
}

TEST(PrefixCache, DuplicateHashKeepsFirstBlock) {
  PrefixCache cache(kBlockSize);
  const auto tokens = iota_tokens(4);
  const uint64_t hash = cache.hash_block(cache.root_hash(), tokens);
  EXPECT_TRUE(cache.insert(hash, cache.root_hash(), 1, tokens));
  EXPECT_FALSE(cache.insert(hash, cache.root_hash(), 2, tokens));
  EXPECT_TRUE(cache.insert(hash, cache.root_hash(), 1, tokens));  // idempotent
  EXPECT_FALSE(cache.is_registered(2));
  EXPECT_EQ(cache.find(hash), BlockId{1});
  // One block cannot hold two contents.
  EXPECT_THROW(cache.insert(hash + 1, cache.root_hash(), 1, tokens), Error);
  EXPECT_THROW(cache.insert(hash, cache.root_hash(), 1, iota_tokens(5)), Error);
}

TEST(PrefixCache, DisabledNeverRegistersOrMatches) {
  PrefixCache cache(kBlockSize, /*enabled=*/false);
  const auto tokens = iota_tokens(4);
  EXPECT_FALSE(cache.insert(cache.hash_block(cache.root_hash(), tokens), cache.root_hash(), 0, tokens));
  EXPECT_FALSE(cache.is_registered(0));
  EXPECT_FALSE(cache.mark_evictable(0));
  EXPECT_TRUE(cache.lookup(tokens).blocks.empty());
  EXPECT_EQ(cache.stats().num_lookups, 1);
  EXPECT_EQ(cache.stats().num_hit_tokens, 0);
}

TEST(PrefixCache, EvictsLeastRecentlyUsedAndLookupTouches) {
  PrefixCache cache(kBlockSize);
  register_chain(cache, iota_tokens(8), 0);        // blocks 0, 1
  register_chain(cache, iota_tokens(8, 100), 5);   // blocks 5, 6
  EXPECT_FALSE(cache.mark_evictable(9));           // not registered
  for (BlockId block : {1, 0, 6, 5}) EXPECT_TRUE(cache.mark_evictable(block));
  EXPECT_EQ(cache.lru_order(), (std::vector<BlockId>{1, 0, 6, 5}));

  // Looking up the first chain makes it most recently used, tail before head.
  cache.lookup(iota_tokens(8));
  EXPECT_EQ(cache.lru_order(), (std::vector<BlockId>{6, 5, 1, 0}));

  cache.mark_in_use(5);  // taken by a sequence: not evictable
  EXPECT_EQ(cache.num_evictable(), 3);
  EXPECT_EQ(cache.evict_lru(), BlockId{6});
  EXPECT_FALSE(cache.is_registered(6));
  EXPECT_EQ(cache.evict_lru(), BlockId{1});
  EXPECT_EQ(cache.evict_lru(), BlockId{0});
  EXPECT_EQ(cache.evict_lru(), std::nullopt);
  EXPECT_TRUE(cache.is_registered(5));
  EXPECT_TRUE(cache.lookup(iota_tokens(8)).blocks.empty());  // head evicted: chain unreachable
}

}  // namespace
}  // namespace brisk
