#include "kv/block_pool.h"

#include <limits>

#include "core/error.h"

namespace brisk {

BlockPool::BlockPool(int64_t num_blocks, int block_size, PrefixCache& prefix_cache)
    : block_size_(block_size), prefix_cache_(prefix_cache) {
  BRISK_CHECK(num_blocks > 0 && num_blocks <= std::numeric_limits<BlockId>::max(),
              "block pool: num_blocks must be in [1, {}], got {}",
              std::numeric_limits<BlockId>::max(), num_blocks);
  BRISK_CHECK(block_size == prefix_cache.block_size(),
              "block pool: block_size {} differs from the prefix cache's {}", block_size,
              prefix_cache.block_size());
  refcounts_.assign(num_blocks, 0);
  is_free_.assign(num_blocks, true);
  free_.reserve(num_blocks);
  // Reversed so that a fresh pool hands out blocks 0, 1, 2, ...: easier to read in logs.
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<BlockId>(b));
}

std::optional<BlockId> BlockPool::allocate() {
  BlockId block;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
    is_free_[block] = false;
    BRISK_ASSERT(!prefix_cache_.is_registered(block));
  } else if (auto victim = prefix_cache_.evict_lru()) {
    block = *victim;
  } else {
    return std::nullopt;
  }
  BRISK_ASSERT(refcounts_[block] == 0);
  refcounts_[block] = 1;
  ++num_in_use_;
  return block;
}

void BlockPool::add_ref(BlockId block) {
  check_block(block, "add_ref");
  BRISK_CHECK(!is_free_[block], "block pool: add_ref of block {}, which is free", block);
  if (refcounts_[block] == 0) {
    prefix_cache_.mark_in_use(block);
    ++num_in_use_;
  }
  ++refcounts_[block];
}

void BlockPool::release(BlockId block) {
  check_block(block, "release");
  BRISK_CHECK(refcounts_[block] > 0, "block pool: release of block {}, which is not in use ({})",
              block, is_free_[block] ? "free" : "cached");
  if (--refcounts_[block] > 0) return;
  --num_in_use_;
  if (!prefix_cache_.mark_evictable(block)) {
    free_.push_back(block);
    is_free_[block] = true;
  }
}

int32_t BlockPool::refcount(BlockId block) const {
  check_block(block, "refcount");
  return refcounts_[block];
}

BlockState BlockPool::state(BlockId block) const {
  check_block(block, "state");
  if (refcounts_[block] > 0) return BlockState::kInUse;
  return is_free_[block] ? BlockState::kFree : BlockState::kCached;
}

void BlockPool::check_block(BlockId block, const char* what) const {
  BRISK_CHECK(block >= 0 && block < num_blocks(), "block pool: {} of block {}, outside [0, {})",
              what, block, num_blocks());
}

}  // namespace brisk
