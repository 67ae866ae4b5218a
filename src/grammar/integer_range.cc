#include "grammar/integer_range.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace brisk::grammar {

namespace {

std::string any_digits(size_t count) {
  return count == 0 ? "" : count == 1 ? "\\d" : fmt::format("\\d{{{}}}", count);
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string(1, lo);
  if (lo == '0' && hi == '9') return "\\d";
  return fmt::format("[{}-{}]", lo, hi);
}

// Digit strings of one width between lo and hi (leading zeros allowed), as alternatives.
void fixed_width(const std::string& lo, const std::string& hi, const std::string& prefix,
                 std::vector<std::string>& out) {
  if (lo.empty()) {
    out.push_back(prefix);
    return;
  }
  size_t rest = lo.size() - 1;
  bool lo_zeros = lo.find_first_not_of('0', 1) == std::string::npos;
  bool hi_nines = hi.find_first_not_of('9', 1) == std::string::npos;
  if (lo_zeros && hi_nines) {
    out.push_back(prefix + digit_class(lo[0], hi[0]) + any_digits(rest));
    return;
  }
  if (lo[0] == hi[0]) {
    fixed_width(lo.substr(1), hi.substr(1), prefix + lo[0], out);
    return;
  }
  fixed_width(lo.substr(1), std::string(rest, '9'), prefix + lo[0], out);
  if (hi[0] - lo[0] > 1) {
    out.push_back(prefix + digit_class(char(lo[0] + 1), char(hi[0] - 1)) + any_digits(rest));
  }
  fixed_width(std::string(rest, '0'), hi.substr(1), prefix + hi[0], out);
}

// Positive integers in [lo, hi] (hi absent: unbounded), lo >= 1.
void positive_range(uint64_t lo, std::optional<uint64_t> hi, const std::string& prefix, std::vector<std::string>& out) {
  std::string lo_text = std::to_string(lo);
  size_t width = lo_text.size();
  while (true) {
    uint64_t width_max = 9;
    for (size_t i = 1; i < width; ++i) width_max = width_max * 10 + 9;
    if (width >= 19) width_max = UINT64_MAX;
    if (!hi && width >= lo_text.size()) {
      fixed_width(lo_text, std::string(width, '9'), prefix, out);
      out.push_back(prefix + fmt::format("[1-9]\\d{{{},}}", width));
      return;
    }
    uint64_t top = hi && *hi < width_max ? *hi : width_max;
    fixed_width(lo_text, std::to_string(top), prefix, out);
    if (top == *hi) return;
    ++width;
    lo_text = "1" + std::string(width - 1, '0');
  }
}

}  // namespace

std::string integer_range_regex(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> out;
  if (!lo || *lo < 0) {
    uint64_t magnitude_lo = hi && *hi < 0 ? uint64_t(-*hi) : 1;
    std::optional<uint64_t> magnitude_hi;
    if (lo) magnitude_hi = uint64_t(-*lo);
    positive_range(magnitude_lo, magnitude_hi, "-", out);
  }
  if ((!lo || *lo <= 0) && (!hi || *hi >= 0)) out.push_back("0");
  if (!hi || *hi >= 1) {
    uint64_t positive_lo = lo && *lo > 1 ? uint64_t(*lo) : 1;
    std::optional<uint64_t> positive_hi;
    if (hi) positive_hi = uint64_t(*hi);
    positive_range(positive_lo, positive_hi, "", out);
  }
  std::string regex;
  for (const std::string& alt : out) regex += (regex.empty() ? "(" : "|") + alt;
  return regex + ")";
}

namespace {

// The integers in [lo, hi] (hi absent: unbounded), lo >= 0, or "" when there are none.
std::string magnitudes(int64_t lo, std::optional<int64_t> hi) {
  if (hi && *hi < lo) return "";
  return integer_range_regex(lo, hi);
}

}  // namespace

std::string number_range_regex(std::optional<int64_t> lo, bool exclusive_lo, std::optional<int64_t> hi,
                               bool exclusive_hi) {
  // Fraction digits that are not all zero: the first non-zero digit at position p.
  std::string nonzero_fraction = "\\.(";
  for (int p = 0; p < 6; ++p) {
    nonzero_fraction += fmt::format("{}{}[1-9]\\d{{0,{}}}", p ? "|" : "", p ? fmt::format("0{{{}}}", p) : "", 5 - p);
  }
  nonzero_fraction += ")";
  const std::string zero_fraction = "(\\.0{1,6})?";
  // Integer values: within the bounds with exclusivity applied.
  std::optional<int64_t> int_lo = lo, int_hi = hi;
  if (lo && exclusive_lo) int_lo = *lo + 1;
  if (hi && exclusive_hi) int_hi = *hi - 1;
  std::vector<std::string> parts;
  auto add = [&](const std::string& sign, const std::string& ints, const std::string& fraction) {
    if (!ints.empty()) parts.push_back(sign + ints + fraction);
  };
  // x = I or I.000 (I >= 0), and I.f with f > 0: then lo <= I and I + 1 <= hi.
  if (!int_hi || *int_hi >= 0) add("", magnitudes(std::max<int64_t>(int_lo.value_or(0), 0), int_hi), zero_fraction);
  if (!hi || *hi >= 1) {
    std::optional<int64_t> top;
    if (hi) top = *hi - 1;
    add("", magnitudes(std::max<int64_t>(lo.value_or(0), 0), top), nonzero_fraction);
  }
  // x = -I (I >= 1), and -(I.f) with f > 0: then lo <= -(I + 1) and -I <= hi.
  if (!int_lo || *int_lo <= -1) {
    std::optional<int64_t> top;
    if (int_lo) top = -*int_lo;
    add("-", magnitudes(std::max<int64_t>(int_hi ? -*int_hi : 1, 1), top), zero_fraction);
  }
  if (!lo || *lo <= -1) {
    std::optional<int64_t> top;
    if (lo) top = -*lo - 1;
    add("-", magnitudes(std::max<int64_t>(hi ? -*hi : 0, 0), top), nonzero_fraction);
  }
  std::string regex;
  for (const std::string& part : parts) regex += (regex.empty() ? "(" : "|") + part;
  return regex.empty() ? "" : regex + ")";
}

}  // namespace brisk::grammar
