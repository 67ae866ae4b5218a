// The token masks of a step's constrained sampling rows (structured output), each distinct mask
// kept once: rows in the same grammar state (most rows of a batch that shares a schema) have
// equal masks, and each mask is a vocabulary's worth of bits to send to the device.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace brisk {

// Sampling row rows[j] takes mask mask_index[j]: row mask_index[j] of `words`
// ([number of masks, words per mask]).
struct TokenMasks {
  std::vector<int32_t> rows;
  std::vector<int32_t> mask_index;
  std::vector<uint32_t> words;

  // From one mask per row (words row j for rows[j], hashes[j] its hash()): keeps the first of
  // equal masks and points the rows at it.
  void share_equal(int64_t num_words, const std::vector<uint64_t>& hashes);
  static uint64_t hash(std::span<const uint32_t> words);
};

}  // namespace brisk
