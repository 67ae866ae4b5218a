#include "kv/sequence_blocks.h"

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

// Runs a whole prompt as one prefill step, the way the scheduler would.
void prefill(SequenceBlocks& seq, const std::vector<TokenId>& prompt) {
  const int64_t num_new = static_cast<int64_t>(prompt.size()) - seq.num_computed();
  ASSERT_TRUE(seq.allocate_for(num_new));
  seq.commit_computed(prompt, num_new);
}

struct KvFixture : ::testing::Test {
  explicit KvFixture(int64_t num_blocks = 8, bool enabled = true)
      : cache(kBlockSize, enabled), pool(num_blocks, kBlockSize, cache) {}
  PrefixCache cache;
  BlockPool pool;
};

using SequenceBlocksTest = KvFixture;

TEST_F(SequenceBlocksTest, AllocatesBlocksAsTokensGrow) {
  SequenceBlocks seq(pool);
  EXPECT_EQ(seq.num_blocks_needed(0), 0);
  EXPECT_EQ(seq.num_blocks_needed(1), 1);
  EXPECT_EQ(seq.num_blocks_needed(9), 3);
  ASSERT_TRUE(seq.allocate_for(6));
  EXPECT_EQ(seq.block_table(), (std::vector<BlockId>{0, 1}));
  const auto tokens = iota_tokens(9);
  seq.commit_computed(tokens, 6);
  EXPECT_EQ(seq.num_computed(), 6);
  EXPECT_EQ(seq.num_blocks_needed(2), 0);  // fits in the partial block
  EXPECT_EQ(seq.num_blocks_needed(3), 1);
  ASSERT_TRUE(seq.allocate_for(3));
  seq.commit_computed(tokens, 3);
  EXPECT_EQ(seq.block_table().size(), 3u);
  EXPECT_EQ(seq.num_full_blocks(), 2);
  // KV cannot be committed past the allocated blocks.
  EXPECT_THROW(seq.commit_computed(iota_tokens(20), 4), Error);
  seq.free_all();
  EXPECT_TRUE(seq.block_table().empty());
  EXPECT_EQ(pool.num_in_use(), 0);
  seq.free_all();  // idempotent
}

TEST_F(SequenceBlocksTest, AllocationIsAllOrNothing) {
  SequenceBlocks big(pool), small(pool);
  ASSERT_TRUE(big.allocate_for(6 * kBlockSize));
  EXPECT_FALSE(small.allocate_for(3 * kBlockSize));
  EXPECT_TRUE(small.block_table().empty());
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_TRUE(small.allocate_for(2 * kBlockSize));
  big.free_all();
  small.free_all();
}

TEST_F(SequenceBlocksTest, FullBlocksAreRegisteredWithChainHashes) {
  SequenceBlocks seq(pool);
  const auto prompt = iota_tokens(10);
  prefill(seq, prompt);
  ASSERT_EQ(seq.block_hashes().size(), 2u);  // the partial third block is not registered
  EXPECT_EQ(seq.block_hashes()[0], cache.hash_block(cache.root_hash(), iota_tokens(4)));
  EXPECT_EQ(seq.block_hashes()[1], cache.hash_block(seq.block_hashes()[0], iota_tokens(4, 4)));
  EXPECT_EQ(cache.find(seq.block_hashes()[1]), seq.block_table()[1]);
  EXPECT_FALSE(cache.is_registered(seq.block_table()[2]));
  seq.free_all();
  EXPECT_EQ(pool.num_cached(), 2);
  EXPECT_EQ(pool.num_free(), 6);
  // Tail released first, so the head block is the most recently used and evicted last.
  EXPECT_EQ(cache.lru_order(), (std::vector<BlockId>{1, 0}));
}

TEST_F(SequenceBlocksTest, ABlockIsRegisteredOnceItsLastTokenIsKnown) {
  // The engine commits a decode when it queues it, before the token it computes (sampled by the
  // step before) reaches the host: the block that token fills is registered when it arrives.
  SequenceBlocks seq(pool);
  const auto tokens = iota_tokens(8);
  prefill(seq, std::vector<TokenId>(tokens.begin(), tokens.begin() + 7));
  ASSERT_EQ(seq.block_hashes().size(), 1u);
  ASSERT_TRUE(seq.allocate_for(1));
  seq.commit_computed(std::span(tokens).first(7), 1);  // token 7 is still being sampled
  EXPECT_EQ(seq.num_computed(), 8);
  EXPECT_EQ(seq.block_hashes().size(), 1u);
  EXPECT_FALSE(cache.is_registered(seq.block_table()[1]));
  seq.commit_computed(tokens, 0);  // it arrived
  ASSERT_EQ(seq.block_hashes().size(), 2u);
  EXPECT_EQ(seq.block_hashes()[1], cache.hash_block(seq.block_hashes()[0], iota_tokens(4, 4)));
  EXPECT_EQ(cache.find(seq.block_hashes()[1]), seq.block_table()[1]);
  seq.free_all();
}

TEST_F(SequenceBlocksTest, PrefixHitSkipsComputedBlocksButNotTheLastToken) {
  const auto prompt = iota_tokens(12);  // exactly 3 blocks
  SequenceBlocks first(pool);
  prefill(first, prompt);
  first.free_all();

  SequenceBlocks second(pool);
  // All 3 blocks are cached, but the last prompt token must run: only 2 blocks are reused.
  EXPECT_EQ(second.match_prefix(prompt), 8);
  EXPECT_EQ(second.num_computed(), 8);
  EXPECT_EQ(second.block_table(), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(pool.refcount(0), 1);
  EXPECT_EQ(pool.state(2), BlockState::kCached);
  prefill(second, prompt);  // recomputes block 2's tokens into a fresh block
  EXPECT_EQ(second.block_hashes().size(), 3u);

  // A longer prompt with the same start, while `second` still runs: its blocks are shared.
  auto longer = prompt;
  longer.push_back(77);
  SequenceBlocks third(pool);
  EXPECT_EQ(third.match_prefix(longer), 12);
  EXPECT_EQ(pool.refcount(third.block_table()[0]), 2);
  EXPECT_THROW(third.match_prefix(longer), Error);  // only on an empty sequence
  second.free_all();
  third.free_all();
  EXPECT_EQ(pool.num_in_use(), 0);
  EXPECT_EQ(cache.stats().num_hit_tokens, 20);
}

struct DisabledCacheTest : KvFixture {
  DisabledCacheTest() : KvFixture(8, /*enabled=*/false) {}
};

TEST_F(DisabledCacheTest, NothingIsReused) {
  const auto prompt = iota_tokens(12);
  SequenceBlocks first(pool);
  prefill(first, prompt);
  EXPECT_TRUE(first.block_hashes().empty());
  first.free_all();
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_EQ(pool.num_free(), 8);
  SequenceBlocks second(pool);
  EXPECT_EQ(second.match_prefix(prompt), 0);
}

TEST_F(SequenceBlocksTest, MoveTransfersOwnership) {
  SequenceBlocks seq(pool);
  prefill(seq, iota_tokens(5));
  SequenceBlocks moved(std::move(seq));
  EXPECT_EQ(moved.block_table().size(), 2u);
  EXPECT_TRUE(seq.block_table().empty());  // NOLINT(bugprone-use-after-move): documented state
  seq.free_all();                          // releases nothing
  EXPECT_EQ(pool.num_in_use(), 2);
  moved.free_all();
  EXPECT_EQ(pool.num_in_use(), 0);
}

}  // namespace
}  // namespace brisk
