#include "kv/prefix_cache.h"

#include <algorithm>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack: no heap allocation per block hash
#include <xxhash.h>

#include "core/error.h"

namespace brisk {
namespace {

// Arbitrary fixed constant: the root of every hash chain, salted with extra_key.
constexpr uint64_t kRootSeed = 0x6272697368b10c5ULL;

}  // namespace

PrefixCache::PrefixCache(int block_size, bool enabled, uint64_t extra_key)
    : block_size_(block_size), enabled_(enabled) {
  BRISK_CHECK(block_size > 0, "prefix cache: block_size must be positive, got {}", block_size);
  const uint64_t root_input[2] = {kRootSeed, extra_key};
  root_hash_ = XXH3_64bits(root_input, sizeof(root_input));
}

uint64_t PrefixCache::hash_block(uint64_t parent, std::span<const TokenId> tokens) const {
  BRISK_CHECK(static_cast<int64_t>(tokens.size()) == block_size_,
              "prefix cache: hash_block needs exactly block_size={} tokens, got {}", block_size_,
              tokens.size());
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, &parent, sizeof(parent));
  XXH3_64bits_update(&state, tokens.data(), tokens.size_bytes());
  return XXH3_64bits_digest(&state);
}

PrefixMatch PrefixCache::lookup(std::span<const TokenId> tokens) {
  ++stats_.num_lookups;
  stats_.num_queried_tokens += static_cast<int64_t>(tokens.size());
  PrefixMatch match;
  if (!enabled_) return match;
  const size_t num_full = tokens.size() / block_size_;
  uint64_t parent = root_hash_;
  for (size_t i = 0; i < num_full; ++i) {
    const auto block_tokens = tokens.subspan(i * block_size_, block_size_);
    const uint64_t hash = hash_block(parent, block_tokens);
    const auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) break;
    const Entry& entry = by_block_.at(it->second);
    // A hash hit with different content is a collision: treat it as a miss.
    if (entry.parent != parent || !std::ranges::equal(entry.tokens, block_tokens)) break;
    match.blocks.push_back(it->second);
    match.hashes.push_back(hash);
    parent = hash;
  }
  // Touch tail first so the head ends most recently used: evicting a head block would orphan
  // every block after it in the chain, so heads should outlive their tails.
  for (auto it = match.blocks.rbegin(); it != match.blocks.rend(); ++it) {
    Entry& entry = by_block_.at(*it);
    if (entry.evictable) lru_.splice(lru_.end(), lru_, entry.lru_pos);
  }
  match.num_tokens = static_cast<int64_t>(match.blocks.size()) * block_size_;
  stats_.num_hit_blocks += static_cast<int64_t>(match.blocks.size());
  stats_.num_hit_tokens += match.num_tokens;
  return match;
}

bool PrefixCache::insert(uint64_t hash, uint64_t parent, BlockId block,
                         std::span<const TokenId> tokens) {
  BRISK_CHECK(static_cast<int64_t>(tokens.size()) == block_size_,
              "prefix cache: insert of block {} needs exactly block_size={} tokens, got {}", block,
              block_size_, tokens.size());
  if (!enabled_) return false;
  if (const auto it = by_block_.find(block); it != by_block_.end()) {
    // Registering the same content twice is harmless; a block holding two contents is a bug.
    BRISK_CHECK(it->second.hash == hash,
                "prefix cache: block {} is already registered under another hash", block);
    return true;
  }
  if (by_hash_.contains(hash)) return false;
  by_hash_.emplace(hash, block);
  by_block_.emplace(block, Entry{hash, parent, {tokens.begin(), tokens.end()}, false, {}});
  return true;
}

std::optional<BlockId> PrefixCache::find(uint64_t hash) const {
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

bool PrefixCache::mark_evictable(BlockId block) {
  const auto it = by_block_.find(block);
  if (it == by_block_.end()) return false;
  BRISK_ASSERT(!it->second.evictable);
  it->second.evictable = true;
  it->second.lru_pos = lru_.insert(lru_.end(), block);
  return true;
}

void PrefixCache::mark_in_use(BlockId block) {
  const auto it = by_block_.find(block);
  BRISK_ASSERT(it != by_block_.end() && it->second.evictable);
  lru_.erase(it->second.lru_pos);
  it->second.evictable = false;
}

bool PrefixCache::is_evictable(BlockId block) const {
  const auto it = by_block_.find(block);
  return it != by_block_.end() && it->second.evictable;
}

std::optional<BlockId> PrefixCache::evict_lru() {
  if (lru_.empty()) return std::nullopt;
  const BlockId block = lru_.front();
  lru_.pop_front();
  const auto it = by_block_.find(block);
  by_hash_.erase(it->second.hash);
  by_block_.erase(it);
  return block;
}

}  // namespace brisk
