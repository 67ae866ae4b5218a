// How many KV blocks to allocate, from `--kv-cache-memory` and the model's bytes per block.
//
// `--kv-cache-memory` accepts two forms:
//   a fraction of the FREE device memory (measured after weights and workspaces are loaded):
//     a bare number in (0, 1], e.g. "0.9"
//   an absolute size: a number with a binary unit, e.g. "12GiB", "12G", "512MiB", "1.5GiB".
//     G, GB and GiB all mean 2^30 bytes; M, MB and MiB mean 2^20 (units are case-insensitive;
//     GPU memory is sized in binary units, and "GB" is what people type when they mean GiB).
// A bare number above 1 ("12") is rejected rather than guessed: it names neither a fraction
// nor a unit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace brisk {

struct KvMemorySpec {
  bool is_fraction = true;
  double fraction = 0.9;   // of free device memory, when is_fraction
  uint64_t num_bytes = 0;  // when !is_fraction

  // Throws kInvalidArgument naming --kv-cache-memory on a malformed or out-of-range value.
  static KvMemorySpec parse(std::string_view text);
};

struct KvBudget {
  int64_t num_blocks = 0;
  int64_t num_tokens = 0;  // num_blocks * block_size: the token capacity of the cache
  uint64_t num_bytes = 0;  // num_blocks * bytes_per_block actually used

  // One line for start-up logs, e.g. "KV cache: 12.00 GiB, 6144 blocks x 16 = 98304 tokens".
  std::string describe(int block_size) const;
};

// Throws when the budget does not hold a single block, or when an absolute size exceeds the free
// memory, naming --kv-cache-memory and the sizes involved.
KvBudget compute_kv_budget(const KvMemorySpec& spec, uint64_t free_device_bytes,
                           uint64_t bytes_per_block, int block_size);

}  // namespace brisk
