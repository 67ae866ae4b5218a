// The KV cache's blocks as bookkeeping: which of the num_blocks device blocks (each holding the
// K and V of block_size tokens in every layer) are free, cached or in use.
//
// Every block is in exactly one state (DESIGN.md section 4):
//   free    refcount 0, not registered in the prefix cache: content is garbage
//   cached  refcount 0, registered in the prefix cache, evictable (LRU order kept by the cache)
//   in use  refcount >= 1: owned by that many sequences (more than one when shared)
// so num_free() + num_cached() + num_in_use() == num_blocks() at all times.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/prefix_cache.h"

namespace brisk {

enum class BlockState { kFree, kCached, kInUse };

class BlockPool {
 public:
  // The prefix cache must outlive the pool; a disabled cache makes every release free the block.
  BlockPool(int64_t num_blocks, int block_size, PrefixCache& prefix_cache);

  // A block with refcount 1: a truly free one if any (keeps cached KV alive), else the least
  // recently used cached block, which is unregistered from the prefix cache. nullopt if every
  // block is in use.
  std::optional<BlockId> allocate();
  // One more owner of an in-use block, or revives a cached block (it leaves the LRU list).
  // Throws on a free block: its content is meaningless.
  void add_ref(BlockId block);
  // One owner fewer; at refcount 0 the block becomes cached if the prefix cache holds it, else
  // free. Throws on a block that is not in use (double free).
  void release(BlockId block);

  bool can_allocate(int64_t num_blocks) const { return num_blocks <= num_free() + num_cached(); }

  int64_t num_blocks() const { return static_cast<int64_t>(refcounts_.size()); }
  int block_size() const { return block_size_; }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_cached() const { return prefix_cache_.num_evictable(); }
  int64_t num_in_use() const { return num_in_use_; }
  int32_t refcount(BlockId block) const;
  BlockState state(BlockId block) const;
  PrefixCache& prefix_cache() { return prefix_cache_; }
  const PrefixCache& prefix_cache() const { return prefix_cache_; }

 private:
  void check_block(BlockId block, const char* what) const;

  int block_size_;
  PrefixCache& prefix_cache_;
  std::vector<int32_t> refcounts_;
  std::vector<BlockId> free_;  // a stack: the most recently freed block is reused first
  std::vector<bool> is_free_;  // mirrors free_, so state() is O(1)
  int64_t num_in_use_ = 0;
};

}  // namespace brisk
