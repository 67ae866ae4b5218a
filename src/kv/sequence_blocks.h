// One sequence's KV blocks: its block table and how many of its tokens have KV in them. The
// scheduler keeps one per running sequence and calls, in order:
//   match_prefix(prompt)       at admission: reuse cached full blocks of the prompt's prefix
//   allocate_for(n)            before a step that computes n more tokens (false: preempt someone)
//   commit_computed(tokens, n) after that step: n more tokens computed; registers full blocks
//   free_all()                 when finished, cancelled or preempted (recompute later)
//
// Parallel samples (n > 1) share the prompt's full blocks through the prefix cache: the engine
// starts samples 1..n-1 once sample 0 has computed the prompt, and their match_prefix() takes
// its cached blocks. No copy-on-write is needed: a sequence only ever writes KV at positions
// >= num_computed(), i.e. into its last, partial block or into new ones, so full blocks are
// immutable and safe to share by refcount, and a partial block is never shared.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_pool.h"

namespace brisk {

class SequenceBlocks {
 public:
  explicit SequenceBlocks(BlockPool& pool) : pool_(&pool) {}
  // Move-only: a copy would own the same blocks without holding references to them.
  SequenceBlocks(SequenceBlocks&& other) noexcept;
  SequenceBlocks& operator=(SequenceBlocks&& other) noexcept;
  SequenceBlocks(const SequenceBlocks&) = delete;
  SequenceBlocks& operator=(const SequenceBlocks&) = delete;
  // Blocks are not released here: free_all() must be called (the engine decides when, and a
  // throwing release must not happen in a destructor). Tests check that nothing leaks.
  ~SequenceBlocks() = default;

  // At admission, on an empty sequence: takes a reference on the longest cached run of full
  // blocks of `prompt` and starts computing after it. The last prompt token is never taken from
  // the cache, so the model still produces its logits. Returns num_cached_prefix().
  int64_t match_prefix(std::span<const TokenId> prompt);

  // New blocks needed to hold num_new_tokens more tokens after the computed ones.
  int64_t num_blocks_needed(int64_t num_new_tokens) const;
  // Makes room for num_new_tokens more tokens. All or nothing: false, allocating nothing, when
  // the pool cannot provide every block.
  bool allocate_for(int64_t num_new_tokens);

  // After a step computed (or queued the computation of) KV for num_new_tokens more tokens.
  // `tokens` are the sequence's tokens known so far (prompt + generated), which may end before
  // num_computed() + num_new_tokens when the last ones are still being sampled. Every full block
  // whose tokens are all known is hashed (continuing the chain) and registered in the prefix
  // cache; call again with num_new_tokens = 0 once more tokens are known.
  void commit_computed(std::span<const TokenId> tokens, int64_t num_new_tokens);

  // Releases every block (tail first, so the chain's head stays cached longest) and resets the
  // sequence to empty. Idempotent.
  void free_all();

  const std::vector<BlockId>& block_table() const { return block_table_; }
  int64_t num_computed() const { return num_computed_; }
  int64_t num_cached_prefix() const { return num_cached_prefix_; }
  int64_t num_full_blocks() const { return num_computed_ / pool_->block_size(); }
  // Chain hash of each computed full block (empty when the prefix cache is disabled).
  const std::vector<uint64_t>& block_hashes() const { return block_hashes_; }

 private:
  BlockPool* pool_;
  std::vector<BlockId> block_table_;
  std::vector<uint64_t> block_hashes_;
  int64_t num_computed_ = 0;
  int64_t num_cached_prefix_ = 0;
};

}  // namespace brisk
