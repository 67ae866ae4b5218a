// A regular expression for the decimal integers in [lo, hi] (either bound may be absent),
// written as JSON writes them: no leading zeros, "-" only before a non-zero value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace brisk::grammar {

std::string integer_range_regex(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace brisk::grammar
