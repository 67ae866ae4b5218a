#include "kv/kv_budget.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kv/prefix_cache.h"

namespace brisk {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

std::string lower(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

[[noreturn]] void bad_value(std::string_view text, std::string_view why) {
  throw_error(ErrorCode::kInvalidArgument,
              "--kv-cache-memory '{}': {}; expected a fraction of free device memory in (0, 1] "
              "such as '0.9', or a size with a unit such as '12GiB', '12G' or '512MiB'",
              text, why);
}

}  // namespace

KvMemorySpec KvMemorySpec::parse(std::string_view text) {
  const std::string_view value = trim(text);
  double number = 0;
  // Only plain decimal digits: from_chars alone would also accept "inf", "nan" and hex floats.
  if (value.empty() || !(std::isdigit(static_cast<unsigned char>(value.front())) || value.front() == '.'))
    bad_value(text, "not a number");
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number,
                                         std::chars_format::fixed);
  if (ec != std::errc() || !std::isfinite(number)) bad_value(text, "not a number");
  const std::string unit = lower(trim(std::string_view(end, value.data() + value.size())));

  KvMemorySpec spec;
  if (unit.empty()) {
    if (number <= 0 || number > 1) bad_value(text, "a number without a unit must be a fraction in (0, 1]");
    spec.is_fraction = true;
    spec.fraction = number;
    return spec;
  }
  double scale = 0;
  if (unit == "g" || unit == "gb" || unit == "gib") scale = kGiB;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = kMiB;
  else bad_value(text, "unknown unit '" + unit + "'");
  const double num_bytes = number * scale;
  if (num_bytes < 1) bad_value(text, "the size must be positive");
  if (num_bytes >= 0x1p63) bad_value(text, "the size is too large");
  spec.is_fraction = false;
  spec.num_bytes = static_cast<uint64_t>(num_bytes);
  return spec;
}

std::string KvBudget::describe(int block_size) const {
  return fmt::format("KV cache: {:.2f} GiB, {} blocks x {} = {} tokens",
                     static_cast<double>(num_bytes) / kGiB, num_blocks, block_size, num_tokens);
}

KvBudget compute_kv_budget(const KvMemorySpec& spec, uint64_t free_device_bytes,
                           uint64_t bytes_per_block, int block_size) {
  BRISK_CHECK(bytes_per_block > 0, "kv budget: bytes_per_block must be positive");
  BRISK_CHECK(block_size > 0, "kv budget: block_size must be positive, got {}", block_size);
  uint64_t budget_bytes = 0;
  if (spec.is_fraction) {
    BRISK_CHECK(spec.fraction > 0 && spec.fraction <= 1,
                "--kv-cache-memory: fraction must be in (0, 1], got {}", spec.fraction);
    budget_bytes = static_cast<uint64_t>(spec.fraction * static_cast<double>(free_device_bytes));
  } else {
    BRISK_CHECK(spec.num_bytes <= free_device_bytes,
                "--kv-cache-memory asks for {:.2f} GiB but only {:.2f} GiB of device memory is free",
                static_cast<double>(spec.num_bytes) / kGiB,
                static_cast<double>(free_device_bytes) / kGiB);
    budget_bytes = spec.num_bytes;
  }
  const uint64_t num_blocks = budget_bytes / bytes_per_block;
  if (num_blocks == 0)
    throw_error(ErrorCode::kOutOfMemory,
                "--kv-cache-memory gives {} bytes, less than one KV block ({} bytes for {} tokens); "
                "free device memory is {:.2f} GiB",
                budget_bytes, bytes_per_block, block_size,
                static_cast<double>(free_device_bytes) / kGiB);
  // Block ids are int32 on the device (block tables); no real model comes near this.
  BRISK_CHECK(num_blocks <= static_cast<uint64_t>(std::numeric_limits<BlockId>::max()),
              "--kv-cache-memory gives {} KV blocks, more than block ids can address", num_blocks);
  KvBudget budget;
  budget.num_blocks = static_cast<int64_t>(num_blocks);
  budget.num_tokens = budget.num_blocks * block_size;
  budget.num_bytes = num_blocks * bytes_per_block;
  return budget;
}

}  // namespace brisk
