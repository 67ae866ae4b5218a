// A regular expression for the decimal integers in [lo, hi] (either bound may be absent),
// written as JSON writes them: no leading zeros, "-" only before a non-zero value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace brisk::grammar {

std::string integer_range_regex(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A regular expression for the JSON numbers with at most 6 fraction digits and no exponent
// whose value lies within integer bounds (xgrammar's number ranges); "-0" is not written.
// Either bound may be absent; `exclusive_*` turns >= into > and <= into <.
std::string number_range_regex(std::optional<int64_t> lo, bool exclusive_lo, std::optional<int64_t> hi,
                               bool exclusive_hi);

}  // namespace brisk::grammar
