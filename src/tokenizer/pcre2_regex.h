// A compiled PCRE2 pattern in UTF + UCP mode (Unicode \s, \w, \p{..}), standing in for the
// Oniguruma regexes of HF tokenizers. Thread-safe: match data is per call.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brisk {

class Pcre2Regex {
 public:
  // `what` names the pattern's origin (file and field) for error messages.
  Pcre2Regex(const std::string& pattern, const std::string& what);
  ~Pcre2Regex();
  Pcre2Regex(const Pcre2Regex&) = delete;
  Pcre2Regex& operator=(const Pcre2Regex&) = delete;

  // Every non-overlapping match as [begin, end) byte offsets, left to right; an empty match
  // advances by one character so the scan always terminates.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so pcre2.h stays out of headers
};

}  // namespace brisk
