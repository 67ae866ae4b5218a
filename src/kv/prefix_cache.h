// Automatic prefix caching: a map from the hash of a FULL block's content (and of everything
// before it) to the KV block that holds it, so a new prompt that starts like an earlier one
// reuses that KV instead of recomputing it.
//
// Hash chain: hash(block i) = XXH3_64(hash(block i-1), tokens of block i); the parent of block 0
// is a root hash made from a fixed seed and `extra_key`, so caches of different models or LoRA
// adapters (different extra_key) never share blocks. Only full blocks are registered: their
// content is final, so they can be shared by many sequences without copy-on-write.
//
// The cache also owns the LRU order of the "cached" blocks (registered, refcount 0), since it is
// the one that knows which blocks are worth keeping. BlockPool tells it when a registered block's
// refcount drops to 0 or leaves 0 (mark_evictable / mark_in_use) and asks it for a victim
// (evict_lru) when no block is truly free. Single-threaded: the engine thread owns it.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace brisk {

using BlockId = int32_t;   // as in SequenceChunk::block_table
using TokenId = int32_t;

// The longest cached prefix of a prompt: blocks[i] holds tokens [i * block_size, (i+1) * block_size).
struct PrefixMatch {
  std::vector<BlockId> blocks;
  std::vector<uint64_t> hashes;  // chain hash of each matched block, to continue the chain
  int64_t num_tokens = 0;
};

class PrefixCache {
 public:
  struct Stats {
    int64_t num_lookups = 0;
    int64_t num_queried_tokens = 0;  // tokens passed to lookup()
    int64_t num_hit_blocks = 0;
    int64_t num_hit_tokens = 0;      // hit rate = num_hit_tokens / num_queried_tokens
  };

  // A disabled cache never registers nor matches anything (every block is freed on release).
  PrefixCache(int block_size, bool enabled = true, uint64_t extra_key = 0);

  int block_size() const { return block_size_; }
  bool enabled() const { return enabled_; }

  // Parent hash of block 0.
  uint64_t root_hash() const { return root_hash_; }
  // Chain hash of a full block (`tokens` has exactly block_size ids) whose parent hashes to `parent`.
  uint64_t hash_block(uint64_t parent, std::span<const TokenId> tokens) const;

  // Longest run of registered full blocks matching the start of `tokens` (only its full blocks
  // are considered). Stored token ids and parent hashes are compared on every hash hit, so a
  // 64-bit collision cannot hand out wrong KV. Matched blocks that are evictable are touched
  // (become most recently used). The caller must add_ref the blocks it keeps.
  PrefixMatch lookup(std::span<const TokenId> tokens);

  // Registers a block that was just filled with `tokens` (block_size ids) under `hash`, whose
  // parent hash is `parent`. The block must be in use by the caller. Returns false, registering
  // nothing, when disabled or when another block already holds this hash (two sequences computed
  // the same prefix at once: the first copy is kept, the second is freed on release).
  bool insert(uint64_t hash, uint64_t parent, BlockId block, std::span<const TokenId> tokens);

  bool is_registered(BlockId block) const { return by_block_.contains(block); }
  std::optional<BlockId> find(uint64_t hash) const;
  int64_t num_registered() const { return static_cast<int64_t>(by_block_.size()); }

  // --- Called by BlockPool, which owns refcounts ---
  // The block's refcount dropped to 0: if registered, it becomes evictable (most recently used)
  // and true is returned; otherwise false (the pool frees it).
  bool mark_evictable(BlockId block);
  // A registered block with refcount 0 was taken again (add_ref): it is no longer evictable.
  void mark_in_use(BlockId block);
  bool is_evictable(BlockId block) const;
  int64_t num_evictable() const { return static_cast<int64_t>(lru_.size()); }
  // Unregisters the least recently used evictable block and returns it; nullopt if none.
  std::optional<BlockId> evict_lru();
  // Evictable blocks from least to most recently used (tests and debugging).
  std::vector<BlockId> lru_order() const { return {lru_.begin(), lru_.end()}; }

  const Stats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t hash;
    uint64_t parent;
    std::vector<TokenId> tokens;
    bool evictable = false;
    std::list<BlockId>::iterator lru_pos;  // valid while evictable
  };

  int block_size_;
  bool enabled_;
  uint64_t root_hash_;
  std::unordered_map<uint64_t, BlockId> by_hash_;
  std::unordered_map<BlockId, Entry> by_block_;
  std::list<BlockId> lru_;  // evictable blocks, front = least recently used
  Stats stats_;
};

}  // namespace brisk
