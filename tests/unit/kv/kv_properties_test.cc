// Properties of the KV bookkeeping over random operation sequences: sequences are admitted (with
// prefix lookups), prefilled in chunks, decoded and freed, while raw pool users allocate,
// share, register and release blocks. After every operation the invariants of DESIGN.md section 4
// are checked against an independent model of who holds which block and what it contains.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "brisk/status.h"
#include "kv/sequence_blocks.h"

namespace brisk {
namespace {

struct LiveSequence {
  std::vector<TokenId> tokens;  // prompt + generated; the first blocks.num_computed() have KV
  SequenceBlocks blocks;
};

class Harness {
 public:
  Harness(int64_t num_blocks, int block_size, bool enabled)
      : block_size_(block_size), cache_(block_size, enabled), pool_(num_blocks, block_size, cache_) {}

  void run_random_op() {
    ++now_;
    involved_.clear();
    switch (*rc::gen::inRange(0, 8)) {
      case 0: case 1: admit(); break;
      case 2: case 3: decode(); break;
      case 4: finish(); break;
      case 5: raw_allocate_or_share(); break;
      case 6: raw_release_or_register(); break;
      case 7: lookup(*random_tokens(0, 4 * block_size_)); break;
    }
    check_invariants();
  }

  // Frees everything; afterwards no block may be in use.
  void drain() {
    RC_CLASSIFY(num_prefix_hits_ > 0, "prefix hit");
    RC_CLASSIFY(num_evictions_ > 0, "raw eviction");
    RC_CLASSIFY(pool_.num_cached() > 0, "cached blocks left");
    while (!sequences_.empty()) finish();
    for (BlockId block : raw_) pool_.release(block);
    raw_.clear();
    check_invariants();
    RC_ASSERT(pool_.num_in_use() == 0);
    RC_ASSERT(pool_.num_free() + pool_.num_cached() == pool_.num_blocks());
  }

 private:
  rc::Gen<std::vector<TokenId>> random_tokens(int min_size, int max_size) const {
    // A 3-letter alphabet makes shared prefixes (and so cache hits) common.
    return rc::gen::container<std::vector<TokenId>>(*rc::gen::inRange(min_size, max_size + 1),
                                                    rc::gen::inRange<TokenId>(0, 3));
  }

  void admit() {
    auto seq = std::make_unique<LiveSequence>(
        LiveSequence{*random_tokens(1, 4 * block_size_), SequenceBlocks(pool_)});
    const int64_t num_cached = seq->blocks.match_prefix(seq->tokens);
    RC_ASSERT(num_cached % block_size_ == 0);
    RC_ASSERT(num_cached < static_cast<int64_t>(seq->tokens.size()));  // last token recomputed
    if (num_cached > 0) ++num_prefix_hits_;
    check_matched_content(seq->tokens, seq->blocks.block_table());
    if (!cache_.enabled()) RC_ASSERT(num_cached == 0);
    // Chunked prefill; running out of blocks drops the sequence, as preemption would.
    while (seq->blocks.num_computed() < static_cast<int64_t>(seq->tokens.size())) {
      const int64_t left = static_cast<int64_t>(seq->tokens.size()) - seq->blocks.num_computed();
      if (!step(*seq, *rc::gen::inRange<int64_t>(1, left + 1))) return;
    }
    sequences_.push_back(std::move(seq));
  }

  // Computes num_new more tokens of `seq`; on allocation failure frees it and returns false.
  bool step(LiveSequence& seq, int64_t num_new) {
    const size_t old_size = seq.blocks.block_table().size();
    const int64_t needed = seq.blocks.num_blocks_needed(num_new);
    const bool fits = pool_.can_allocate(needed);
    RC_ASSERT(seq.blocks.allocate_for(num_new) == fits);
    if (!fits) {
      RC_ASSERT(seq.blocks.block_table().size() == old_size);  // all or nothing
      free_sequence(seq);
      return false;
    }
    for (size_t i = old_size; i < seq.blocks.block_table().size(); ++i)
      content_.erase(seq.blocks.block_table()[i]);  // fresh block: old content is gone
    seq.blocks.commit_computed(seq.tokens, num_new);
    record_content(seq);
    return true;
  }

  void decode() {
    if (sequences_.empty()) return;
    const size_t index = *rc::gen::inRange<size_t>(0, sequences_.size());
    LiveSequence& seq = *sequences_[index];
    seq.tokens.push_back(*rc::gen::inRange<TokenId>(0, 3));
    if (!step(seq, 1)) sequences_.erase(sequences_.begin() + index);
  }

  void finish() {
    if (sequences_.empty()) return;
    const size_t index = *rc::gen::inRange<size_t>(0, sequences_.size());
    free_sequence(*sequences_[index]);
    sequences_.erase(sequences_.begin() + index);
  }

  void free_sequence(LiveSequence& seq) {
    const std::vector<BlockId> table = seq.blocks.block_table();
    seq.blocks.free_all();
    involved_.insert(involved_.end(), table.begin(), table.end());
    // Released tail first: among this sequence's newly cached blocks, later ones are older.
    const std::vector<BlockId> lru = cache_.lru_order();
    std::vector<size_t> positions;
    for (auto it = table.rbegin(); it != table.rend(); ++it) {
      if (std::count(table.begin(), table.end(), *it) != 1) continue;
      const auto pos = std::find(lru.begin(), lru.end(), *it);
      if (pos != lru.end()) positions.push_back(pos - lru.begin());
    }
    RC_ASSERT(std::is_sorted(positions.begin(), positions.end()));
  }

  void raw_allocate_or_share() {
    if (!raw_.empty() && *rc::gen::arbitrary<bool>()) {
      const BlockId block = *rc::gen::elementOf(raw_);
      pool_.add_ref(block);
      raw_.push_back(block);
      return;
    }
    const bool evicts = pool_.num_free() == 0;
    const bool available = pool_.can_allocate(1);
    const std::vector<BlockId> lru = cache_.lru_order();
    const std::optional<BlockId> block = pool_.allocate();
    RC_ASSERT(block.has_value() == available);
    if (!block) return;
    if (evicts) {  // only when nothing is free, and then the least recently used
      ++num_evictions_;
      RC_ASSERT(!lru.empty());
      RC_ASSERT(*block == lru.front());
      RC_ASSERT(!cache_.is_registered(*block));
    } else {
      RC_ASSERT(std::find(lru.begin(), lru.end(), *block) == lru.end());
    }
    content_.erase(*block);
    raw_.push_back(*block);
  }

  void raw_release_or_register() {
    if (raw_.empty()) {  // releasing a block nobody holds is an error and changes nothing
      const BlockId block = *rc::gen::inRange<BlockId>(0, static_cast<BlockId>(pool_.num_blocks()));
      if (pool_.refcount(block) == 0) {
        const int64_t num_free = pool_.num_free(), num_cached = pool_.num_cached();
        RC_ASSERT_THROWS_AS(pool_.release(block), Error);
        RC_ASSERT(pool_.num_free() == num_free && pool_.num_cached() == num_cached);
      }
      return;
    }
    const size_t index = *rc::gen::inRange<size_t>(0, raw_.size());
    const BlockId block = raw_[index];
    if (*rc::gen::arbitrary<bool>() && !cache_.is_registered(block)) {
      // Register as a prompt's first block with random content.
      const std::vector<TokenId> tokens = *random_tokens(block_size_, block_size_);
      const uint64_t hash = cache_.hash_block(cache_.root_hash(), tokens);
      const bool taken = cache_.find(hash).has_value();
      RC_ASSERT(cache_.insert(hash, cache_.root_hash(), block, tokens) ==
                (cache_.enabled() && !taken));
      content_[block] = tokens;
      return;
    }
    pool_.release(block);
    raw_.erase(raw_.begin() + index);
    involved_.push_back(block);
  }

  void lookup(const std::vector<TokenId>& tokens) {
    const PrefixMatch match = cache_.lookup(tokens);
    if (!cache_.enabled()) RC_ASSERT(match.blocks.empty());
    RC_ASSERT(match.num_tokens == static_cast<int64_t>(match.blocks.size()) * block_size_);
    check_matched_content(tokens, match.blocks);
    involved_.insert(involved_.end(), match.blocks.begin(), match.blocks.end());
  }

  // Block i of a match must hold exactly the first (i + 1) * block_size tokens.
  void check_matched_content(const std::vector<TokenId>& tokens, const std::vector<BlockId>& blocks) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto it = content_.find(blocks[i]);
      RC_ASSERT(it != content_.end());
      const size_t end = (i + 1) * block_size_;
      RC_ASSERT(end <= tokens.size());
      const std::vector<TokenId> expected(tokens.begin(), tokens.begin() + end);
      // Raw registrations only know their own block's tokens (a chain of one).
      const std::vector<TokenId>& actual = it->second;
      RC_ASSERT(std::equal(actual.rbegin(), actual.rend(), expected.rbegin()));
    }
  }

  // Full blocks are immutable: a block's recorded prefix never changes while it is held.
  void record_content(const LiveSequence& seq) {
    for (int64_t i = 0; i < seq.blocks.num_full_blocks(); ++i) {
      const std::vector<TokenId> prefix(seq.tokens.begin(), seq.tokens.begin() + (i + 1) * block_size_);
      const auto [it, inserted] = content_.emplace(seq.blocks.block_table()[i], prefix);
      if (!inserted) RC_ASSERT(std::equal(it->second.rbegin(), it->second.rend(), prefix.rbegin()));
    }
  }

  void check_invariants() {
    RC_ASSERT(pool_.num_free() + pool_.num_cached() + pool_.num_in_use() == pool_.num_blocks());
    std::map<BlockId, int32_t> holders;
    for (const auto& seq : sequences_)
      for (BlockId block : seq->blocks.block_table()) ++holders[block];
    for (BlockId block : raw_) ++holders[block];
    for (BlockId block = 0; block < pool_.num_blocks(); ++block) {
      const int32_t refcount = pool_.refcount(block);
      RC_ASSERT(refcount >= 0);
      RC_ASSERT(refcount == holders[block]);  // no leak, no double ownership
      const BlockState state = pool_.state(block);
      RC_ASSERT((state == BlockState::kInUse) == (refcount > 0));
      RC_ASSERT((state == BlockState::kCached) == cache_.is_evictable(block));
      if (state == BlockState::kFree) RC_ASSERT(!cache_.is_registered(block));
      if (state == BlockState::kCached) {
        const auto it = epochs_.find(block);
        const bool touched = std::find(involved_.begin(), involved_.end(), block) != involved_.end();
        if (it == epochs_.end() || touched) epochs_[block] = now_;
      } else {
        epochs_.erase(block);
      }
    }
    // LRU order: blocks used in earlier operations come before those used later.
    int64_t previous = 0;
    for (BlockId block : cache_.lru_order()) {
      RC_ASSERT(epochs_.at(block) >= previous);
      previous = epochs_.at(block);
    }
    if (!cache_.enabled()) RC_ASSERT(cache_.num_registered() == 0 && cache_.stats().num_hit_tokens == 0);
  }

  int block_size_;
  PrefixCache cache_;
  BlockPool pool_;
  std::vector<std::unique_ptr<LiveSequence>> sequences_;
  std::vector<BlockId> raw_;                          // one entry per reference held
  std::map<BlockId, std::vector<TokenId>> content_;   // full-block prefixes known to be in blocks
  std::map<BlockId, int64_t> epochs_;                 // cached block -> op that last used it
  std::vector<BlockId> involved_;                     // blocks released or touched by this op
  int64_t now_ = 0;
  int num_prefix_hits_ = 0, num_evictions_ = 0;  // coverage of the run
};

RC_GTEST_PROP(KvProperties, RandomOperationsKeepInvariants, ()) {
  const int64_t num_blocks = *rc::gen::inRange<int64_t>(1, 16);
  const int block_size = *rc::gen::inRange(1, 5);
  const bool enabled = *rc::gen::element(true, true, false);
  Harness harness(num_blocks, block_size, enabled);
  const int num_ops = *rc::gen::inRange(1, 80);
  for (int i = 0; i < num_ops; ++i) harness.run_random_op();
  harness.drain();
}

}  // namespace
}  // namespace brisk
