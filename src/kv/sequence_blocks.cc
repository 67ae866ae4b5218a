#include "kv/sequence_blocks.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace brisk {

SequenceBlocks::SequenceBlocks(SequenceBlocks&& other) noexcept
    : pool_(other.pool_),
      block_table_(std::exchange(other.block_table_, {})),
      block_hashes_(std::exchange(other.block_hashes_, {})),
      num_computed_(std::exchange(other.num_computed_, 0)),
      num_cached_prefix_(std::exchange(other.num_cached_prefix_, 0)) {}

SequenceBlocks& SequenceBlocks::operator=(SequenceBlocks&& other) noexcept {
  if (this != &other) {
    // The blocks held here would leak: moving onto a live sequence is a bug.
    BRISK_ASSERT(block_table_.empty());
    pool_ = other.pool_;
    block_table_ = std::exchange(other.block_table_, {});
    block_hashes_ = std::exchange(other.block_hashes_, {});
    num_computed_ = std::exchange(other.num_computed_, 0);
    num_cached_prefix_ = std::exchange(other.num_cached_prefix_, 0);
  }
  return *this;
}

int64_t SequenceBlocks::match_prefix(std::span<const TokenId> prompt) {
  BRISK_CHECK(block_table_.empty() && num_computed_ == 0,
              "sequence blocks: match_prefix on a sequence that already holds {} blocks",
              block_table_.size());
  BRISK_CHECK(!prompt.empty(), "sequence blocks: match_prefix of an empty prompt");
  // Without its last token, so the last prompt token is always computed (its logits are needed).
  PrefixMatch match = pool_->prefix_cache().lookup(prompt.first(prompt.size() - 1));
  for (BlockId block : match.blocks) pool_->add_ref(block);
  block_table_ = std::move(match.blocks);
  block_hashes_ = std::move(match.hashes);
  num_computed_ = match.num_tokens;
  num_cached_prefix_ = match.num_tokens;
  return num_cached_prefix_;
}

int64_t SequenceBlocks::num_blocks_needed(int64_t num_new_tokens) const {
  BRISK_CHECK(num_new_tokens >= 0, "sequence blocks: num_new_tokens must be >= 0, got {}",
              num_new_tokens);
  const int64_t block_size = pool_->block_size();
  const int64_t blocks = (num_computed_ + num_new_tokens + block_size - 1) / block_size;
  return std::max<int64_t>(0, blocks - static_cast<int64_t>(block_table_.size()));
}

bool SequenceBlocks::allocate_for(int64_t num_new_tokens) {
  const int64_t needed = num_blocks_needed(num_new_tokens);
  if (!pool_->can_allocate(needed)) return false;
  for (int64_t i = 0; i < needed; ++i) {
    const std::optional<BlockId> block = pool_->allocate();
    BRISK_ASSERT(block.has_value());  // can_allocate promised it
    block_table_.push_back(*block);
  }
  return true;
}

void SequenceBlocks::commit_computed(std::span<const TokenId> tokens, int64_t num_new_tokens) {
  const int64_t block_size = pool_->block_size();
  const int64_t num_computed = num_computed_ + num_new_tokens;
  BRISK_CHECK(num_new_tokens >= 0, "sequence blocks: num_new_tokens must be >= 0, got {}",
              num_new_tokens);
  BRISK_CHECK(num_computed <= static_cast<int64_t>(block_table_.size()) * block_size,
              "sequence blocks: {} computed tokens do not fit in {} blocks of {} (allocate_for "
              "first)", num_computed, block_table_.size(), block_size);
  num_computed_ = num_computed;
  PrefixCache& cache = pool_->prefix_cache();
  if (!cache.enabled()) return;  // hashes only serve the cache
  const int64_t num_known = std::min<int64_t>(num_computed, static_cast<int64_t>(tokens.size()));
  for (int64_t i = static_cast<int64_t>(block_hashes_.size()); i < num_known / block_size; ++i) {
    const uint64_t parent = i == 0 ? cache.root_hash() : block_hashes_[i - 1];
    const auto block_tokens = tokens.subspan(i * block_size, block_size);
    const uint64_t hash = cache.hash_block(parent, block_tokens);
    cache.insert(hash, parent, block_table_[i], block_tokens);
    block_hashes_.push_back(hash);
  }
}

void SequenceBlocks::free_all() {
  for (auto it = block_table_.rbegin(); it != block_table_.rend(); ++it) pool_->release(*it);
  block_table_.clear();
  block_hashes_.clear();
  num_computed_ = 0;
  num_cached_prefix_ = 0;
}

}  // namespace brisk
