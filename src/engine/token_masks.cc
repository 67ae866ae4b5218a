#include "engine/token_masks.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"

namespace brisk {

uint64_t TokenMasks::hash(std::span<const uint32_t> words) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (uint32_t w : words) h = (h ^ w) * 0x100000001B3ull;
  return h;
}

void TokenMasks::share_equal(int64_t num_words, const std::vector<uint64_t>& hashes) {
  const size_t num_rows = rows.size();
  BRISK_CHECK(hashes.size() == num_rows && words.size() == num_rows * static_cast<size_t>(num_words),
              "token masks: {} rows need {} hashes and {} words, got {} and {}", num_rows, num_rows,
              num_rows * num_words, hashes.size(), words.size());
  std::unordered_multimap<uint64_t, int32_t> kept;  // hash -> kept mask
  mask_index.assign(num_rows, 0);
  int32_t num_kept = 0;
  for (size_t j = 0; j < num_rows; ++j) {
    const uint32_t* row = words.data() + j * num_words;
    int32_t found = -1;
    for (auto [it, end] = kept.equal_range(hashes[j]); it != end && found < 0; ++it)
      if (std::equal(row, row + num_words, words.data() + it->second * num_words)) found = it->second;
    if (found < 0) {  // rows before j were kept at most once each: the copy moves left or stays
      found = num_kept++;
      if (static_cast<size_t>(found) != j) std::copy(row, row + num_words, words.data() + found * num_words);
      kept.emplace(hashes[j], found);
    }
    mask_index[j] = found;
  }
  words.resize(static_cast<size_t>(num_kept) * num_words);
}

}  // namespace brisk
